"""The share coordinator (KIP-932): share-partition state on ``__share_group_state``.

Kafka: ``share-coordinator/src/main/java/org/apache/kafka/coordinator/share/ShareCoordinatorShard.java``
(replay, ``writeState``, ``readStateAndMaybeUpdateLeaderEpoch``, ``initializeState``, ``deleteState``,
``readStateSummary``), ``ShareCoordinatorService.java`` (one operation per key, the key's partition
``abs(hash("groupId:topicId:partition")) % partitions``, an empty group id or topic list answered
with no results) and ``PersisterStateBatchCombiner.java`` (newer batches over older ones, nothing
below the start offset), read at apache/kafka 35098fcf and 02a2d01a.

The coordinator of a key is the leader of its ``__share_group_state`` partition. When this broker
becomes leader of one it replays the partition's log (the last snapshot of a key, then its updates;
a snapshot tombstone deletes the key); when it stops leading one, its keys are forgotten. A write
is one record in Kafka's format (:mod:`.share_state_records`): a ShareSnapshot for a key's first
state and after every ``UPDATES_PER_SNAPSHOT`` updates (Kafka's
``share.coordinator.snapshot.update.records.per.snapshot``, default 500), else a ShareUpdate. It is
appended with acks=all and answered once committed; the in-memory state takes it at once, as the log
of this leader already holds it.

Per-key checks (the answer's per-partition error): INVALID_REQUEST for a null topic id or a negative
partition, UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does not have, FENCED_LEADER_EPOCH
for a leader epoch below the one recorded (write, read), FENCED_STATE_EPOCH for a state epoch below
the one recorded (write, initialize); NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS /
COORDINATOR_NOT_AVAILABLE as for every coordinator. Not here: pruning the topic below the oldest
snapshot still needed (Kafka's ``ShareCoordinatorOffsetsManager`` deletes records; this topic keeps
them, ``retention.ms=-1``), and the group coordinator's own InitializeShareGroupState calls (the
partition leader starts a share-partition with no state by ``share.auto.offset.reset``, and writes
it, see :mod:`.share_persister`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import build_batch

from ..host import CoordinatorHost, PeerMessenger
from ..internal_topics import (
    SHARE_GROUP_STATE,
    TopicsHost,
    coordinator_error,
    partition_for,
    stored_records,
)
from .commit_wait import CommitWait, Done
from .log_format import GroupLogFormatError
from .share_state_records import (
    SNAPSHOT,
    UPDATE,
    ShareState,
    StateBatch,
    StateKey,
    StateWrite,
    decode_key,
    decode_snapshot,
    decode_update,
    encode_key,
    encode_snapshot,
    encode_update,
)

if TYPE_CHECKING:
    from ..partition import Partition

log = logging.getLogger("reference_impl.share")
UPDATES_PER_SNAPSHOT = 500
MAX_BATCHES_PER_KEY = 10_000  # a write whose merged state would hold more batches is INVALID_REQUEST
WRITE_TIMEOUT_MS = 30_000
UNINITIALIZED = -1  # PartitionFactory.UNINITIALIZED_START_OFFSET
DEFAULT_STATE_EPOCH = 0


class ShareStateHost(CoordinatorHost, TopicsHost, PeerMessenger, Protocol):
    """What the share coordinator and the persister need of the broker: the ``__share_group_state``
    replicas, the purgatory its writes wait in, the metadata, and requests to other brokers."""

    @property
    def mono_ms(self) -> int:
        """The monotonic clock the persister's retry backoff runs on."""


@dataclass(frozen=True, slots=True)
class Summary:
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int


def _disjoint(batches: tuple[StateBatch, ...]) -> list[StateBatch]:
    """Sorted, non-overlapping; where two overlap the one later in offset order wins."""
    out: list[StateBatch] = []
    for b in sorted(batches, key=lambda x: x.first_offset):
        if b.last_offset < b.first_offset:
            continue
        tail: StateBatch | None = None
        while out and out[-1].last_offset >= b.first_offset:
            o = out.pop()
            if o.last_offset > b.last_offset and tail is None:
                tail = replace(o, first_offset=b.last_offset + 1)
            if o.first_offset < b.first_offset:
                out.append(replace(o, last_offset=b.first_offset - 1))
                break
        out.append(b)
        if tail is not None:
            out.append(tail)
    return out


