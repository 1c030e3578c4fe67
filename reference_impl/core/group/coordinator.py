"""The group coordinator of one broker: its shards of ``__consumer_offsets``, their groups and offsets.

A group belongs to partition ``abs(javaHashCode(group_id)) % partitions`` of
``__consumer_offsets``; this broker coordinates the groups of the partitions
it leads. When it becomes leader of such a partition (at start, or when
leadership moves here) it replays the partition's log to rebuild groups and
offsets; when it stops leading one, the groups there are unloaded and their
waiting members told NOT_COORDINATOR.

Every change is a record in Kafka's format (:mod:`.log_format`), appended
through the partition's normal leader path with acks=all and applied when
committed: an offset commit is answered, and its offset becomes visible, once
the high watermark passes its record; a SyncGroup assignment is handed out
once the group's record is committed. A write that fails answers with the
error Kafka maps it to (NOT_COORDINATOR for a lost leadership,
COORDINATOR_NOT_AVAILABLE for a timeout or too few replicas).

Timers (session, join, sync, share-member sessions) run on the broker's monotonic clock, as Kafka's
coordinator timers do (:mod:`.timers`): a step of the wall clock expires no session.
"""

from __future__ import annotations

import functools
import logging
import random
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import build_batch

from ..host import CoordinatorHost, PeerMessenger
from ..internal_topics import CONSUMER_OFFSETS, TopicsHost, coordinator_error, partition_for
from ..partition import Partition
from ..security.acls import Authorizer
from ..txn.markers import MarkerHost
from .commit_wait import CommitWait
from .consumer_coordinator import ConsumerGroups
from .loading import load_shard
from .log_format import (
    CommittedOffset,
    StoredGroup,
    StoredMember,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)
from .membership import JoinRequest, Membership, SyncRequest, join_error, sync_answer
from .offsets import OffsetStore, TopicPartition
from .share_coordinator import ShareGroups
from .state import ClassicGroup, GroupState, JoinReply, SyncReply
from .timers import CoordinatorTimers, TimerKey

log = logging.getLogger("reference_impl.group")

Done = Callable[[ErrorCode], None]
RecordKV = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class OffsetCommitItem:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


class GroupHost(CoordinatorHost, TopicsHost, MarkerHost, PeerMessenger, Protocol):
    """What the group coordinator needs of the broker: the ``__consumer_offsets`` replicas it writes
    and replays, the purgatory its timers and writes wait in, ids, and the transaction coordinator's
    markers (transactional offsets become visible or vanish with them); the share coordinator and its
    persister ask other brokers."""

    @property
    def rng(self) -> random.Random: ...

    @property
    def mono_ms(self) -> int: ...

    @property
    def authorizer(self) -> Authorizer | None: ...


