"""Consumer-protocol group records of ``__consumer_offsets``, in Kafka's coordinator record formats.

Kafka (group-coordinator ``src/main/resources/common/message/ConsumerGroup*Key.json`` /
``*Value.json``): the key opens with an int16 that is the record type, followed by the group id
(and the member id for member records), non-flexible; the value opens with an int16 version (0)
and is flexible (compact strings and arrays, uuids, tagged fields). A null value is a tombstone.

=====  ==========================================  ===========================================
type   key                                         value v0
=====  ==========================================  ===========================================
3      ConsumerGroupMetadataKey (group)            epoch
4      ConsumerGroupPartitionMetadataKey (group)   topics: id, name, partitions, racks
5      ConsumerGroupMemberMetadataKey (g, member)  instance, rack, client id/host, topic names,
                                                   regex, rebalance timeout, server assignor
6      ConsumerGroupTargetAssignmentMetadataKey    assignment epoch
7      ConsumerGroupTargetAssignmentMemberKey      topic partitions
8      ConsumerGroupCurrentMemberAssignmentKey     member epoch, previous epoch, state,
                                                   assigned, pending revocation
=====  ==========================================  ===========================================
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from .consumer import TP, Assignment, MemberState
from .log_format import GroupLogFormatError, _Reader, _string

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_ASSIGNMENT = 8
CONSUMER_TYPES = frozenset(range(3, 9))
MEMBER_TYPES = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
MAX_ITEMS = 1 << 20  # no count read from a record allocates past this


@dataclass(frozen=True, slots=True)
class ConsumerKey:
    record_type: int
    group_id: str
    member_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_names: tuple[str, ...]
    subscribed_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    member_epoch: int
    previous_epoch: int
    state: MemberState
    assigned: Assignment
    pending_revocation: Assignment


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID
    name: str
    partitions: int


# -- writing --------------------------------------------------------------------------------------


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _cstring(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    raw = value.encode()
    return _uvarint(len(raw) + 1) + raw


def _carray(items: list[bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = b"\x00"


def encode_key(key: ConsumerKey) -> bytes:
    out = struct.pack(">h", key.record_type) + _string(key.group_id)
    if key.record_type in MEMBER_TYPES:
        out += _string(key.member_id or "")
    return out


def _topic_partitions(assignment: Iterable[TP]) -> bytes:
    by_topic: dict[uuid.UUID, list[int]] = {}
    for topic_id, p in assignment:
        by_topic.setdefault(topic_id, []).append(p)
    items = [
        topic_id.bytes + _carray([struct.pack(">i", p) for p in sorted(parts)]) + NO_TAGS
        for topic_id, parts in sorted(by_topic.items(), key=lambda kv: str(kv[0]))
    ]
    return _carray(items)


def encode_group_metadata(epoch: int) -> bytes:
    return struct.pack(">hi", 0, epoch) + NO_TAGS


def encode_partition_metadata(epoch: int, topics: Iterable[TopicMetadata]) -> bytes:
    items = [
        t.topic_id.bytes + _cstring(t.name) + struct.pack(">i", t.partitions) + _carray([]) + NO_TAGS
        for t in topics
    ]
    return struct.pack(">hi", 0, epoch) + _carray(items) + NO_TAGS


def encode_member_metadata(m: MemberMetadata) -> bytes:
    return (
        struct.pack(">h", 0)
        + _cstring(m.instance_id)
        + _cstring(m.rack_id)
        + _cstring(m.client_id)
        + _cstring(m.client_host)
        + _carray([_cstring(t) for t in m.subscribed_names])
        + _cstring(m.subscribed_regex)
        + struct.pack(">i", m.rebalance_timeout_ms)
        + _cstring(m.server_assignor)
        + NO_TAGS
    )


def encode_target_metadata(assignment_epoch: int) -> bytes:
    return struct.pack(">hi", 0, assignment_epoch) + NO_TAGS


def encode_target_member(assignment: Assignment) -> bytes:
    return struct.pack(">h", 0) + _topic_partitions(assignment) + NO_TAGS


def encode_current_assignment(c: CurrentAssignment) -> bytes:
    return (
        struct.pack(">hiib", 0, c.member_epoch, c.previous_epoch, int(c.state))
        + _topic_partitions(c.assigned)
        + _topic_partitions(c.pending_revocation)
        + NO_TAGS
    )


# -- reading --------------------------------------------------------------------------------------


def decode_consumer_key(data: bytes) -> ConsumerKey | None:
    """The key of a consumer-group record; None for any other record type."""
    reader = _Reader(data)
    version = reader.int16()
    if version not in CONSUMER_TYPES:
        return None
    group_id = reader.string()
    member_id = reader.string() if version in MEMBER_TYPES else None
    return ConsumerKey(version, group_id, member_id)


def _flexible(data: bytes) -> _Reader:
    reader = _Reader(data, flexible=True)
    version = reader.int16()
    if version != 0:
        raise GroupLogFormatError(f"consumer group record value version {version}")
    return reader


def _count(reader: _Reader) -> int:
    n = reader.array_length()
    if n > MAX_ITEMS or n > len(reader.data) - reader.pos:
        raise GroupLogFormatError(f"array of {n} items in a {len(reader.data)}-byte record")
    return n


def _uuid(reader: _Reader) -> uuid.UUID:
    return uuid.UUID(bytes=reader._raw(16))


def _read_topic_partitions(reader: _Reader) -> Assignment:
    out: set[TP] = set()
    for _ in range(_count(reader)):
        topic_id = _uuid(reader)
        for _ in range(_count(reader)):
            out.add((topic_id, reader.int32()))
        reader.tagged_fields()
    return frozenset(out)


def decode_group_metadata(data: bytes) -> int:
    return _flexible(data).int32()


def decode_partition_metadata(data: bytes) -> list[TopicMetadata]:
    reader = _flexible(data)
    reader.int32()
    topics = []
    for _ in range(_count(reader)):
        topic_id = _uuid(reader)
        name = reader.string()
        partitions = reader.int32()
        for _ in range(_count(reader)):
            reader.int32()
            for _ in range(_count(reader)):
                reader.string()
            reader.tagged_fields()
        reader.tagged_fields()
        topics.append(TopicMetadata(topic_id, name, partitions))
    return topics


def decode_member_metadata(data: bytes) -> MemberMetadata:
    reader = _flexible(data)
    instance_id = reader.nullable_string()
    rack_id = reader.nullable_string()
    client_id = reader.string()
    client_host = reader.string()
    names = tuple(reader.string() for _ in range(_count(reader)))
    regex = reader.nullable_string()
    rebalance_timeout = reader.int32()
    assignor = reader.nullable_string()
    return MemberMetadata(
        instance_id, rack_id, client_id, client_host, names, regex, rebalance_timeout, assignor
    )


def decode_target_metadata(data: bytes) -> int:
    return _flexible(data).int32()


def decode_target_member(data: bytes) -> Assignment:
    return _read_topic_partitions(_flexible(data))


def decode_current_assignment(data: bytes) -> CurrentAssignment:
    reader = _flexible(data)
    epoch = reader.int32()
    previous = reader.int32()
    raw_state = struct.unpack(">b", reader._raw(1))[0]
    try:
        state = MemberState(raw_state)
    except ValueError:
        state = MemberState.UNKNOWN
    assigned = _read_topic_partitions(reader)
    pending = _read_topic_partitions(reader)
    return CurrentAssignment(epoch, previous, state, assigned, pending)
