"""The partition leader's side of share-partition state: read it when a share-partition is first
loaded, write it when it changes.

Kafka: ``server/src/main/java/org/apache/kafka/server/share/persister/DefaultStatePersister.java``
(finds the share coordinator of a group:topic:partition key, sends ReadShareGroupState and
WriteShareGroupState) and ``core/src/main/java/kafka/server/share/SharePartition.java``
(``maybeInitialize`` reads the state before the first fetch; acknowledgements, releases and expired
locks write the changed state batches). Here:

* the coordinator of a key is the leader of its ``__share_group_state`` partition in the metadata
  image; when that is this broker the local coordinator answers in the same step, else the request
  goes to it (``send_request`` on its own channel, ``SHARE_STATE_CHANNEL``); no topic yet: it is
  created and the load is retried after ``RETRY_MS``, a ShareFetch waiting for it;
* a share-partition with no state (start offset -1) starts by ``share.auto.offset.reset`` and its
  state is written at once, so a restart does not move a ``latest`` start past unread records;
* a share-partition is reloaded when its partition's leader epoch changes (a leadership move, and
  back), so a new leader continues from the persisted state;
* a write carries the whole in-flight state (start offset, every in-flight record as a state batch,
  acquired ones as AVAILABLE with their delivery count): the coordinator lays it over what it holds.
  One write per share-partition is in flight at a time; a change made meanwhile is written after it,
  a failed write again after ``RETRY_MS``;
* an acknowledgement is answered by its write's outcome (``SharePartition.acknowledge`` completes
  its future in ``rollbackOrProcessStateUpdates``): the write that covers it succeeded, NONE and its
  transition commits; it failed, the transition is rolled back and the answer carries the error as
  ``SharePartition.fetchPersisterError`` maps it (:func:`persister_error`); a share-partition
  forgotten before its write (fenced, or its leader epoch changed) fails the acknowledgements no
  write will cover. Kafka's persister retries a retriable write error (``PersisterStateManager``'s
  ``WriteStateHandler``: up to 5 attempts, backoff 1 s to 30 s) before it fails the future; here
  the first failure fails the acknowledgements it covered and the retry writes the rolled-back state.
  Kafka writes only the batches that changed and never the acquired ones, so a record acquired
  but not acknowledged when its leader fails comes back here with the delivery count it had, where
  Kafka may count it again from the last persisted value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..boundary import SHARE_STATE_CHANNEL
from ..internal_topics import SHARE_GROUP_STATE
from ..purgatory import DelayedOperation
from .share_fetch import SharePartitions, SPKey
from .share_partition import SharePartition
from .share_state import ShareStateCoordinator, ShareStateHost
from .share_state_records import (
    ShareState,
    StateBatch,
    StateKey,
    StateWrite,
    batches_from_wire,
    batches_to_wire,
)

log = logging.getLogger("reference_impl.share")
READ_VERSION = 0
WRITE_VERSION = 1
RETRY_MS = 500
MAX_PENDING = 100_000  # share-partitions remembered while their state is being read
ReadDone = Callable[[ErrorCode, ShareState | None], None]
WriteDone = Callable[[ErrorCode], None]
Written = Callable[[ErrorCode], None]
"""Told the answer code of an acknowledgement's write: NONE (written) or the error to answer."""
FENCED = (ErrorCode.fenced_leader_epoch, ErrorCode.fenced_state_epoch)


def persister_error(code: ErrorCode) -> ErrorCode:
    """The answer to an acknowledgement whose write failed with ``code``: Kafka's
    ``SharePartition.fetchPersisterError`` (core/src/main/java/kafka/server/share/SharePartition.java,
    apache/kafka e3e579e7; 1eb76443 still answered INVALID_REQUEST for the two unknown-id errors).
    A write that threw, or an answer without the partition, is Kafka's IllegalStateException:
    UNKNOWN_SERVER_ERROR, as is a write that timed out (``WriteStateHandler`` completes it with
    REQUEST_TIMED_OUT, which the default case maps)."""
    if code in (
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_not_available,
        ErrorCode.coordinator_load_in_progress,
    ):
        return ErrorCode.coordinator_not_available
    if code is ErrorCode.fenced_leader_epoch:
        return ErrorCode.not_leader_or_follower
    if code in (
        ErrorCode.none,
        ErrorCode.fenced_state_epoch,
        ErrorCode.group_id_not_found,
        ErrorCode.unknown_topic_or_partition,
    ):
        return code
    return ErrorCode.unknown_server_error


