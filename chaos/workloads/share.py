"""The share-group workload (KIP-932, issue 19): producers write unique values, share consumers of
one share group take them through the raw protocol and acknowledge each one.

Producers are the queue workload's (confluent-kafka, acks and idempotence as the campaign says).
Consumers speak ShareGroupHeartbeat (76) to the group's coordinator and ShareFetch (78) /
ShareAcknowledge (79) to each partition's leader through :class:`fixtures.wire.share.ShareConsumer`,
the way Kafka's ``ShareConsumerImpl`` does, because only the raw answers carry what the checker
needs: each acquired record's delivery count (AcquiredRecords) and each partition's acknowledgement
error code. Before any consumer joins, the group gets ``share.auto.offset.reset=earliest`` (so the
share-partitions start at the log start, not at the log end a late first fetch would find) and a
short ``share.record.lock.duration.ms`` (:data:`LOCK_MS`, so locks that run out are seen within a
campaign), checked on every broker (``ops.wait_config_everywhere``).

What a consumer does with each record is a function of its value (the same for every consumer),
so the history exercises every path: most are ACCEPTed; some are RELEASEd once, then accepted
(redelivered with count 2); some REJECTed (archived); a few "poison" records always RELEASEd until
the delivery limit archives them; and now and then (seeded) a record is not acknowledged at all, so
its lock runs out and it comes back. A consumer that meets a connection error or a lost routing
reconnects (a new share session on that leader, the same member); one whose bootstrap broker
stops answering, or that fails :data:`MAX_FAILURES` times in a row, starts over as a new member (a
new process id in the history) after leaving the group if it can.

History ops (the checker is :mod:`chaos.checkers.share`):

* ``share-fetch``: invoke ``value={member, leader, partitions}``; ``ok`` with ``records``
  ``[(topic, partition, offset, value)]`` and ``value.counts`` (each record's delivery count, in
  order) and ``value.errors`` (per-partition error names); ``fail`` with a top-level error; ``info``
  when no answer came (records may have been acquired and never seen: their locks run out).
* ``share-ack``: one ShareAcknowledge of one partition: ``value.acks`` ``[[offset, type, value]]``
  (1 ACCEPT, 2 RELEASE, 3 REJECT); ``ok`` (the partition's code NONE: applied), ``fail`` (an error
  that means nothing was applied: :data:`DEFINITE`), ``info`` (no answer, or another error).
* ``share-open``: a share session (re)opened with epoch 0 (which releases what the member held).
* ``share-restart``: ``info`` with the error that ended a member (the slot starts a new one).
* ``share-end`` (process ``share``): the consumers stopped after the drain; ``value.drained`` says
  whether every acknowledged send had been finished (accepted, rejected or archived) by then.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
import zlib
from typing import Any

from kio.schema.errors import ErrorCode

from chaos.history import Op, Recorder
from fixtures.wire import Capabilities, Router, RoutingError, WireClient, WireError, ops
from fixtures.wire.share import ACCEPT, REJECT, RELEASE, TP, ShareConsumer, acquired_offsets, partition_of

from .queue import QueueOptions, QueueWorkload

BASE = 300
"""Consumer processes: ``BASE + slot + 10 * incarnation``."""
END_PROCESS = "share"
CONSUMERS = 4
LOCK_MS = 3000
LOCK_CONFIG = "share.record.lock.duration.ms"
SESSION_CONFIG = "share.session.timeout.ms"
SESSION_MS = 10_000
"""The group's session timeout when the target allows it (Kafka's floor is
``group.share.min.session.timeout.ms``, 45 s by default): a member that died without leaving keeps
its partitions until then, which a drain of 30 s would not outlast."""
DEFAULT_LOCK_MS = 30_000
"""``group.share.record.lock.duration.ms``'s default: the lock when the group's own is refused (Kafka
bounds a group's lock by the broker's ``group.share.min.record.lock.duration.ms``, 15 s by default)."""
DELIVERY_LIMIT = 5
"""``group.share.delivery.count.limit``'s default (Kafka's ShareGroupConfig; the reference's too)."""
REQUEST_TIMEOUT_S = 5.0
FETCH_WAIT_MS = 250
MAX_RECORDS = 100
HEARTBEAT_CAP_S = 1.0
MAX_INCARNATIONS = 1000
RESTART_PAUSE_S = 1.0
DRAIN_FACTOR = 3
"""The campaign's drain bound for this workload is its ``drain_s`` times this (90 s by default; it
ends as soon as every acknowledged send is finished): a share-partition that lost its state
delivers its whole log again, at the pace of four Python consumers on a loaded machine."""
MAX_FAILURES = 50
FAILURE_PAUSE_S = 0.2
FORGET_PROBABILITY = 0.003
DEFINITE = {
    ErrorCode.invalid_record_state,
    ErrorCode.invalid_request,
    ErrorCode.invalid_share_session_epoch,
    ErrorCode.share_session_not_found,
    ErrorCode.unknown_member_id,
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.unknown_topic_id,
    ErrorCode.group_authorization_failed,
    ErrorCode.topic_authorization_failed,
}
"""Acknowledgement errors after which nothing was applied (the broker refused before changing any
state: ``SharePartition.acknowledge`` checks every batch first and rolls back on error)."""
SESSION_LOST = {ErrorCode.invalid_share_session_epoch, ErrorCode.share_session_not_found}
MEMBER_LOST = {ErrorCode.unknown_member_id, ErrorCode.fenced_member_epoch}
COORDINATOR_MOVED = {
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress,
}
LEADER_MOVED = {
    ErrorCode.not_leader_or_follower,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.unknown_topic_id,
}


