"""``__consumer_offsets`` records in Kafka's formats, so Kafka's tools and this broker read each other's logs.

Every record key opens with an int16 *key version* that says what the record
is: 0 and 1 are an offset commit (OffsetCommitKey: group, topic, partition),
2 is group metadata (GroupMetadataKey: group). The value opens with its own
int16 version:

* OffsetCommitValue v0-v4: offset, leader epoch (v3+), metadata, commit
  timestamp, expire timestamp (v1 only). Kafka writes v3, and v1 when the
  committer asked for a retention time (OffsetCommit v2-v4).
* GroupMetadataValue v0-v4: protocol type, generation, protocol, leader,
  current state timestamp (v2+), members (member id, group instance id (v3+),
  client id, client host, rebalance timeout (v1+), session timeout,
  subscription, assignment). Kafka writes v3.

v4 of both values is the flexible encoding (compact strings, arrays and
bytes, tagged fields), read here and skipped tag by tag. A null value is a
tombstone: the offset or the group is gone.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3


class GroupLogFormatError(ValueError):
    """A record of ``__consumer_offsets`` that is not in any of Kafka's formats."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class StoredMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class StoredGroup:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp_ms: int
    members: tuple[StoredMember, ...]


# -- writing --------------------------------------------------------------------------------------


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _bytes(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def encode_offset_key(group_id: str, topic: str, partition: int) -> bytes:
    return (
        struct.pack(">h", OFFSET_COMMIT_KEY_VERSION)
        + _string(group_id)
        + _string(topic)
        + struct.pack(">i", partition)
    )


def encode_group_key(group_id: str) -> bytes:
    return struct.pack(">h", GROUP_METADATA_KEY_VERSION) + _string(group_id)


def encode_offset_value(value: CommittedOffset) -> bytes:
    if value.expire_timestamp_ms is not None:
        return (
            struct.pack(">hq", OFFSET_VALUE_VERSION_WITH_EXPIRY, value.offset)
            + _string(value.metadata)
            + struct.pack(">qq", value.commit_timestamp_ms, value.expire_timestamp_ms)
        )
    return (
        struct.pack(">hqi", OFFSET_VALUE_VERSION, value.offset, value.leader_epoch)
        + _string(value.metadata)
        + struct.pack(">q", value.commit_timestamp_ms)
    )


def encode_group_value(group: StoredGroup) -> bytes:
    parts = [
        struct.pack(">h", GROUP_VALUE_VERSION),
        _string(group.protocol_type),
        struct.pack(">i", group.generation),
        _string(group.protocol),
        _string(group.leader),
        struct.pack(">q", group.state_timestamp_ms),
        struct.pack(">i", len(group.members)),
    ]
    for m in group.members:
        parts += [
            _string(m.member_id),
            _string(m.group_instance_id),
            _string(m.client_id),
            _string(m.client_host),
            struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms),
            _bytes(m.subscription),
            _bytes(m.assignment),
        ]
    return b"".join(parts)


# -- reading --------------------------------------------------------------------------------------


class _Reader:
    """Reads classic (int16/int32 lengths) or flexible (compact, tagged) fields from one record."""

    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self.data = data
        self.pos = 0
        self.flexible = flexible

    def _take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error:
            raise GroupLogFormatError("record ends early") from None
        self.pos += struct.calcsize(fmt)
        return int(value)

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def int64(self) -> int:
        return self._take(">q")

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            if self.pos >= len(self.data) or shift > 28:
                raise GroupLogFormatError("bad varint")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def _length(self, wide: bool) -> int:
        if self.flexible:
            return self.uvarint() - 1
        return self.int32() if wide else self.int16()

    def _raw(self, length: int) -> bytes:
        if self.pos + length > len(self.data):
            raise GroupLogFormatError("field runs past the end of the record")
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw

    def nullable_string(self) -> str | None:
        length = self._length(wide=False)
        if length < 0:
            return None
        try:
            return self._raw(length).decode()
        except UnicodeDecodeError:
            raise GroupLogFormatError("string is not UTF-8") from None

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise GroupLogFormatError("null where a string is required")
        return value

    def bytes_(self) -> bytes:
        length = self._length(wide=True)
        return b"" if length < 0 else self._raw(length)

    def array_length(self) -> int:
        return max(self._length(wide=True), 0)

    def tagged_fields(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()
            self._raw(self.uvarint())


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The record's key; None for key versions this coordinator does not own (consumer-protocol groups)."""
    reader = _Reader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetKey(reader.string(), reader.string(), reader.int32())
    if version == 2:
        return GroupKey(reader.string())
    return None


def decode_offset_value(data: bytes) -> CommittedOffset:
    version = _Reader(data).int16()
    if not 0 <= version <= 4:
        raise GroupLogFormatError(f"offset commit value version {version}")
    reader = _Reader(data, flexible=version >= 4)
    reader.pos = 2
    offset = reader.int64()
    epoch = reader.int32() if version >= 3 else -1
    metadata = reader.nullable_string() or ""
    commit_ts = reader.int64()
    expire_ts = reader.int64() if version == 1 else None
    reader.tagged_fields()
    return CommittedOffset(offset, epoch, metadata, commit_ts, expire_ts if expire_ts != -1 else None)


def decode_group_value(data: bytes) -> StoredGroup:
    version = _Reader(data).int16()
    if not 0 <= version <= 4:
        raise GroupLogFormatError(f"group metadata value version {version}")
    reader = _Reader(data, flexible=version >= 4)
    reader.pos = 2
    protocol_type = reader.string()
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    state_ts = reader.int64() if version >= 2 else -1
    members = []
    for _ in range(reader.array_length()):
        member_id = reader.string()
        instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout = reader.int32() if version >= 1 else -1
        session_timeout = reader.int32()
        subscription = reader.bytes_()
        assignment = reader.bytes_()
        reader.tagged_fields()
        members.append(
            StoredMember(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout if rebalance_timeout >= 0 else session_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    reader.tagged_fields()
    return StoredGroup(protocol_type, generation, protocol, leader, state_ts, tuple(members))