class Persister:
    """``DefaultStatePersister``: reads and writes one key's state through its share coordinator."""

    def __init__(self, broker: ShareStateHost, coordinator: ShareStateCoordinator) -> None:
        self.broker = broker
        self.coordinator = coordinator

    def _node(self, key: StateKey) -> int | None:
        """The key's coordinator; the topic is created first if it does not exist (a single broker
        has it at once, a cluster's controller answers later and the caller retries)."""
        if SHARE_GROUP_STATE.name not in self.broker.image.topics:
            try:
                SHARE_GROUP_STATE.ensure(self.broker, self.broker.now_ms)
            except KafkaError as exc:
                log.info("creating __share_group_state: %s", exc)
        return self.coordinator.coordinator_node(key)

    def read(self, key: StateKey, leader_epoch: int, done: ReadDone) -> None:
        node = self._node(key)
        if node is None:
            done(ErrorCode.coordinator_not_available, None)
        elif node == self.broker.node_id:
            done(*self.coordinator.read(key, leader_epoch, self.broker.now_ms))
        else:
            body = _request(84, READ_VERSION, key, {"leader_epoch": leader_epoch})

            def answered(response: Any, reason: str | None) -> None:
                p = _partition(response)
                if p is None or p.error_code != ErrorCode.none:
                    done(
                        ErrorCode(p.error_code) if p is not None else ErrorCode.coordinator_not_available,
                        None,
                    )
                    return
                batches = batches_from_wire(p.state_batches)
                done(
                    ErrorCode.none,
                    ShareState(0, int(p.state_epoch), leader_epoch, int(p.start_offset), batches),
                )

            if not self.broker.send_request(node, body, answered, channel=SHARE_STATE_CHANNEL):
                done(ErrorCode.coordinator_not_available, None)

    def write(self, w: StateWrite, done: WriteDone) -> None:
        node = self._node(w.key)
        if node is None:
            done(ErrorCode.coordinator_not_available)
        elif node == self.broker.node_id:
            self.coordinator.write(w, now_ms=self.broker.now_ms, done=done)
        else:
            body = _request(
                85,
                WRITE_VERSION,
                w.key,
                {
                    "state_epoch": w.state_epoch,
                    "leader_epoch": w.leader_epoch,
                    "start_offset": w.start_offset,
                    "state_batches": batches_to_wire(w.batches),
                },
            )

            def answered(response: Any, reason: str | None) -> None:
                if response is None:  # no answer (Kafka: NETWORK_EXCEPTION once its retries are spent)
                    done(ErrorCode.network_exception)
                    return
                p = _partition(response)
                done(ErrorCode(p.error_code) if p is not None else ErrorCode.unknown_server_error)

            if not self.broker.send_request(node, body, answered, channel=SHARE_STATE_CHANNEL):
                done(ErrorCode.coordinator_not_available)


def _request(api_key: int, version: int, key: StateKey, partition: dict[str, Any]) -> Any:
    return build(
        request_class(api_key, version),
        {
            "group_id": key.group_id,
            "topics": [{"topic_id": key.topic_id, "partitions": [{"partition": key.partition} | partition]}],
        },
    )


def _partition(response: Any) -> Any:
    """The one partition result of a one-key answer; None for no answer or an empty one."""
    if response is None or not response.results or not response.results[0].partitions:
        return None
    return response.results[0].partitions[0]


class _Retry(DelayedOperation):
    """Writes that failed are tried again after ``RETRY_MS`` (one timer for all of them)."""

    def __init__(self, sync: ShareStateSync, deadline_ms: int) -> None:
        super().__init__(deadline_ms)
        self.sync = sync

    def try_complete(self, now_ms: int) -> bool:
        return False

    def on_complete(self, now_ms: int) -> None:
        self.sync.retry = None
        wakes, self.sync.wakes = self.sync.wakes, {}
        for wake in wakes.values():  # loads due again: their waiting fetches look again
            wake()
        self.sync.flush()


