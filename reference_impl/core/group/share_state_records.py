"""The records of ``__share_group_state``, in Kafka's share coordinator record formats.

Kafka (share-coordinator ``src/main/resources/common/message/ShareSnapshotKey.json``,
``ShareSnapshotValue.json``, ``ShareUpdateKey.json``, ``ShareUpdateValue.json``, read at apache/kafka
0c9eef59, the definitions with KIP-1226's DeliveryCompleteCount): the key opens with an int16 that is
the record type (0 ShareSnapshot, 1 ShareUpdate) followed by the group id, the topic id and the
partition, non-flexible; the value opens with an int16 version (0) and is flexible.

==========  ======================================================================================
record      value v0
==========  ======================================================================================
snapshot    SnapshotEpoch, StateEpoch, LeaderEpoch int32; StartOffset int64; CreateTimestamp,
            WriteTimestamp int64; StateBatches [FirstOffset, LastOffset int64, DeliveryState int8,
            DeliveryCount int16]; tag 0: DeliveryCompleteCount int32 (default -1)
update      SnapshotEpoch, LeaderEpoch int32; StartOffset int64 (-1: unchanged); StateBatches; tag 0
==========  ======================================================================================

A null value (tombstone) for a snapshot key deletes the share-partition's state
(``ShareCoordinatorRecordHelpers.newShareStateTombstoneRecord``). Counts read from a record are
bounded before anything is allocated for them.
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .consumer_records import NO_TAGS, _carray, _flexible, _uvarint
from .log_format import GroupLogFormatError, _Reader, _string

SNAPSHOT = 0
UPDATE = 1
MAX_BATCHES = 1 << 16  # no state batch count read from a record allocates past this


@dataclass(frozen=True, slots=True)
class StateKey:
    """Kafka's ``SharePartitionKey``: group, topic id, partition."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_key(self) -> str:
        """``SharePartitionKey.toString()``: ``groupId:topicId:partition`` with Kafka's Uuid text
        (URL-safe base64 without padding), the key FindCoordinator (type 2) and the partition
        choice hash."""
        return f"{self.group_id}:{kafka_uuid(self.topic_id)}:{self.partition}"


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateWrite:
    """One key's WriteShareGroupState: the state a partition leader gives its share coordinator
    (``WriteShareGroupStateRequest.json``'s partition fields)."""

    key: StateKey
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]


def batches_from_wire(items: Any) -> tuple[StateBatch, ...]:
    """The StateBatches of a Read/WriteShareGroupState partition (kio entities)."""
    return tuple(
        StateBatch(int(b.first_offset), int(b.last_offset), int(b.delivery_state), int(b.delivery_count))
        for b in items
    )


def batches_to_wire(batches: Iterable[StateBatch]) -> list[dict[str, int]]:
    """StateBatches as a Read/WriteShareGroupState partition spells them."""
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "delivery_state": b.delivery_state,
            "delivery_count": b.delivery_count,
        }
        for b in batches
    ]


@dataclass(frozen=True, slots=True)
class ShareState:
    """A share-partition's persisted state (Kafka's ``ShareGroupOffset``)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    delivery_complete_count: int = -1
    create_timestamp: int = -1
    write_timestamp: int = -1


def encode_key(record_type: int, key: StateKey) -> bytes:
    return (
        struct.pack(">h", record_type)
        + _string(key.group_id)
        + key.topic_id.bytes
        + struct.pack(">i", key.partition)
    )


def _batches(batches: tuple[StateBatch, ...]) -> bytes:
    return _carray(
        [
            struct.pack(">qqbh", b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) + NO_TAGS
            for b in batches
        ]
    )


def _tags(delivery_complete_count: int) -> bytes:
    if delivery_complete_count == -1:
        return NO_TAGS
    return b"\x01" + _uvarint(0) + _uvarint(4) + struct.pack(">i", delivery_complete_count)


def encode_snapshot(state: ShareState) -> bytes:
    return (
        struct.pack(
            ">hiiiqqq",
            0,
            state.snapshot_epoch,
            state.state_epoch,
            state.leader_epoch,
            state.start_offset,
            state.create_timestamp,
            state.write_timestamp,
        )
        + _batches(state.batches)
        + _tags(state.delivery_complete_count)
    )


def encode_update(state: ShareState) -> bytes:
    return (
        struct.pack(">hiiq", 0, state.snapshot_epoch, state.leader_epoch, state.start_offset)
        + _batches(state.batches)
        + _tags(state.delivery_complete_count)
    )


def decode_key(data: bytes) -> tuple[int, StateKey] | None:
    """(record type, key) of a share-state record; None for a record type it does not know."""
    reader = _Reader(data)
    record_type = reader.int16()
    if record_type not in (SNAPSHOT, UPDATE):
        return None
    group_id = reader.string()
    topic_id = uuid.UUID(bytes=reader._raw(16))
    return record_type, StateKey(group_id, topic_id, reader.int32())


def _read_batches(reader: _Reader) -> tuple[StateBatch, ...]:
    n = reader.array_length()
    if n > MAX_BATCHES or n * 19 > len(reader.data) - reader.pos:
        raise GroupLogFormatError(f"{n} state batches in a {len(reader.data)}-byte record")
    out = []
    for _ in range(n):
        first, last = reader.int64(), reader.int64()
        state = reader._take(">b")
        count = reader.int16()
        reader.tagged_fields()
        out.append(StateBatch(first, last, state, count))
    return tuple(out)


def _read_tags(reader: _Reader) -> int:
    complete = -1
    for _ in range(reader.uvarint()):
        tag = reader.uvarint()
        raw = reader._raw(reader.uvarint())
        if tag == 0 and len(raw) == 4:
            (complete,) = struct.unpack(">i", raw)
    return int(complete)


def decode_snapshot(data: bytes) -> ShareState:
    reader = _flexible(data)
    snapshot_epoch, state_epoch, leader_epoch = reader.int32(), reader.int32(), reader.int32()
    start, created, written = reader.int64(), reader.int64(), reader.int64()
    batches = _read_batches(reader)
    return ShareState(
        snapshot_epoch, state_epoch, leader_epoch, start, batches, _read_tags(reader), created, written
    )


def decode_update(data: bytes) -> ShareState:
    reader = _flexible(data)
    snapshot_epoch, leader_epoch, start = reader.int32(), reader.int32(), reader.int64()
    batches = _read_batches(reader)
    return ShareState(snapshot_epoch, -1, leader_epoch, start, batches, _read_tags(reader))