def _subtract(old: list[StateBatch], cover: list[StateBatch]) -> list[StateBatch]:
    """What of ``old`` (sorted, disjoint) no batch of ``cover`` (sorted, disjoint) covers."""
    out: list[StateBatch] = []
    j = 0
    for o in old:
        first = o.first_offset
        while j < len(cover) and cover[j].last_offset < first:
            j += 1
        k = j
        while first <= o.last_offset:
            if k >= len(cover) or cover[k].first_offset > o.last_offset:
                out.append(replace(o, first_offset=first))
                break
            if cover[k].first_offset > first:
                out.append(replace(o, first_offset=first, last_offset=cover[k].first_offset - 1))
            first = cover[k].last_offset + 1
            k += 1
    return out


def combine(
    old: tuple[StateBatch, ...], new: tuple[StateBatch, ...], start_offset: int
) -> tuple[StateBatch, ...]:
    """``PersisterStateBatchCombiner.combineStateBatches``: the new batches over the old ones (each new
    one cuts what it covers out of the old), nothing below ``start_offset`` (-1: no trim), neighbours
    with the same state and count merged. Sweeps over sorted intervals: nothing loops per offset."""
    cover = _disjoint(new)
    merged = sorted(_subtract(_disjoint(old), cover) + cover, key=lambda x: x.first_offset)
    out: list[StateBatch] = []
    for o in merged:
        if start_offset >= 0 and o.last_offset < start_offset:
            continue
        if start_offset >= 0 and o.first_offset < start_offset:
            o = replace(o, first_offset=start_offset)
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_offset + 1 == o.first_offset
            and (last.delivery_state, last.delivery_count) == (o.delivery_state, o.delivery_count)
        ):
            out[-1] = replace(last, last_offset=o.last_offset)
        else:
            out.append(o)
    return tuple(out)


def complete_count(start_offset: int, batches: tuple[StateBatch, ...]) -> int:
    """KIP-1226's DeliveryCompleteCount: offsets at or past the start offset whose delivery is done
    (ACKNOWLEDGED 2 or ARCHIVED 4)."""
    if start_offset < 0:
        return -1
    return sum(
        b.last_offset - max(b.first_offset, start_offset) + 1
        for b in batches
        if b.delivery_state in (2, 4) and b.last_offset >= start_offset
    )


