"""Request and response bodies are checked against the frame and the schema before kio reads them.

Kafka's generated readers (``generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java``)
refuse an array longer than the bytes remaining ("Tried to allocate a collection of size N, but
there are only M bytes remaining"), a null in a field that is not nullable ("non-nullable field X
was serialized as null") and a string longer than 0x7fff ("string field X had invalid length N");
``clients/src/main/java/org/apache/kafka/common/requests/RequestContext.java`` turns any of them
into an ``InvalidRequestException``. Here the same refusals come from :mod:`reference_impl.protocol.bounds`
as :class:`MalformedRequestError` naming the field path, for every kind of length: legacy and
compact arrays, strings and bytes, nested structs, nullable structs and tagged fields.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader

from reference_impl import defects
from reference_impl.protocol import bounds, codec
from reference_impl.protocol.apis import (
    request_class,
    response_class,
    response_header_version,
)
from reference_impl.tests.kio_classes import EVERY_CLASS

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    """A request frame (without its size prefix): header v1, or v2 with an empty tag section."""
    header = struct.pack(">hhi", api_key, version, 7) + _I16.pack(-1)
    if request_class(api_key, version).__flexible__:
        header += b"\x00"
    return header + body


def _decoded(api_key: int, version: int, body: bytes) -> Any:
    """The request body as the broker decodes it."""
    return codec.decode_request(_frame(api_key, version, body))[1]


def _refused(api_key: int, version: int, body: bytes) -> str:
    """The broker's refusal of this body (for bodies kio could read without a huge allocation)."""
    with pytest.raises(codec.MalformedRequestError) as info:
        codec.decode_request(_frame(api_key, version, body))
    return str(info.value)


def _scan_refusal(api_key: int, version: int, body: bytes) -> str:
    """The check's own refusal: length bombs are tried on the scanner alone, so that a regression in
    how the codec uses it aborts the subprocess of ``integration/test_hostile_requests.py``, not pytest."""
    start = len(_frame(api_key, version, b""))
    with pytest.raises(bounds.BodyShapeError) as info:
        bounds.check_body(request_class(api_key, version), _frame(api_key, version, body), start, [])
    return str(info.value)


def _compact_str(text: bytes) -> bytes:
    return bounds.uvarint_bytes(len(text) + 1) + text


# -- every kind of length past the end ------------------------------------------------------------


def test_compact_array_length_past_the_end_is_refused_naming_the_field() -> None:
    """The 17-byte ListGroups v4 of issue 17: a compact array of 2^32-2 strings in a 6-byte body."""
    message = _scan_refusal(16, 4, b"\xff\xff\xff\xff\x0f\x00")
    assert "ListGroupsRequest.states_filter" in message
    assert "4294967294 items" in message


def test_legacy_array_length_past_the_end_is_refused() -> None:
    message = _scan_refusal(19, 2, _I32.pack(0x7FFFFFFF) + _I32.pack(1000))  # CreateTopics v2 topics
    assert "CreateTopicsRequest.topics" in message and "2147483647 items" in message


def test_legacy_string_length_past_the_end_is_refused_with_its_path() -> None:
    body = _I32.pack(1) + _I16.pack(0x7FFF) + b"ab"  # Metadata v0, topics[0].name
    assert "MetadataRequest.topics[0].name: length 32767 runs past the end" in _scan_refusal(3, 0, body)


def test_compact_string_length_past_the_end_is_refused_with_its_path() -> None:
    topic = b"\x00" * 16 + b"\xc8\x01" + b"ab" + b"\x00"  # Metadata v12 topic: id, name, tags
    body = b"\x02" + topic + b"\x00\x00\x00"
    assert "MetadataRequest.topics[0].name: length 199 runs past the end" in _scan_refusal(3, 12, body)


def test_compact_string_longer_than_kafka_allows_is_refused() -> None:
    name = b"a" * 0x8000
    body = b"\x02" + b"\x00" * 16 + _compact_str(name) + b"\x00" + b"\x00\x00\x00"
    assert "string field had invalid length 32768" in _scan_refusal(3, 12, body)