class GroupCoordinator:
    def __init__(self, broker: GroupHost) -> None:
        self.broker = broker
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets = OffsetStore()
        self.membership = Membership(self.groups, self)
        self.consumer = ConsumerGroups(self)
        self.share = ShareGroups(self)
        self.loaded: set[int] = set()
        self.started = False
        self.now_ms = broker.now_ms
        self.timers = CoordinatorTimers(broker, lambda: self.now_ms, self.operation)
        self._depth = 0
        self._ready: list[tuple[str, int]] = []
        self._next_expiry_ms = broker.mono_ms + self._config("offsets.retention.check.interval.ms")
        broker.txn_coordinator.marker_listeners.append(self.on_txn_marker)

    # -- configuration (MembershipHost) ----------------------------------------------------------

    def _config(self, name: str) -> int:
        return self.broker.config.get_int(name)

    def initial_rebalance_delay_ms(self) -> int:
        return self._config("group.initial.rebalance.delay.ms")

    def max_group_size(self) -> int:
        return self._config("group.max.size")

    def session_timeout_valid(self, timeout_ms: int) -> bool:
        low = self._config("group.min.session.timeout.ms")
        return low <= timeout_ms <= self._config("group.max.session.timeout.ms")

    def new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{uuid.UUID(int=self.broker.rng.getrandbits(128), version=4)}"

    # -- timers (MembershipHost) -----------------------------------------------------------------

    def schedule(self, key: TimerKey, delay_ms: int, fn: Callable[[int], None]) -> None:
        """Run ``fn`` ``delay_ms`` from now on the monotonic clock (:mod:`.timers`)."""
        self.timers.schedule(key, delay_ms, fn)

    def cancel(self, key: TimerKey) -> None:
        self.timers.cancel(key)

    def scheduled(self, key: TimerKey) -> bool:
        return self.timers.scheduled(key)

    def _enter(self, now_ms: int) -> None:
        self.now_ms = max(self.now_ms, now_ms)
        self.membership.now_ms = self.now_ms

    @contextmanager
    def operation(self, now_ms: int) -> Iterator[None]:
        """Run one coordinator operation; answers it produces go out only when it is over."""
        self._enter(now_ms)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._flush()

    def deliver(self, key: tuple[str, int]) -> None:
        """A pending reply has its answer: complete it now, or when the running operation ends."""
        self._ready.append(key)
        if self._depth == 0:
            self._flush()

    def _flush(self) -> None:
        while self._ready:
            self.broker.purgatory.check_and_complete(self._ready.pop(0), self.now_ms)

    # -- shards ---------------------------------------------------------------------------------

    def shard_of(self, group_id: str) -> int:
        return partition_for(group_id, CONSUMER_OFFSETS.partitions(self.broker))

    def check_coordinator(self, group_id: str) -> Partition:
        """The group's partition if this broker coordinates it, else NOT_COORDINATOR / LOAD_IN_PROGRESS."""
        return CONSUMER_OFFSETS.coordinator_partition(
            self.broker,
            self.shard_of(group_id),
            self.loaded,
            ErrorCode.not_coordinator,
            f"group {group_id!r}",
        )

    def start(self, now_ms: int) -> None:
        """Load every led shard, once the broker restored its high watermarks (later moves: the hook)."""
        self.started = True
        self.on_partitions_changed(now_ms)

    def on_partitions_changed(self, now_ms: int) -> None:
        """Leadership of ``__consumer_offsets`` may have moved: load new shards, unload lost ones."""
        if not self.started:
            return
        self._enter(now_ms)
        led = set(CONSUMER_OFFSETS.led(self.broker))
        for index in sorted(self.loaded - led):
            self._unload(index)
        for index in sorted(led - self.loaded):
            load_shard(self, index)
            self.loaded.add(index)
        self.share.state.on_partitions_changed()  # __share_group_state shards (share_state.py)

    def _unload(self, index: int) -> None:
        self.loaded.discard(index)
        gone = [g for g in self.groups.values() if self.shard_of(g.group_id) == index]
        for group in gone:
            self.membership.kill(group, ErrorCode.not_coordinator)
            self.offsets.drop_group(group.group_id)
        for group_id in [g for g in self.consumer.groups if self.shard_of(g) == index]:
            self.offsets.drop_group(group_id)
        self.consumer.unload(index)
        log.info("unloaded __consumer_offsets-%d: %d groups", index, len(gone))

    def simple_group(self, group_id: str) -> ClassicGroup | None:
        """The group offsets were committed for without membership (Kafka's "simple" group);
        None when the id names a consumer-protocol group."""
        if group_id in self.consumer.groups:
            return None
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=self.now_ms)
        return group

    # -- membership requests --------------------------------------------------------------------

    def join(self, req: JoinRequest, reply: JoinReply, now_ms: int) -> None:
        with self.operation(now_ms):
            if not req.group_id:
                reply(join_error(ErrorCode.invalid_group_id, req.member_id))
                return
            if not self.session_timeout_valid(req.session_timeout_ms):
                reply(join_error(ErrorCode.invalid_session_timeout, req.member_id))
                return
            try:
                self.check_coordinator(req.group_id)
            except KafkaError as exc:
                reply(join_error(exc.code, req.member_id))
                return
            consumer_group = self.consumer.groups.get(req.group_id)
            if consumer_group is not None:
                if consumer_group.members:
                    # No online migration here (group.consumer.migration.policy): a classic member
                    # cannot join a consumer-protocol group with members.
                    reply(join_error(ErrorCode.inconsistent_group_protocol, req.member_id))
                    return
                del self.consumer.groups[req.group_id]
                self.append(req.group_id, self.consumer.tombstones(consumer_group), lambda _code: None)
            self.membership.join(req, reply, now_ms)

    def sync(self, req: SyncRequest, reply: SyncReply, now_ms: int) -> None:
        with self.operation(now_ms):
            error = self._group_request_error(req.group_id)
            if error is not None:
                reply(sync_answer(error))
                return
            self.membership.sync(req, reply, now_ms)

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        with self.operation(now_ms):
            error = self._group_request_error(group_id)
            if error is not None:
                return error
            return self.membership.heartbeat(group_id, generation, member_id, instance_id, now_ms)

    def leave(
        self, group_id: str, identities: list[tuple[str, str | None]], now_ms: int
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        with self.operation(now_ms):
            error = self._group_request_error(group_id)
            if error is not None:
                return error, []
            return self.membership.leave(group_id, identities, now_ms)

    def _group_request_error(self, group_id: str) -> ErrorCode | None:
        if not group_id:
            return ErrorCode.invalid_group_id
        try:
            self.check_coordinator(group_id)
        except KafkaError as exc:
            return exc.code
        if group_id in self.consumer.groups:
            return ErrorCode.unknown_member_id  # a classic request to a consumer-protocol group
        return None

    # -- writing ---------------------------------------------------------------------------------

    def append(
        self, group_id: str, records: list[RecordKV], done: Done, producer: tuple[int, int] | None = None
    ) -> None:
        """Write ``records`` to the group's partition, acks=all; ``done`` runs once committed or failed.

        ``producer`` (id, epoch) makes the batch transactional (TxnOffsetCommit).
        """
        try:
            part = self.check_coordinator(group_id)
            if producer is None:
                batch = build_batch(records, base_timestamp=self.now_ms)
            else:
                batch = build_batch(
                    records,
                    base_timestamp=self.now_ms,
                    producer_id=producer[0],
                    producer_epoch=producer[1],
                    transactional=True,
                )
            outcome = part.append_as_leader(batch, -1, self.now_ms, from_coordinator=producer is not None)
        except KafkaError as exc:
            done(coordinator_error(exc.code))
            return
        self.broker.notify_partition_changed(part.key, self.now_ms)
        deadline = self.now_ms + self._config("offsets.commit.timeout.ms")
        wait = CommitWait(part, outcome.last_offset, done, deadline, self.operation)
        self.broker.purgatory.try_complete_else_watch(wait, (part.key,), self.now_ms)

    def store_group(self, group: ClassicGroup, assignment: dict[str, bytes], on_done: Done) -> None:
        members = tuple(
            StoredMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata_for(group.protocol_name),
                assignment.get(m.member_id, b""),
            )
            for m in group.members.values()
        )
        value = StoredGroup(
            group.protocol_type or "",
            group.generation,
            group.protocol_name,
            group.leader_id,
            group.state_timestamp_ms,
            members if group.protocol_name is not None else (),
        )
        self.append(group.group_id, [(encode_group_key(group.group_id), encode_group_value(value))], on_done)

    # -- offsets ---------------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        retention_ms: int,
        items: list[OffsetCommitItem],
        api_version: int,
        done: Callable[[dict[TopicPartition, ErrorCode]], None],
        now_ms: int,
    ) -> None:
        """OffsetCommit: validate the committer, write one record per offset, apply them once committed."""
        self._enter(now_ms)
        codes: dict[TopicPartition, ErrorCode] = {}
        valid = []
        for item in items:
            key = (item.topic, item.partition)
            if not self._partition_exists(*key):
                codes[key] = ErrorCode.unknown_topic_or_partition
            else:
                valid.append(item)
        if not valid:
            done(codes)
            return
        group_error = self._validate_commit(group_id, generation, member_id, instance_id, api_version)
        if group_error is not None:
            done({**codes, **{(i.topic, i.partition): group_error for i in valid}})
            return
        expire = now_ms + retention_ms if retention_ms >= 0 else None
        self._write_offsets(group_id, valid, codes, expire, None, done)

    def _write_offsets(
        self,
        group_id: str,
        items: list[OffsetCommitItem],
        codes: dict[TopicPartition, ErrorCode],
        expire_ms: int | None,
        producer: tuple[int, int] | None,
        done: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """One record per offset (OFFSET_METADATA_TOO_LARGE refused); applied, or held for the
        transaction of ``producer``, once the write is committed."""
        limit = self._config("offset.metadata.max.bytes")
        records: list[RecordKV] = []
        written_offsets: list[tuple[TopicPartition, CommittedOffset]] = []
        for item in items:
            key = (item.topic, item.partition)
            if item.metadata is not None and len(item.metadata) > limit:
                codes[key] = ErrorCode.offset_metadata_too_large
                continue
            value = CommittedOffset(
                item.offset, item.leader_epoch, item.metadata or "", self.now_ms, expire_ms
            )
            records.append((encode_offset_key(group_id, *key), encode_offset_value(value)))
            written_offsets.append((key, value))
        if not records:
            done(codes)
            return

        def written(code: ErrorCode) -> None:
            if code is ErrorCode.none:
                self.simple_group(group_id)
                for key, value in written_offsets:
                    if producer is None:
                        self.offsets.put(group_id, key, value)
                    else:
                        self.offsets.put_pending(producer[0], group_id, key, value)
            done({**codes, **{key: code for key, _ in written_offsets}})

        self.append(group_id, records, written, producer)

    def _validate_commit(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, api_version: int
    ) -> ErrorCode | None:
        try:
            self.check_coordinator(group_id)
        except KafkaError as exc:
            return exc.code
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.validate_offset_commit(consumer_group, member_id, generation, api_version)
        group = self.groups.get(group_id)
        if group is None:
            if generation < 0:
                self.simple_group(group_id)
                return None
            return ErrorCode.group_id_not_found if api_version >= 9 else ErrorCode.illegal_generation
        error = self.membership.validate_offset_commit(group, member_id, instance_id, generation, False)
        if error is None:
            self.membership.touch(group, member_id)
        return error

    def _partition_exists(self, topic: str, partition: int) -> bool:
        info = self.broker.image.topics.get(topic)
        return info is not None and partition in info.partitions

    def fetch_offsets(
        self,
        group_id: str,
        wanted: list[tuple[str, list[int]]] | None,
        require_stable: bool,
        now_ms: int,
        member: tuple[str | None, int] = (None, -1),
    ) -> list[tuple[str, int, CommittedOffset | None, ErrorCode]]:
        """OffsetFetch of one group: (topic, partition, offset or None, error) in request order.

        ``wanted`` None asks for every committed offset. Raises KafkaError for
        a group-level error (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
        """
        self._enter(now_ms)
        self.check_coordinator(group_id)
        group = self.groups.get(group_id)
        known = group is not None and not group.is_in(GroupState.DEAD)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            known = True
            error = self.consumer.validate_offset_fetch(consumer_group, *member)
            if error is not None:
                raise KafkaError(error, f"offset fetch of group {group_id} by member {member[0]}")
        if wanted is None:
            if not known:
                return []
            committed = self.offsets.of_group(group_id)
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(committed):
                by_topic.setdefault(topic, []).append(partition)
            wanted = list(by_topic.items())
        out: list[tuple[str, int, CommittedOffset | None, ErrorCode]] = []
        for topic, partitions in wanted:
            for partition in partitions:
                tp = (topic, partition)
                if require_stable and self.offsets.has_pending(group_id, tp):
                    out.append((topic, partition, None, ErrorCode.unstable_offset_commit))
                else:
                    value = self.offsets.get(group_id, tp) if known else None
                    out.append((topic, partition, value, ErrorCode.none))
        return out

    def commit_transactional_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation: int,
        member_id: str,
        instance_id: str | None,
        items: list[OffsetCommitItem],
        done: Callable[[dict[TopicPartition, ErrorCode]], None],
        now_ms: int,
    ) -> None:
        """TxnOffsetCommit's coordinator side: offsets held apart under the producer until its marker.

        The records go into the group's partition as a transactional batch of
        ``producer_id`` (no sequence numbers, as Kafka's coordinator writes
        them), so the transaction's COMMIT or ABORT marker on that partition
        settles them, also when the log is replayed. Validation is Kafka's for
        a transactional commit: an unknown group with a generation is
        ILLEGAL_GENERATION, a member must match, and the group's state is not
        enforced (no REBALANCE_IN_PROGRESS).
        """
        self._enter(now_ms)
        codes: dict[TopicPartition, ErrorCode] = {}
        valid = [i for i in items if self._partition_exists(i.topic, i.partition)]
        codes.update(
            {(i.topic, i.partition): ErrorCode.unknown_topic_or_partition for i in items if i not in valid}
        )
        error: ErrorCode | None
        try:
            self.check_coordinator(group_id)
            group = self.groups.get(group_id)
            consumer_group = self.consumer.groups.get(group_id)
            if consumer_group is not None:
                error = self.consumer.validate_offset_commit(
                    consumer_group, member_id, generation, api_version=None
                )
            elif group is None:
                error = None if generation < 0 else ErrorCode.illegal_generation
            else:
                error = self.membership.validate_offset_commit(
                    group, member_id, instance_id, generation, True
                )
        except KafkaError as exc:
            error = exc.code
        if error is not None or not valid:
            done({**codes, **{(i.topic, i.partition): error or ErrorCode.none for i in valid}})
            return
        self._write_offsets(group_id, valid, codes, None, (producer_id, producer_epoch), done)

    def on_txn_marker(self, key: tuple[str, int], producer_id: int, commit: bool, now_ms: int) -> None:
        """A COMMIT or ABORT marker reached a shard of ``__consumer_offsets``: settle its pending offsets."""
        topic, index = key
        if topic != CONSUMER_OFFSETS.name or index not in self.loaded:
            return
        with self.operation(now_ms):
            for group_id in self.offsets.complete_transaction(
                producer_id, commit, lambda g: self.shard_of(g) == index
            ):
                if commit:
                    self.simple_group(group_id)

    def delete_offsets(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]],
        done: Callable[[ErrorCode, dict[TopicPartition, ErrorCode]], None],
        now_ms: int,
    ) -> None:
        """OffsetDelete: offsets of topics the group does not subscribe to, for any group state."""
        self._enter(now_ms)
        try:
            self.check_coordinator(group_id)
        except KafkaError as exc:
            done(exc.code, {})
            return
        group = self.groups.get(group_id)
        consumer_group = self.consumer.groups.get(group_id)
        subscribed: Callable[[str], bool]
        if consumer_group is not None:
            # ConsumerGroup.isSubscribedToTopic: the topics the members subscribe to (names or regex).
            subscribed = consumer_group.subscribed_metadata.__contains__
        elif group is None or group.is_in(GroupState.DEAD):
            done(ErrorCode.group_id_not_found, {})
            return
        elif (
            group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE)
            and group.protocol_type != "consumer"
        ):
            done(ErrorCode.non_empty_group, {})
            return
        else:
            subscribed = group.is_subscribed_to
        codes: dict[TopicPartition, ErrorCode] = {}
        records: list[RecordKV] = []
        removed: list[TopicPartition] = []
        for topic, partitions in topics:
            for partition in partitions:
                tp = (topic, partition)
                if not self._partition_exists(topic, partition):
                    codes[tp] = ErrorCode.unknown_topic_or_partition
                elif subscribed(topic):
                    codes[tp] = ErrorCode.group_subscribed_to_topic
                else:
                    codes[tp] = ErrorCode.none
                    if self.offsets.get(group_id, tp) is not None or self.offsets.has_pending(group_id, tp):
                        records.append((encode_offset_key(group_id, topic, partition), None))
                        removed.append(tp)
        if not records:
            done(ErrorCode.none, codes)
            return

        def written(code: ErrorCode) -> None:
            if code is not ErrorCode.none:
                done(code, {})
                return
            for tp in removed:
                self.offsets.put(group_id, tp, None)
            done(ErrorCode.none, codes)

        self.append(group_id, records, written)

    # -- groups ----------------------------------------------------------------------------------

    def delete_groups(
        self, group_ids: list[str], done: Callable[[dict[str, ErrorCode]], None], now_ms: int
    ) -> None:
        """DeleteGroups: tombstones for Empty groups' offsets and metadata; answers when all are written."""
        self._enter(now_ms)
        results: dict[str, ErrorCode] = {}
        waiting = set()
        for group_id in group_ids:
            try:
                self.check_coordinator(group_id)
            except KafkaError as exc:
                results[group_id] = exc.code
                continue
            group = self.groups.get(group_id)
            consumer_group = self.consumer.groups.get(group_id)
            if consumer_group is not None:
                if consumer_group.members:
                    results[group_id] = ErrorCode.non_empty_group
                else:
                    waiting.add(group_id)
            elif group is None or group.is_in(GroupState.DEAD):
                results[group_id] = ErrorCode.group_id_not_found
            elif not group.is_in(GroupState.EMPTY):
                results[group_id] = ErrorCode.non_empty_group
            else:
                waiting.add(group_id)
        if not waiting:
            done(results)
            return

        def finish(group_id: str, code: ErrorCode) -> None:
            results[group_id] = code
            waiting.discard(group_id)
            if not waiting:
                done(results)

        for group_id in sorted(waiting):
            self._tombstone_group(group_id, functools.partial(finish, group_id))

    def _tombstone_group(
        self, group_id: str, done: Done, partitions: Iterable[TopicPartition] | None = None
    ) -> None:
        """Write tombstones for ``partitions`` (default: every offset) and then the group itself."""
        if partitions is None:
            partitions = set(self.offsets.of_group(group_id))
            for by_group in self.offsets.pending.values():
                partitions |= set(by_group.get(group_id, {}))
        records: list[RecordKV] = [(encode_offset_key(group_id, t, p), None) for t, p in sorted(partitions)]
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            records += self.consumer.tombstones(consumer_group)
        else:
            records.append((encode_group_key(group_id), None))

        def written(code: ErrorCode) -> None:
            if code is ErrorCode.none:
                self.consumer.groups.pop(group_id, None)
                group = self.groups.get(group_id)
                if group is not None:
                    self.membership.kill(group, ErrorCode.coordinator_not_available)
                self.offsets.drop_group(group_id)
            done(code)

        self.append(group_id, records, written)

    def maintain(self, now_ms: int) -> None:
        """Every ``offsets.retention.check.interval.ms``: expire old offsets, and empty groups left bare."""
        if not self.started or self.broker.mono_ms < self._next_expiry_ms:
            return
        self._enter(now_ms)
        self._next_expiry_ms = self.broker.mono_ms + self._config("offsets.retention.check.interval.ms")
        retention_ms = self._config("offsets.retention.minutes") * 60_000
        for group in list(self.groups.values()):
            if self.shard_of(group.group_id) not in self.loaded:
                continue
            expired = self.offsets.expired(group, now_ms, retention_ms)
            left = set(self.offsets.of_group(group.group_id)) - set(expired)
            whole = (
                not left
                and group.is_in(GroupState.EMPTY)
                and not self.offsets.has_open_transactions(group.group_id)
            )
            if whole:
                log.info("group %s: offsets expired, removing the empty group", group.group_id)
                self._tombstone_group(group.group_id, lambda _code: None, expired)
            elif expired:
                self._expire_offsets(group.group_id, expired)
        for cgroup in list(self.consumer.groups.values()):
            gid = cgroup.group_id
            if self.shard_of(gid) not in self.loaded:
                continue
            expired = self.offsets.expired_of(
                gid, cgroup.subscribed_metadata.__contains__, None, now_ms, retention_ms
            )
            left = set(self.offsets.of_group(gid)) - set(expired)
            if not left and not cgroup.members and not self.offsets.has_open_transactions(gid):
                log.info("consumer group %s: offsets expired, removing the empty group", gid)
                self._tombstone_group(gid, lambda _code: None, expired)
            elif expired:
                self._expire_offsets(gid, expired)

    def _expire_offsets(self, group_id: str, expired: list[TopicPartition]) -> None:
        records: list[RecordKV] = [(encode_offset_key(group_id, t, p), None) for t, p in expired]
        self.append(group_id, records, functools.partial(self._drop, group_id, expired))

    def _drop(self, group_id: str, partitions: list[TopicPartition], code: ErrorCode) -> None:
        if code is ErrorCode.none:
            for tp in partitions:
                self.offsets.put(group_id, tp, None)