def decide(value: str, count: int, rng: random.Random) -> int | None:
    """What every consumer does with ``value`` at delivery ``count``: an acknowledgement type, or None
    (leave it, its lock runs out)."""
    bucket = zlib.crc32(value.encode()) % 100
    if bucket < 2:
        return RELEASE  # poison: released until the delivery limit archives it
    if bucket < 5:
        return REJECT
    if bucket < 12 and count == 1:
        return RELEASE
    if rng.random() < FORGET_PROBABILITY:
        return None
    return ACCEPT


class ShareWorkload(QueueWorkload):
    def __init__(
        self,
        recorder: Recorder,
        bootstrap: str,
        options: QueueOptions,
        *,
        group: str,
        seed: int = 7,
        consumers: int = CONSUMERS,
        lock_ms: int = LOCK_MS,
    ) -> None:
        options.consumers = 0  # the share consumers below read; no confluent consumer does
        super().__init__(recorder, bootstrap, options, group=group)
        self.seed = seed
        self.slots = consumers
        self.lock_ms = lock_ms
        self._lock = threading.Lock()
        self._produced: set[str] = set()
        self._finished: set[str] = set()
        self._ended = False
        self.deliveries = 0
        recorder.history.meta["share"] = {
            "group": group,
            "delivery_limit": DELIVERY_LIMIT,
            "lock_ms": lock_ms,
            "consumers": consumers,
        }

    # --- setup ---------------------------------------------------------------------------------

    def _router(self, opened: list[WireClient]) -> tuple[Router, Capabilities]:
        def open_connection(address: str) -> WireClient:
            client = WireClient(address, client_id=f"kh-share-{self.group}", timeout_s=REQUEST_TIMEOUT_S)
            opened.append(client)
            return client

        failure: Exception | None = None
        for address in self.bootstrap.split(","):  # the first broker that answers
            try:
                first = open_connection(address)
                caps = Capabilities(first.api_versions())
                router = Router(first, open_connection, {}, caps)
                router.refresh([self.options.topic])
                return router, caps
            except (WireError, OSError) as exc:
                failure = exc
        raise WireError(f"no broker of {self.bootstrap} answers: {failure}")

    def prepare(self) -> None:
        """The group's configs, applied on every broker, before any member joins."""
        opened: list[WireClient] = []
        try:
            router, caps = self._router(opened)
            for api in ("share_group_heartbeat", "share_fetch", "share_acknowledge"):
                if not caps.supports(api):
                    raise RuntimeError(f"the target does not advertise {api} (KIP-932 share groups)")
            self._set(router, caps, "share.auto.offset.reset", "earliest", required=True)
            if not self._set(router, caps, LOCK_CONFIG, str(self.lock_ms), required=False):
                effective = ops.config_value(router.any(), caps, ops.GROUP_RESOURCE, self.group, LOCK_CONFIG)
                self.lock_ms = int(effective) if effective and effective.isdigit() else DEFAULT_LOCK_MS
            self.recorder.history.meta["share"]["lock_ms"] = self.lock_ms
            session = self._set(router, caps, SESSION_CONFIG, str(SESSION_MS), required=False)
            self.recorder.history.meta["share"]["session_timeout_ms"] = SESSION_MS if session else None
        finally:
            for client in opened:
                client.close()

    def _set(self, router: Router, caps: Capabilities, key: str, value: str, *, required: bool) -> bool:
        """Set one config of the group and wait until every broker shows it; a refusal raises when
        ``required``, else returns False (the target keeps its own value)."""
        answer = ops.incremental_alter(router.any(), caps, ops.GROUP_RESOURCE, self.group, {key: value})
        if (code := _code(answer.error_code)) != ErrorCode.none:
            if required:
                raise RuntimeError(f"IncrementalAlterConfigs {key}={value} of {self.group}: {code.name}")
            return False
        if not ops.wait_config_everywhere(router, caps, ops.GROUP_RESOURCE, self.group, key, value):
            raise RuntimeError(f"a broker did not apply {key}={value} to group {self.group}")
        return True

    def start(self) -> None:
        self.prepare()
        super().start()  # the producers
        self._start_slots(self._slot, self.slots, "share")

    # --- bookkeeping for the drain -------------------------------------------------------------

    def _delivery_callback(self, invoked: Op) -> Any:
        inner = super()._delivery_callback(invoked)

        def on_delivery(err: Any, msg: Any) -> None:
            inner(err, msg)
            if err is None:
                with self._lock:
                    self._produced.add(str(invoked.value))

        return on_delivery

    def wait_ready(self, timeout_s: float) -> float | None:
        """Seconds until a consumer was first given a record; None if none was within ``timeout_s``."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if self.deliveries > 0:
                return time.monotonic() - started
            self._stop_consuming.wait(0.1)
        return None

    def pending(self) -> int:
        with self._lock:
            return len(self._produced - self._finished)

    def caught_up(self, highs: dict[tuple[str, int], int]) -> bool:
        """Every send acknowledged to a producer has been finished by some consumer (the drain's end:
        :data:`DRAIN_FACTOR` times the campaign's bound at most)."""
        return self.pending() == 0

    def final_read(self, highs: dict[tuple[str, int], int], timeout_s: float, **kwargs: Any) -> bool:
        """The consumers stop (once: the restart phase reads through here too), ``share-end`` is
        recorded, then the queue workload's final read of the whole log."""
        if not self._ended:
            self._ended = True
            self._stop_consuming.set()
            for thread in self._threads:
                if thread.name.startswith("share-"):
                    thread.join(REQUEST_TIMEOUT_S * 4)
            left = self.pending()
            end = self.recorder.invoke(END_PROCESS, "share-end")
            self.recorder.complete(end, "ok", value={"drained": left == 0, "pending": left})
        return super().final_read(highs, timeout_s, **kwargs)

    # --- consumers ---------------------------------------------------------------------------------

    def _slot(self, slot: int) -> None:
        rng = random.Random(self.seed * 1000 + 300 + slot)
        for incarnation in range(MAX_INCARNATIONS):
            if self._stop_consuming.is_set():
                return
            opened: list[WireClient] = []
            process = BASE + slot + 10 * incarnation
            member: _Member | None = None
            try:
                router, caps = self._router(opened)
                member = _Member(self, process, router, caps, rng)
                member.run()
            except (WireError, RoutingError, OSError, RuntimeError) as exc:
                self._count_error(f"share:{type(exc).__name__}")
                ended = self.recorder.invoke(process, "share-restart")
                self.recorder.complete(ended, "info", error=f"{type(exc).__name__}: {str(exc)[:300]}")
                if member is not None and not member.left:
                    self._leave(member.member.member_id)
                self._stop_consuming.wait(RESTART_PAUSE_S)
            finally:
                for client in opened:
                    client.close()

    def _leave(self, member_id: str) -> None:
        """A member given up on leaves the group over fresh connections, if a broker answers: until it
        does (or its session times out) the assignor keeps giving it partitions."""
        opened: list[WireClient] = []
        try:
            router, caps = self._router(opened)
            ShareConsumer(router.to_coordinator(self.group), router.any(), caps, self.group,
                          member_id=member_id).leave()  # fmt: skip
        except (WireError, RoutingError, OSError):
            self._count_error("share:leave")
        finally:
            for client in opened:
                client.close()

    def finish(self, value: str) -> None:
        with self._lock:
            self._finished.add(value)


class _Member:
    """One share-group member's life: joined on creation of its first heartbeat, ended by an error
    (raised: the slot starts a new member) or by the workload's stop (it leaves)."""

    def __init__(
        self, w: ShareWorkload, process: int, router: Router, caps: Capabilities, rng: random.Random
    ) -> None:
        self.w, self.process, self.router, self.caps, self.rng = w, process, router, caps, rng
        self.topic = w.options.topic
        self.topic_id = ops.topic_id(router, caps, self.topic)
        self.member = ShareConsumer(
            self._coordinator(), router.any(), caps, w.group, member_id=str(uuid.uuid4())
        )
        self.sessions: dict[int, ShareConsumer] = {}
        self.next_heartbeat = 0.0
        self.coordinator_lost = False
        self.left = False
        self.failures = 0
        """Connection failures in a row; past :data:`MAX_FAILURES` the member gives up (raises)."""

    def _coordinator(self) -> WireClient:
        return self.router.to_coordinator(self.w.group)

    def run(self) -> None:
        self._heartbeat(join=True)
        try:
            while not self.w._stop_consuming.is_set():
                if time.monotonic() >= self.next_heartbeat:
                    self._heartbeat()
                fetched = self._fetch_round()
                if not fetched:
                    self.w._stop_consuming.wait(0.1)
        finally:
            for session in self.sessions.values():
                if session.session_epoch != 0:
                    with contextlib.suppress(Exception):
                        session.close()  # what it holds goes back at once
            with contextlib.suppress(Exception):
                answer = self.member.leave()  # its partitions go to the others now, not at its timeout
                self.left = _code(answer.error_code) == ErrorCode.none

    def _failed(self, client: WireClient | None) -> None:
        """A connection failed (or could not be opened: None): forget it (the next request opens a
        new one), and give up after :data:`MAX_FAILURES` failures in a row."""
        if client is not None:
            self.router.disconnect(client)
        self.failures += 1
        if self.failures > MAX_FAILURES:
            raise WireError(f"{self.failures} connection failures in a row")
        self.w._stop_consuming.wait(FAILURE_PAUSE_S)

    # --- membership ---------------------------------------------------------------------------

    def _heartbeat(self, join: bool = False) -> None:
        if self.coordinator_lost:
            self.member.coordinator = self._coordinator()
            self.coordinator_lost = False
        join = join or self.member.member_epoch == 0
        try:
            answer = self.member.heartbeat([self.topic] if join else None, epoch=0 if join else None)
        except (WireError, OSError):
            self.router.forget("coordinator", (self.w.group, 0))
            self.coordinator_lost = True
            self.next_heartbeat = time.monotonic() + FAILURE_PAUSE_S
            self._failed(self.member.coordinator)
            return
        self.failures = 0
        code = _code(answer.error_code)
        if code in COORDINATOR_MOVED:
            self.router.forget("coordinator", (self.w.group, 0))
            self.member.coordinator = self._coordinator()
        elif code in MEMBER_LOST:
            self.w._count_error(f"heartbeat:{code.name}")
            self.member.member_epoch = 0
            self.member.assigned = set()
            self._reopen_all("rejoin")
            answer = self.member.heartbeat([self.topic], epoch=0)
            code = _code(answer.error_code)
        if code != ErrorCode.none:
            self.w._count_error(f"heartbeat:{code.name}")
        interval: Any = getattr(answer, "heartbeat_interval", None)
        seconds = interval.total_seconds() if hasattr(interval, "total_seconds") else HEARTBEAT_CAP_S
        self.next_heartbeat = time.monotonic() + min(max(seconds, 0.1), HEARTBEAT_CAP_S)

    def _reopen_all(self, why: str) -> None:
        for leader, session in self.sessions.items():
            if session.session_epoch != 0:
                session.session_epoch = 0
                self._opened(leader, why)

    def _opened(self, leader: int, why: str) -> None:
        invoked = self.w.recorder.invoke(self.process, "share-open", value={"leader": leader, "why": why})
        self.w.recorder.complete(
            invoked, "ok", value={"member": self.member.member_id, "leader": leader, "why": why}
        )

    # --- fetching ---------------------------------------------------------------------------------

    def _fetch_round(self) -> int:
        by_leader: dict[int, list[TP]] = {}
        for tp in sorted(self.member.assigned):
            if tp[0] != self.topic_id:
                continue
            leader = self.router.leader_of(self.topic, tp[1])
            if leader is not None:
                by_leader.setdefault(leader, []).append(tp)
        got = 0
        for leader, tps in sorted(by_leader.items()):
            if self.w._stop_consuming.is_set():
                break
            try:
                got += self._fetch(leader, tps)
                self.failures = 0
            except (WireError, OSError):  # the leader died or was cut off: a new session elsewhere
                session = self.sessions.pop(leader, None)
                for tp in tps:
                    self.router.forget("leader", (self.topic, tp[1]))
                self._failed(session.leader if session is not None else None)
        return got

    def _session(self, leader: int) -> ShareConsumer:
        session = self.sessions.get(leader)
        if session is None:
            session = ShareConsumer(
                self.member.coordinator,
                self.router.node(leader),
                self.caps,
                self.w.group,
                member_id=self.member.member_id,
            )
            self.sessions[leader] = session
        if session.session_epoch == 0:
            self._opened(leader, "open")
        return session

    def _fetch(self, leader: int, tps: list[TP]) -> int:
        session = self._session(leader)
        recorder = self.w.recorder
        partitions = [p for _, p in tps]
        shown = {"member": self.member.member_id, "leader": leader, "partitions": partitions}
        invoked = recorder.invoke(self.process, "share-fetch", value=shown)
        try:
            answer = session.fetch(tps, max_records=MAX_RECORDS, max_wait_ms=FETCH_WAIT_MS)
        except WireError as exc:
            recorder.complete(invoked, "info", error=str(exc)[:200])
            raise
        code = _code(answer.error_code)
        if code != ErrorCode.none:
            recorder.complete(invoked, "fail", error=code.name)
            self._top_level(code, session, leader)
            return 0
        records: list[tuple[str, int, int, Any]] = []
        counts: list[int] = []
        errors: dict[int, str] = {}
        for tp in tps:
            entry = partition_of(answer, tp)
            if entry is None:
                continue
            part_code = _code(entry.error_code)
            if part_code != ErrorCode.none:
                errors[tp[1]] = part_code.name
                if part_code in LEADER_MOVED:
                    self.router.forget("leader", (self.topic, tp[1]))
                continue
            values = {r.offset: r.value for r in ops.data_records(entry)}
            for offset, count in sorted(acquired_offsets(answer, tp).items()):
                raw = values.get(offset)
                if raw is None:
                    errors.setdefault(tp[1], "ACQUIRED_WITHOUT_RECORD")
                    continue
                records.append((self.topic, tp[1], offset, raw.decode(errors="replace")))
                counts.append(count)
        recorder.complete(invoked, "ok", records=records, value={**shown, "counts": counts, "errors": errors})
        self.w.deliveries += len(records)
        self._acknowledge(session, leader, records, counts)
        return len(records)

    def _top_level(self, code: ErrorCode, session: ShareConsumer, leader: int) -> None:
        self.w._count_error(f"share:{code.name}")
        if code in SESSION_LOST:
            session.session_epoch = 0
        elif code in MEMBER_LOST:
            self.next_heartbeat = 0.0
            self.member.member_epoch = 0
            session.session_epoch = 0
            self._heartbeat(join=True)

    # --- acknowledging -------------------------------------------------------------------------

    def _acknowledge(
        self, session: ShareConsumer, leader: int, records: list[tuple[str, int, int, Any]], counts: list[int]
    ) -> None:
        by_partition: dict[int, list[tuple[int, int, str, int]]] = {}
        for (_t, partition, offset, value), count in zip(records, counts, strict=True):
            if count >= DELIVERY_LIMIT:
                self.w.finish(value)  # at the limit: archived unless accepted (or rejected) now
            kind = decide(value, count, self.rng)
            if kind is None:
                continue
            by_partition.setdefault(partition, []).append((offset, kind, value, count))
        for partition, acks in sorted(by_partition.items()):
            if self.w._stop_consuming.is_set() and session.session_epoch == 0:
                return
            self._ack(session, leader, partition, acks)

    def _ack(
        self, session: ShareConsumer, leader: int, partition: int, acks: list[tuple[int, int, str, int]]
    ) -> None:
        recorder = self.w.recorder
        tp: TP = (self.topic_id, partition)
        shown = {
            "member": self.member.member_id,
            "leader": leader,
            "acks": [[o, k, v] for o, k, v, _ in acks],
        }
        invoked = recorder.invoke(
            self.process, "share-ack", topic=self.topic, partition=partition, value=shown
        )
        try:
            answer = session.acknowledge({tp: [(o, o, k) for o, k, _v, _c in acks]})
        except WireError as exc:
            recorder.complete(invoked, "info", error=str(exc)[:200])
            raise
        code = _code(answer.error_code)
        if code == ErrorCode.none:
            entry = partition_of(answer, tp)
            code = _code(entry.error_code) if entry is not None else ErrorCode.unknown_server_error
            if code in LEADER_MOVED:
                self.router.forget("leader", (self.topic, partition))
        else:
            self._top_level(code, session, leader)
        outcome = "ok" if code == ErrorCode.none else "fail" if code in DEFINITE else "info"
        recorder.complete(invoked, outcome, error=None if outcome == "ok" else code.name)
        if outcome == "fail":
            self.w._count_error(f"ack:{code.name}")
            return
        for _offset, kind, value, _count in acks:
            if kind in (ACCEPT, REJECT):
                self.w.finish(value)


def _code(raw: Any) -> ErrorCode:
    """An answer's error code; one this client does not know reads as UNKNOWN_SERVER_ERROR."""
    try:
        return ErrorCode(int(raw))
    except ValueError:
        return ErrorCode.unknown_server_error