def test_legacy_and_compact_bytes_past_the_end_are_refused() -> None:
    legacy = _I32.pack(0x7FFFFFFF)
    assert "SaslAuthenticateRequest.auth_bytes: length 2147483647" in _scan_refusal(36, 1, legacy)
    compact = b"\xff\xff\xff\xff\x0f" + b"\x00"
    assert "SaslAuthenticateRequest.auth_bytes: length 4294967294" in _scan_refusal(36, 2, compact)


def test_records_length_in_a_nested_struct_is_refused_with_the_whole_path() -> None:
    topic = _compact_str(b"t") + b"\x02" + _I32.pack(0) + b"\xff\xff\x7f" + b"\x00" + b"\x00"
    body = b"\x00" + _I16.pack(-1) + _I32.pack(1000) + b"\x02" + topic + b"\x00"  # Produce v9
    path = "ProduceRequest.topic_data[0].partition_data[0].records"
    assert f"{path}: length 2097150" in _scan_refusal(0, 9, body)


def test_truncated_fixed_fields_are_refused() -> None:
    assert "needs 4 more bytes" in _scan_refusal(3, 0, b"\x00\x00")


def test_varint_longer_than_five_bytes_is_refused() -> None:
    assert "varint longer than 5 bytes" in _scan_refusal(16, 4, b"\x80\x80\x80\x80\x80\x01\x00")


# -- nulls ------------------------------------------------------------------------------------------


def test_null_in_a_non_nullable_array_is_refused() -> None:
    """kio reads a null array as None whatever the schema says; handlers then iterate it."""
    assert "non-nullable field was serialized as null" in _refused(16, 4, b"\x00\x00")  # compact
    assert "MetadataRequest.topics: non-nullable" in _refused(3, 0, _I32.pack(-1))  # legacy, v0


def test_null_in_a_nullable_array_decodes_as_none() -> None:
    """MetadataRequest.json: topics is nullable from v1 ("null for all topics")."""
    assert _decoded(3, 4, _I32.pack(-1) + b"\x01").topics is None


def test_legacy_length_below_minus_one_is_refused() -> None:
    assert "negative length -2" in _refused(3, 4, _I32.pack(-2) + b"\x01")


def test_null_in_a_non_nullable_string_is_refused() -> None:
    assert "MetadataRequest.topics[0].name: non-nullable" in _refused(3, 0, _I32.pack(1) + _I16.pack(-1))


def test_nullable_struct_marker_other_than_minus_one_or_present_is_refused() -> None:
    """KIP-893 markers: Kafka reads any negative as null, kio only -1; a -2 is refused rather than read
    two ways."""
    body_head = b"\x01" + _I32.pack(5)  # DescribeTopicPartitions v0: no topics, limit 5, then cursor
    assert "cursor: nullable struct marker -2" in _refused(75, 0, body_head + b"\xfe" + b"\x00")
    assert _decoded(75, 0, body_head + b"\xff" + b"\x00").cursor is None


# -- tagged fields ----------------------------------------------------------------------------------


def _fetch_v12(tags: bytes) -> bytes:
    fixed = _I32.pack(-1) + _I32.pack(500) + _I32.pack(1) + _I32.pack(1 << 20) + b"\x00"
    return fixed + _I32.pack(0) + _I32.pack(-1) + b"\x01" + b"\x01" + _compact_str(b"") + tags


def test_tagged_field_size_past_the_end_is_refused() -> None:
    assert "_tagged_fields[0]: length 100 runs past the end" in _refused(1, 12, _fetch_v12(b"\x01\x00\x64ab"))


def test_known_tagged_field_whose_size_differs_from_its_value_is_refused() -> None:
    """kio reads a known tag's value without looking at its declared size, so a size that disagrees
    would have kio walk bytes the check never saw."""
    value = _compact_str(b"abc")
    message = _refused(1, 12, _fetch_v12(b"\x01\x00" + bytes([len(value) + 2]) + value + b"zz"))
    assert "FetchRequest.cluster_id: tagged field declares 6 bytes but its value takes 4" in message


def test_known_tagged_field_decodes() -> None:
    value = _compact_str(b"abc")
    assert _decoded(1, 12, _fetch_v12(b"\x01\x00" + bytes([len(value)]) + value)).cluster_id == "abc"


