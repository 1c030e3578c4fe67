"""The broker's protocol boundary: ApiVersions truthfulness and bad input handling."""

from __future__ import annotations

import struct

import pytest

from reference_impl.core.handlers import HANDLERS
from reference_impl.core.kraft.roles import CONTROLLER_ONLY_APIS
from reference_impl.protocol.apis import schema_versions
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request


def test_api_versions_lists_exactly_the_registered_handlers() -> None:
    """KIP-511 / protocol guide: ApiVersions advertises what the broker serves on this listener,
    nothing more: a client listener every handler but the controller listener's own APIs
    (``ApiMessageType.ListenerType``)."""
    h = BrokerHarness()
    served = {key: hd for key, hd in HANDLERS.items() if key not in CONTROLLER_ONLY_APIS}
    for version in schema_versions(18):
        response = h.call(request(18, version, client_software_name="t", client_software_version="1"))
        assert response.error_code == ErrorCode.none
        advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert advertised == {key: (hd.min_version, hd.max_version) for key, hd in served.items()}


def test_every_advertised_version_answers() -> None:
    """ApiVersions tells the truth: a minimal request at each advertised version gets an answer."""
    h = BrokerHarness()
    cid = h.connect()
    for version in range(HANDLERS[3].min_version, HANDLERS[3].max_version + 1):
        topics: list[object] | None = None if version >= 1 else []
        response = h.call(
            request(
                3,
                version,
                topics=topics,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
                include_cluster_authorized_operations=False,
            ),
            cid,
        )
        assert [b.node_id for b in response.brokers] == [1]
    assert cid not in h.closed


def _raw_request(api_key: int, version: int, correlation_id: int, body: bytes = b"") -> bytes:
    payload = struct.pack(">hhi", api_key, version, correlation_id) + struct.pack(">h", -1) + body
    return struct.pack(">i", len(payload)) + payload


def test_api_versions_at_an_unknown_version_answers_v0_unsupported() -> None:
    """Kafka answers an ApiVersions it cannot parse with a v0 body and UNSUPPORTED_VERSION (KIP-511)."""
    h = BrokerHarness()
    cid = h.connect()
    h.send_frame(cid, _raw_request(18, 999, 42))
    frame = h.responses[cid].pop(0)
    corr, error = struct.unpack_from(">ih", frame)
    assert (corr, error) == (42, int(ErrorCode.unsupported_version))
    assert cid not in h.closed


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (_raw_request(9999, 0, 1), "unknown api key"),
        (_raw_request(3, 999, 1), "not supported"),
        (struct.pack(">i", 3) + b"\x00\x03\x00", "malformed"),
        (_raw_request(3, 12, 1, b"\xff\xff\xff\xff\xff\xff"), "malformed"),
    ],
)
def test_bad_requests_close_only_their_connection(frame: bytes, reason: str) -> None:
    """An unknown api key, an unknown version or garbage closes that connection with a logged
    reason; the broker keeps serving its other connections."""
    h = BrokerHarness()
    bad, good = h.connect(), h.connect()
    h.send_frame(bad, frame)
    assert reason in h.closed[bad]
    response = h.call(request(18, 3, client_software_name="t", client_software_version="1"), good)
    assert response.error_code == ErrorCode.none
    assert good not in h.closed


def test_requests_on_one_connection_are_answered_in_order() -> None:
    """Kafka handles a connection's requests one at a time: a long-poll fetch holds back the next one."""
    h = BrokerHarness()
    h.call(
        request(
            19,
            7,
            topics=[
                {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            ],
            timeout=1000,
            validate_only=False,
        )
    )
    topic_id = h.broker.image.topics["t"].topic_id
    cid = h.connect()
    fetch = request(
        1,
        17,
        max_wait=500,
        min_bytes=1,
        topics=[
            {
                "topic_id": topic_id,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
        forgotten_topics_data=[],
    )
    first = h.send(cid, fetch)
    second = h.send(cid, request(18, 3, client_software_name="t", client_software_version="1"))
    assert not h.responses.get(cid)
    h.advance(500)
    frames = h.responses[cid]
    assert [struct.unpack_from(">i", f)[0] for f in frames] == [first, second]