@dataclass
class _Tracked:
    leader_epoch: int
    state_epoch: int
    written: int = -1  # the share-partition's ``changes`` last written (or being written)
    durable: int = -1  # the ``changes`` of the last write that succeeded
    in_flight: bool = False
    waiters: list[tuple[int, Written]] = field(default_factory=list)
    """Acknowledgements waiting for the write of the state with at least that many changes."""

    def wake(self, upto: int | None, code: ErrorCode) -> None:
        """Tell the waiters the write covering them (``upto`` changes; None: all) answered ``code``."""
        due = [w for w in self.waiters if upto is None or w[0] <= upto]
        self.waiters = [w for w in self.waiters if upto is not None and w[0] > upto]
        for _, fn in due:
            fn(code)

    def fail_unsent(self, code: ErrorCode) -> None:
        """Answer ``code`` to the waiters the write in flight (if any) does not cover."""
        sent = self.written if self.in_flight else None
        due = [w for w in self.waiters if sent is None or w[0] > sent]
        self.waiters = [w for w in self.waiters if sent is not None and w[0] <= sent]
        for _, fn in due:
            fn(code)


@dataclass
class ShareStateSync:
    """Loads this leader's share-partitions from the persister and writes their changes."""

    persister: Persister
    partitions: SharePartitions
    tracked: dict[SPKey, _Tracked] = field(default_factory=dict)
    loading: dict[SPKey, int] = field(default_factory=dict)  # key -> leader epoch being read
    retry_at: dict[SPKey, int] = field(default_factory=dict)  # on the monotonic clock
    retry: _Retry | None = None
    wakes: dict[SPKey, Callable[[], None]] = field(default_factory=dict)
    """Loads that failed: who to wake when they may be tried again."""
    first_seen: dict[SPKey, tuple[int, int]] = field(default_factory=dict)
    """The log (start, end) the first load attempt saw: where a share-partition without state starts
    (``latest``: the end at its first use, however many retries its state took to read)."""

    def current(self, key: SPKey, leader_epoch: int) -> SharePartition | None:
        """The share-partition if it was loaded under ``leader_epoch``; one loaded under another
        epoch is dropped (leadership moved: the persisted state is the truth)."""
        sp = self.partitions.partitions.get(key)
        tracked = self.tracked.get(key)
        if sp is not None and (tracked is None or tracked.leader_epoch != leader_epoch):
            self.forget(key, ErrorCode.not_leader_or_follower)
            return None
        return sp

    def load(
        self,
        key: SPKey,
        leader_epoch: int,
        mono_ms: int,
        log_bounds: tuple[int, int],
        create: Callable[[ShareState | None, tuple[int, int]], SharePartition],
        wake: Callable[[], None],
    ) -> SharePartition | None:
        """Start (or continue) loading ``key`` at ``mono_ms`` (the monotonic clock a failed load's
        retry backoff runs on); the share-partition once loaded, else None.
        ``log_bounds``: where a share-partition without state would start now (start, end)."""
        if len(self.first_seen) >= MAX_PENDING and key not in self.first_seen:
            self.first_seen.clear()  # a bound on keys that never load; they start later instead
        bounds = self.first_seen.setdefault(key, log_bounds)
        if key in self.loading:
            return None
        if self.retry_at.get(key, 0) > mono_ms:
            if len(self.wakes) < MAX_PENDING:
                self.wakes[key] = wake
            self._arm_retry()
            return None
        self.loading[key] = leader_epoch
        answered_now = True

        def done(code: ErrorCode, state: ShareState | None) -> None:
            if self.loading.get(key) != leader_epoch:
                return
            del self.loading[key]
            if code is not ErrorCode.none or state is None:
                log.info("reading the share state of %s: %s", key, code.name)
                self.retry_at[key] = self.persister.broker.mono_ms + RETRY_MS
                if len(self.wakes) < MAX_PENDING:
                    self.wakes[key] = wake
                self._arm_retry()
            else:
                self.retry_at.pop(key, None)
                restored = state.start_offset >= 0
                try:
                    sp = create(state if restored else None, bounds)
                except KafkaError as exc:  # no room for another share-partition: try again later
                    log.info("loading the share-partition %s: %s", key, exc)
                    self.retry_at[key] = self.persister.broker.mono_ms + RETRY_MS
                    return
                self.first_seen.pop(key, None)
                # a new share-partition is written at once (where it starts), a restored one on change
                changes = sp.changes if restored else -1
                old = self.tracked.get(key)
                if old is not None:  # dropped unseen (a memory bound): nothing will write its acks
                    old.fail_unsent(ErrorCode.not_leader_or_follower)
                self.tracked[key] = _Tracked(leader_epoch, state.state_epoch, changes, changes)
            if not answered_now:
                wake()

        self.persister.read(StateKey(key[0], key[1], key[2]), leader_epoch, done)
        answered_now = False
        return self.partitions.partitions.get(key) if key in self.tracked else None

    def when_written(self, key: SPKey, changes: int, fn: Written) -> bool:
        """Tell ``fn`` the answer code of the write that covers the share-partition's state with
        ``changes`` (the next :meth:`flush` starts it); False, and ``fn`` is not kept, when that state
        is already written or the share-partition is not tracked."""
        tracked = self.tracked.get(key)
        if tracked is None or changes <= tracked.durable:  # one per acknowledgement in flight
            return False
        tracked.waiters.append((changes, fn))
        return True

    def forget(self, key: SPKey, code: ErrorCode) -> None:
        """Drop the share-partition (reloaded from the persisted state when next used): the
        acknowledgements no write will cover are answered ``code``; those of a write in flight wait
        for its outcome (it was sent: it may be persisted)."""
        self.partitions.partitions.pop(key, None)
        tracked = self.tracked.pop(key, None)
        self.loading.pop(key, None)
        if tracked is not None:
            tracked.fail_unsent(code)

    def flush(self) -> None:
        """Write every loaded share-partition whose state changed since its last write."""
        for key, sp in list(self.partitions.partitions.items()):
            tracked = self.tracked.get(key)
            if tracked is None or tracked.in_flight or tracked.written == sp.changes:
                continue
            self._write(key, sp, tracked)

    def _arm_retry(self) -> None:
        if self.retry is None:
            broker = self.persister.broker
            self.retry = _Retry(self, broker.now_ms + RETRY_MS)
            broker.purgatory.try_complete_else_watch(self.retry, (), broker.now_ms)

    def _write(self, key: SPKey, sp: SharePartition, tracked: _Tracked) -> None:
        tracked.in_flight = True
        previous, upto = tracked.written, sp.changes
        tracked.written = upto

        def done(code: ErrorCode) -> None:
            tracked.in_flight = False
            current = self.tracked.get(key) is tracked and self.partitions.partitions.get(key) is sp
            if code is ErrorCode.none:
                tracked.durable = max(tracked.durable, upto)
                sp.complete_transitions(upto, commit=True)
                tracked.wake(upto, code)
                if current and sp.changes != tracked.written:
                    self._write(key, sp, tracked)  # what changed while this write was in flight
                elif not current:
                    tracked.wake(None, ErrorCode.not_leader_or_follower)  # dropped: never written
                return
            log.info("writing the share state of %s: %s", key, code.name)
            sp.complete_transitions(upto, commit=False)
            answer = persister_error(code)
            if not current:
                tracked.wake(None, answer)
            elif code in FENCED:
                self.forget(key, answer)  # a newer leader or state: reload before serving again
            else:
                tracked.written = previous  # written again by the next flush, at the latest the retry's
                tracked.wake(upto, answer)
                self._arm_retry()

        state = StateWrite(
            StateKey(key[0], key[1], key[2]),
            tracked.state_epoch,
            tracked.leader_epoch,
            sp.written_start(),
            tuple(StateBatch(*b) for b in sp.state_batches()),
        )
        try:
            self.persister.write(state, done)
        except KafkaError as exc:  # Kafka wraps a write that threw: IllegalStateException
            log.info("writing the share state of %s: %s", key, exc)
            done(ErrorCode.unknown_server_error)