def test_unknown_tagged_fields_are_skipped_at_any_depth() -> None:
    """KIP-482: a reader skips the tagged fields it does not know, in the body and in nested structs."""
    partition = _I32.pack(0) + _I32.pack(-1) + struct.pack(">q", 5) + _I32.pack(-1) + struct.pack(">q", -1)
    partition += _I32.pack(1000) + b"\x01" + b"\x63\x02zz"  # one unknown tag (99) in the partition
    topic = _compact_str(b"t") + b"\x02" + partition + b"\x00"
    fixed = _I32.pack(-1) + _I32.pack(500) + _I32.pack(1) + _I32.pack(1 << 20) + b"\x00"
    body = fixed + _I32.pack(0) + _I32.pack(-1) + b"\x02" + topic + b"\x01" + _compact_str(b"")
    body += b"\x02" + b"\x64\x01q" + b"\x00" + bytes([4]) + _compact_str(b"abc")  # tag 100 unknown, tag 0
    decoded = _decoded(1, 12, body)
    assert decoded.cluster_id == "abc"
    assert decoded.topics[0].partitions[0].fetch_offset == 5


def test_unknown_tag_inside_a_known_tagged_value_is_refused() -> None:
    """Cutting it out would change the size of the enclosing value; the second check refuses it."""
    replica_state = _I32.pack(1) + struct.pack(">q", 0) + b"\x01" + b"\x05\x01z"  # ReplicaState, tag 5
    fixed = _I32.pack(500) + _I32.pack(1) + _I32.pack(1 << 20) + b"\x00" + _I32.pack(0) + _I32.pack(-1)
    body = fixed + b"\x01\x01" + _compact_str(b"") + b"\x01" + b"\x01" + bytes([len(replica_state)])
    message = _refused(1, 15, body + replica_state)
    assert "FetchRequest" in message and "tagged" in message
    trimmed = replica_state[:-4] + b"\x00"  # the same request without the unknown tag is served
    body = fixed + b"\x01\x01" + _compact_str(b"") + b"\x01" + b"\x01" + bytes([len(trimmed)]) + trimmed
    assert _decoded(1, 15, body).replica_state.replica_id == 1


# -- valid bodies of every API and version decode as before ---------------------------------------



@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_valid_body_of_every_api_and_version_decodes_identically(data: st.DataObject) -> None:
    """Any entity kio can write passes the check, which ends exactly where kio's reader ends, and the
    codec decodes it to the same entity (requests with a header, responses through decode_response)."""
    key, version, direction = data.draw(st.sampled_from(EVERY_CLASS), label="api")
    cls: Any = request_class(key, version) if direction == "request" else response_class(key, version)
    entity = data.draw(st.from_type(cls), label="entity")
    body = codec.encode_body(entity)
    assert bounds.check_body(cls, body, 0, []) == len(body)
    try:
        kio_alone = entity_reader(cls)(body, 0)[0]
    except ValueError:  # kio writes some i64 durations it cannot read back: not a length question
        assume(False)
    assert kio_alone == entity
    decoded: Any
    if direction == "request":
        decoded = _decoded(key, version, body)
    else:
        head = b"\x00\x00\x00\x09" + (b"\x00" if response_header_version(key, version) else b"")
        _corr, decoded = codec.decode_response(key, version, head + body, cls)
    assert decoded == entity


def test_every_entity_class_gets_a_scanner() -> None:
    """One mechanism for all: a scanner is generated for every request and response class kio has."""
    for key, version, direction in EVERY_CLASS:
        cls = request_class(key, version) if direction == "request" else response_class(key, version)
        assert callable(bounds.scanner(cls))


# -- the seeded defect ----------------------------------------------------------------


def test_seeded_defect_hands_a_null_array_to_the_handlers() -> None:
    """With UNBOUNDED_DECODE on, the old behaviour is back: kio's None for a non-nullable array."""
    frame = _frame(16, 4, b"\x00\x00")
    with defects.seeded(defects.UNBOUNDED_DECODE):
        body: Any = codec.decode_request(frame)[1]
    assert body.states_filter is None
    with pytest.raises(codec.MalformedRequestError):
        codec.decode_request(frame)