class ShareStateCoordinator:
    """The share coordinator shards this broker leads and the state of their keys."""

    def __init__(self, broker: ShareStateHost) -> None:
        self.broker = broker
        self.states: dict[StateKey, ShareState] = {}
        self.leader_epochs: dict[StateKey, int] = {}
        self.state_epochs: dict[StateKey, int] = {}
        self.updates: dict[StateKey, int] = {}
        self.loaded: set[int] = set()

    # -- shards -------------------------------------------------------------------------------

    def shard_of(self, key: StateKey) -> int:
        return partition_for(key.coordinator_key(), SHARE_GROUP_STATE.partitions(self.broker))

    def coordinator_node(self, key: StateKey) -> int | None:
        """The node leading the key's partition, from the metadata image (None: no topic or leader)."""
        topic = self.broker.image.topics.get(SHARE_GROUP_STATE.name)
        if topic is None:
            return None
        info = topic.partitions.get(self.shard_of(key))
        return info.leader if info is not None and info.leader >= 0 else None

    def check(self, key: StateKey) -> Partition:
        return SHARE_GROUP_STATE.coordinator_partition(
            self.broker,
            self.shard_of(key),
            self.loaded,
            ErrorCode.coordinator_not_available,
            key.coordinator_key(),
        )

    def on_partitions_changed(self) -> None:
        """Load the ``__share_group_state`` partitions this broker now leads, forget the others."""
        led = set(SHARE_GROUP_STATE.led(self.broker))
        for index in sorted(self.loaded - led):
            self.loaded.discard(index)
            for key in [k for k in self.states if self.shard_of(k) == index]:
                self._forget(key)
        for index in sorted(led - self.loaded):
            self._load(index)
            self.loaded.add(index)

    def _forget(self, key: StateKey) -> None:
        for table in (self.states, self.leader_epochs, self.state_epochs, self.updates):
            table.pop(key, None)

    def _load(self, index: int) -> None:
        part = self.broker.partitions[(SHARE_GROUP_STATE.name, index)]
        for key in [k for k in self.states if self.shard_of(k) == index]:
            self._forget(key)
        count = 0
        for record in stored_records(self.broker.store, part):
            count += 1
            self._replay_bytes(record.key, record.value)
        log.info("loaded __share_group_state-%d: %d records", index, count)

    def _replay_bytes(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            decoded = decode_key(key)
            if decoded is None:
                return
            record_type, state_key = decoded
            if record_type == SNAPSHOT:
                self.replay(state_key, SNAPSHOT, decode_snapshot(value) if value is not None else None)
            elif value is not None:
                self.replay(state_key, UPDATE, decode_update(value))
        except GroupLogFormatError as exc:
            log.warning("skipping an unreadable __share_group_state record: %s", exc)

    def replay(self, key: StateKey, record_type: int, value: ShareState | None) -> None:
        """``ShareCoordinatorShard.replay``: a snapshot replaces, an update merges, a tombstone deletes."""
        if value is None:
            self._forget(key)
            return
        self.leader_epochs[key] = max(self.leader_epochs.get(key, value.leader_epoch), value.leader_epoch)
        current = self.states.get(key)
        if record_type == SNAPSHOT:
            self.state_epochs[key] = max(self.state_epochs.get(key, value.state_epoch), value.state_epoch)
            self.states[key] = value
            self.updates[key] = 0
            return
        if current is None:
            self.states[key] = value
            self.updates[key] = 0
            return
        start = current.start_offset if value.start_offset == -1 else value.start_offset
        batches = combine(current.batches, value.batches, start)
        self.states[key] = replace(
            current,
            start_offset=start,
            leader_epoch=current.leader_epoch if value.leader_epoch == -1 else value.leader_epoch,
            batches=batches,
            delivery_complete_count=complete_count(start, batches),
        )
        self.updates[key] = self.updates.get(key, 0) + 1

    # -- operations (one key each) --------------------------------------------------------------

    def _fenced(self, key: StateKey, leader_epoch: int | None, state_epoch: int | None) -> ErrorCode | None:
        """FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH for an epoch below the recorded one (-1: not
        checked; None: not asked)."""
        recorded = self.leader_epochs.get(key)
        if (
            leader_epoch is not None
            and leader_epoch != -1
            and recorded is not None
            and recorded > leader_epoch
        ):
            return ErrorCode.fenced_leader_epoch
        recorded = self.state_epochs.get(key)
        if state_epoch is not None and state_epoch != -1 and recorded is not None and recorded > state_epoch:
            return ErrorCode.fenced_state_epoch
        return None

    def _unknown(self, key: StateKey) -> bool:
        topic = self.broker.image.topic_by_id(key.topic_id)
        return topic is None or key.partition not in topic.partitions

    def _checked(
        self, key: StateKey, leader_epoch: int | None = None, state_epoch: int | None = None
    ) -> tuple[Partition | None, ErrorCode]:
        """Kafka's per-key checks in its order: the coordinator, a negative partition, the epochs, the
        topic and partition in the metadata."""
        try:
            part = self.check(key)
        except KafkaError as exc:
            return None, exc.code
        if key.partition < 0:
            return None, ErrorCode.invalid_request
        fenced = self._fenced(key, leader_epoch, state_epoch)
        if fenced is not None:
            return None, fenced
        if self._unknown(key):
            return None, ErrorCode.unknown_topic_or_partition
        return part, ErrorCode.none

    def write(self, w: StateWrite, *, now_ms: int, done: Done) -> None:
        """``ShareCoordinatorShard.writeState``; ``done`` gets the partition's error once committed."""
        key, batches = w.key, w.batches
        state_epoch, leader_epoch, start_offset = w.state_epoch, w.leader_epoch, w.start_offset
        part, code = self._checked(key, leader_epoch, state_epoch)
        if part is None:
            done(code)
            return
        current = self.states.get(key)
        snapshot = current is None or self.updates.get(key, 0) >= UPDATES_PER_SNAPSHOT
        start = start_offset if current is None or start_offset != -1 else current.start_offset
        merged = combine(current.batches if current else (), batches, start)
        if len(merged) > MAX_BATCHES_PER_KEY:
            done(ErrorCode.invalid_request)
            return
        if snapshot:
            value = ShareState(
                snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
                state_epoch=state_epoch if state_epoch != -1 or current is None else current.state_epoch,
                leader_epoch=leader_epoch if leader_epoch != -1 or current is None else current.leader_epoch,
                start_offset=start,
                batches=merged,
                delivery_complete_count=complete_count(start, merged),
                create_timestamp=now_ms if current is None else current.create_timestamp,
                write_timestamp=now_ms,
            )
            self._append(part, key, SNAPSHOT, value, now_ms, done)
            return
        assert current is not None
        update = ShareState(
            snapshot_epoch=current.snapshot_epoch,
            state_epoch=-1,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            batches=combine((), batches, start_offset),
            delivery_complete_count=complete_count(start, merged),
        )
        self._append(part, key, UPDATE, update, now_ms, done)

    def initialize(
        self, key: StateKey, *, state_epoch: int, start_offset: int, now_ms: int, done: Done
    ) -> None:
        """``ShareCoordinatorShard.initializeState``: a new snapshot with the state epoch and start
        offset, no batches; FENCED_STATE_EPOCH below the recorded state epoch."""
        part, code = self._checked(key, state_epoch=state_epoch)
        if part is None:
            done(code)
            return
        current = self.states.get(key)
        value = ShareState(
            snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
            state_epoch=state_epoch,
            leader_epoch=-1,
            start_offset=start_offset,
            batches=(),
            delivery_complete_count=0 if start_offset >= 0 else -1,
            create_timestamp=now_ms,
            write_timestamp=now_ms,
        )
        self._append(part, key, SNAPSHOT, value, now_ms, done)

    def delete(self, key: StateKey, *, now_ms: int, done: Done) -> None:
        """``ShareCoordinatorShard.deleteState``: a snapshot tombstone; nothing to write for a key
        without state."""
        try:
            part = self.check(key)
        except KafkaError as exc:
            done(exc.code)
            return
        if key.partition < 0:
            done(ErrorCode.invalid_request)
        elif key not in self.states:
            done(ErrorCode.none)
        else:
            self._append(part, key, SNAPSHOT, None, now_ms, done)

    def read(self, key: StateKey, leader_epoch: int, now_ms: int) -> tuple[ErrorCode, ShareState | None]:
        """``readStateAndMaybeUpdateLeaderEpoch``: the key's state (start offset -1 and state epoch 0
        when it has none). A higher leader epoch is recorded (a ShareUpdate with no batches)."""
        part, code = self._checked(key, leader_epoch)
        if part is None:
            return code, None
        state = self.states.get(key)
        if state is None:
            return ErrorCode.none, ShareState(0, DEFAULT_STATE_EPOCH, -1, UNINITIALIZED, ())
        if leader_epoch != -1 and self.leader_epochs.get(key) != leader_epoch:
            update = ShareState(state.snapshot_epoch, -1, leader_epoch, -1, ())
            self._append(part, key, UPDATE, update, now_ms, lambda _code: None)
        return ErrorCode.none, state

    def summary(self, key: StateKey, leader_epoch: int) -> tuple[ErrorCode, Summary | None]:
        """``ShareCoordinatorShard.readStateSummary``: start offset, epochs and (v1) the delivery
        complete count, nothing written."""
        part, code = self._checked(key)
        if part is None:
            return code, None
        state = self.states.get(key)
        if state is None:
            return ErrorCode.none, Summary(DEFAULT_STATE_EPOCH, -1, UNINITIALIZED, -1)
        return ErrorCode.none, Summary(
            state.state_epoch, state.leader_epoch, state.start_offset, state.delivery_complete_count
        )

    def _append(
        self,
        part: Partition,
        key: StateKey,
        record_type: int,
        value: ShareState | None,
        now_ms: int,
        done: Done,
    ) -> None:
        if value is None:
            raw = None
        else:
            raw = encode_snapshot(value) if record_type == SNAPSHOT else encode_update(value)
        batch = build_batch([(encode_key(record_type, key), raw)], base_timestamp=now_ms)
        try:
            outcome = part.append_as_leader(batch, -1, now_ms)
        except KafkaError as exc:
            done(coordinator_error(exc.code))
            return
        self.replay(key, record_type, value)
        self.broker.notify_partition_changed(part.key, now_ms)
        wait = CommitWait(part, outcome.last_offset, done, now_ms + WRITE_TIMEOUT_MS)
        self.broker.purgatory.try_complete_else_watch(wait, (part.key,), now_ms)
