"""What ShareFetch (78) and ShareAcknowledge (79) share: request checks, the share session, the
partition lookup on the leader and applying acknowledgement batches.

Kafka: ``core/src/main/scala/kafka/server/KafkaApis.scala`` (``handleShareFetchRequest``,
``handleShareAcknowledgeRequest``: an empty group or member id is INVALID_REQUEST; session
errors are top-level), KIP-932's share session table (epoch 0 with a session in the cache discards
it, releasing its acquired records; -1 releases them and removes the session),
``core/src/main/java/kafka/server/share/SharePartitionManager.java`` (``newContext``, ``acknowledge``)
and ``SharePartition.java``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..configs.group_configs import reset_duration_ms
from ..group.share_fetch import (
    MAX_ACK_BATCHES,
    MAX_REQUEST_PARTITIONS,
    MAX_SESSION_PARTITIONS,
    SharePartitions,
    SPKey,
)
from ..group.share_partition import (
    MAX_ACK_SPAN,
    AckBatch,
    AutoOffsetReset,
    SharePartition,
    SharePartitionConfig,
)
from ..group.share_persister import ShareStateSync
from ..group.share_session import INITIAL_EPOCH, ShareSession
from ..group.share_state import WRITE_TIMEOUT_MS
from ..group.share_state_records import ShareState
from .access import GROUP, TOPIC, Op, allowed
from .later import LaterReply
from .registry import Reply, Respond

if TYPE_CHECKING:
    from ..partition import Partition
    from ..request_context import RequestContext
    from .host import HandlerHost

TP = tuple[uuid.UUID, int]
Render = Callable[[dict[TP, ErrorCode]], ResponsePayload]
"""Builds a ShareFetch or ShareAcknowledge answer from its partitions' acknowledgement errors."""


@dataclass(frozen=True, slots=True)
class Located:
    """A partition of the request: the share-partition on this leader, or the error to answer."""

    tp: TP
    sp: SharePartition | None
    part: Partition | None
    error: ErrorCode
    leader: tuple[int, int] = (-1, -1)  # the partition's leader and epoch, from the metadata image
    loading: bool = False  # the share-partition's persisted state is being read (share_persister.py)


def get(obj: Any, name: str, default: Any) -> Any:
    return getattr(obj, name, default)


def partitions_of(request: Any) -> list[tuple[TP, tuple[Any, ...]]]:
    """(topic id, index) and the acknowledgement batches of every partition a ShareFetch or
    ShareAcknowledge names; INVALID_REQUEST past the request bounds and for v2's renew
    acknowledgements (KIP-1222, not supported)."""
    out: list[tuple[TP, tuple[Any, ...]]] = []
    for topic in request.topics:
        for p in topic.partitions:
            batches = tuple(get(p, "acknowledgement_batches", ()))
            if len(out) >= MAX_REQUEST_PARTITIONS or len(batches) > MAX_ACK_BATCHES:
                raise KafkaError(ErrorCode.invalid_request, "too many partitions or acknowledgement batches")
            out.append(((topic.topic_id, int(p.partition_index)), batches))
    if bool(getattr(request, "is_renew_ack", False)):
        raise KafkaError(ErrorCode.invalid_request, "renew acknowledgements are not supported")
    return out


def open_session(
    broker: HandlerHost,
    ctx: RequestContext,
    request: Any,
    *,
    added: Iterable[TP],
    forgotten: Iterable[TP] = (),
    can_open: bool = True,
) -> tuple[SharePartitions, ShareSession | None]:
    """Check the group, the member and the session epoch; raise KafkaError for a top-level error.

    UNKNOWN_MEMBER_ID for opening a session as a member the local coordinator does not know is issue
    19's rule: the Kafka sources read (SharePartitionManager.newContext at apache/kafka 1eb76443 and
    021becf7) open a session for any member id, so a Kafka target may answer NONE there."""
    added = tuple(added)
    group_id = request.group_id or ""
    member_id = request.member_id or ""
    if not allowed(broker, ctx, Op.READ, GROUP, group_id):
        raise KafkaError(ErrorCode.group_authorization_failed)
    if not group_id or not member_id:
        raise KafkaError(ErrorCode.invalid_request, "GroupId and MemberId must be given")
    epoch = int(request.share_session_epoch)
    if epoch == INITIAL_EPOCH and not can_open:
        raise KafkaError(
            ErrorCode.invalid_share_session_epoch, "ShareAcknowledge cannot open a share session"
        )
    shares = broker.group_coordinator.share
    leader = shares.leader
    if epoch == INITIAL_EPOCH and shares.member_known(group_id, member_id) is False:
        raise KafkaError(
            ErrorCode.unknown_member_id, f"{member_id} is not a member of share group {group_id}"
        )
    if epoch == INITIAL_EPOCH and leader.sessions.get(group_id, member_id) is not None:
        leader.release_member(group_id, member_id)  # KIP-932: a new session discards the old one's records
    held = leader.sessions.get(group_id, member_id)
    if (
        held is not None
        and epoch != INITIAL_EPOCH
        and len(held.partitions | set(added)) > MAX_SESSION_PARTITIONS
    ):
        raise KafkaError(ErrorCode.invalid_request, "too many partitions in the share session")
    session = leader.sessions.request(group_id, member_id, epoch, added=added, forgotten=forgotten)
    return leader, session


def group_config(broker: HandlerHost, leader: SharePartitions, group_id: str) -> SharePartitionConfig:
    """The broker's share-partition config with the group's overrides (resource type 32, Kafka's
    ``GroupConfig``): ``share.auto.offset.reset`` (where a new share-partition starts) and
    ``share.record.lock.duration.ms`` (``SharePartition.recordLockDurationMsOrDefault``)."""
    overrides = broker.image.group_configs.get(group_id)
    if not overrides:
        return leader.config
    lock = overrides.get("share.record.lock.duration.ms")
    reset = overrides.get("share.auto.offset.reset", "latest")
    return replace(
        leader.config,
        lock_duration_ms=int(lock) if lock is not None else leader.config.lock_duration_ms,
        # by_duration: starts like earliest, from the offset locate() finds by timestamp
        auto_offset_reset=AutoOffsetReset.LATEST if reset == "latest" else AutoOffsetReset.EARLIEST,
    )


def _start_by_duration(broker: HandlerHost, part: Partition, group_id: str, now_ms: int) -> int | None:
    """Where a new share-partition of a ``share.auto.offset.reset=by_duration:<d>`` group starts: the
    first record stamped at or after ``now - d``, else the log end (Kafka's
    ``SharePartition``/``ShareGroupAutoOffsetResetStrategy`` BY_DURATION); None for another reset."""
    reset = broker.image.group_configs.get(group_id, {}).get("share.auto.offset.reset", "")
    duration_ms = reset_duration_ms(reset)
    if duration_ms is None:
        return None
    found = part.log.offset_for_timestamp(now_ms - duration_ms)
    return found[0] if found is not None else max(part.high_watermark, part.log.log_start_offset)


def locate(
    broker: HandlerHost, ctx: RequestContext, leader: SharePartitions, group_id: str, tp: TP
) -> Located:
    """The share-partition of ``tp`` on this broker: loaded from its persisted state on first use
    (and after a leadership change), else created at the log end, or at the log start for a group
    with ``share.auto.offset.reset=earliest``."""
    topic = broker.image.topic_by_id(tp[0]) if tp[0] is not None else None
    if topic is None:
        return Located(tp, None, None, ErrorCode.unknown_topic_id)
    if not allowed(broker, ctx, Op.READ, TOPIC, topic.name):
        return Located(tp, None, None, ErrorCode.topic_authorization_failed)
    info = topic.partitions.get(tp[1])
    if info is None:
        return Located(tp, None, None, ErrorCode.unknown_topic_or_partition)
    known = (info.leader, info.leader_epoch)
    part = broker.partition(topic.name, tp[1])
    if part is None or not part.is_leader:
        return Located(tp, None, part, ErrorCode.not_leader_or_follower, known)
    config = group_config(broker, leader, group_id)
    key = (group_id, tp[0], tp[1])
    sync = broker.group_coordinator.share.sync

    # Where a share-partition without state starts: the log as its first use sees it (the persister
    # keeps the first bounds it was given, however long the state takes to read).
    log_end = max(part.high_watermark, part.log.log_start_offset)
    first = part.log.log_start_offset
    if key not in leader.partitions:
        start = _start_by_duration(broker, part, group_id, ctx.received_ms)
        first = first if start is None else min(max(start, first), log_end)

    def create(state: ShareState | None, bounds: tuple[int, int]) -> SharePartition:
        """The share-partition, from its persisted state, else at the log end (or start) of ``bounds``."""
        sp = leader.get_or_create(key, log_start=bounds[0], log_end=bounds[1], config=config)
        if state is not None:
            sp.restore(state.start_offset, [astuple(b) for b in state.batches])
        return sp

    def wake() -> None:  # a fetch waiting on the partition looks again
        broker.notify_partition_changed((topic.name, tp[1]), broker.now_ms)

    try:
        sp = sync.current(key, part.leader_epoch) or sync.load(
            key, part.leader_epoch, broker.mono_ms, (first, log_end), create, wake
        )
    except KafkaError as exc:
        return Located(tp, None, part, exc.code)
    if sp is None:  # its persisted state is being read
        return Located(tp, None, part, ErrorCode.none, known, loading=True)
    sp.config = config  # the lock duration is read at each acquisition, so a change applies at once
    sp.log_start_moved(part.log.log_start_offset)
    return Located(tp, sp, part, ErrorCode.none)


@dataclass
class Acked:
    """The acknowledgements of one request waiting for their state writes: Kafka answers a
    partition once ``SharePartition.acknowledge``'s future completes, after the persister's write,
    with the write's error when it failed (``SharePartitionManager.acknowledge``:
    ``Errors.forException``)."""

    waiting: dict[TP, int] = field(default_factory=dict)
    errors: dict[TP, ErrorCode] = field(default_factory=dict)
    done: Callable[[], None] | None = None
    """Called when the last write is decided (the answer waiting for it)."""

    def wait_for(self, sync: ShareStateSync, key: SPKey, changes: int, tp: TP) -> None:
        """Wait for the write of ``key``'s state with ``changes`` (the ack made it)."""

        def written(code: ErrorCode) -> None:
            if self.waiting.get(tp, 0) <= 0:
                return
            self.waiting[tp] -= 1
            if code is not ErrorCode.none:
                self.errors[tp] = code
            if not self.pending() and self.done is not None:
                self.done()

        self.waiting[tp] = self.waiting.get(tp, 0) + 1
        if not sync.when_written(key, changes, written):
            self.waiting[tp] -= 1

    def pending(self) -> bool:
        return any(n > 0 for n in self.waiting.values())

    def outcome(self, timed_out: bool) -> dict[TP, ErrorCode]:
        """Each partition's acknowledgement error: its write's; REQUEST_TIMED_OUT for one still
        undecided at the answer's deadline (it may yet be written, so neither NONE nor the
        rollback's error would be true)."""
        out = dict(self.errors)
        if timed_out:
            out.update({tp: ErrorCode.request_timed_out for tp, n in self.waiting.items() if n > 0})
        return out


def with_errors(
    entries: Iterable[tuple[TP, dict[str, Any]]], errors: dict[TP, ErrorCode], name: str
) -> list[tuple[TP, dict[str, Any]]]:
    """The answer's partition entries with the acknowledgement errors set in field ``name``."""
    return [(tp, entry | {name: errors[tp]} if tp in errors else entry) for tp, entry in entries]


def render_with(
    cls: Any, body: dict[str, Any], entries: Iterable[tuple[TP, dict[str, Any]]], name: str
) -> Render:
    """The answer (response class ``cls``, top-level ``body``) with its partition ``entries``, their
    acknowledgement errors set in field ``name`` once known."""
    fixed = list(entries)

    def render(errors: dict[TP, ErrorCode]) -> ResponsePayload:
        answered = group_by_topic(with_errors(fixed, errors, name))
        answer: ResponsePayload = build(cls, {**body, "error_code": ErrorCode.none, "responses": answered})
        return answer

    return render


def acknowledge_all(
    broker: HandlerHost,
    ctx: RequestContext,
    leader: SharePartitions,
    request: Any,
    named: list[tuple[TP, tuple[Any, ...]]],
    acked: Acked,
    *,
    without_batches: bool,
) -> list[tuple[TP, Located, ErrorCode | None]]:
    """Locate every partition named and apply its acknowledgement batches (a partition's all or
    none, ``without_batches``: a partition named with none too); each partition, where it is, and its
    acknowledgement's error code (None: nothing applied). A share-partition whose state is still
    being read holds nothing: INVALID_RECORD_STATE. ``acked`` waits for the writes of the
    acknowledgements applied (the answer carries their outcome)."""
    group_id, member_id = request.group_id or "", request.member_id or ""
    sync = broker.group_coordinator.share.sync
    out: list[tuple[TP, Located, ErrorCode | None]] = []
    for tp, batches in named:
        loc = locate(broker, ctx, leader, group_id, tp)
        code: ErrorCode | None = None
        if loc.sp is not None and (batches or without_batches):
            code, changes = acknowledge(loc.sp, member_id, batches, broker.mono_ms)
            if changes:
                acked.wait_for(sync, (group_id, tp[0], tp[1]), changes, tp)
        elif loc.loading and (batches or without_batches):
            code = ErrorCode.invalid_record_state
        out.append((tp, loc, code))
    return out


def acknowledge(
    sp: SharePartition, member_id: str, batches: tuple[Any, ...], mono_ms: int
) -> tuple[ErrorCode, int]:
    """Apply a partition's acknowledgement batches (all or none), after the locks that ran out by
    ``mono_ms`` (the monotonic clock) are released; the partition's error code and the change
    number of the transition made (0: none, nothing to wait for)."""
    sp.expire_locks(mono_ms)
    acks: list[AckBatch] = []
    for b in batches:
        first, last = int(b.first_offset), int(b.last_offset)
        types = tuple(int(t) for t in b.acknowledge_types)
        if last < first or last - first >= MAX_ACK_SPAN or len(types) > MAX_ACK_SPAN or not types:
            return ErrorCode.invalid_request, 0
        acks.append(AckBatch(first, last, types))
    if not acks:
        return ErrorCode.none, 0
    try:
        return ErrorCode.none, sp.acknowledge(member_id, acks)
    except KafkaError as exc:
        return exc.code, 0


def leader_of(loc: Located) -> dict[str, int]:
    """CurrentLeader of a NOT_LEADER_OR_FOLLOWER entry: the replica's view, else the metadata's."""
    if loc.part is not None and loc.part.leader_id >= 0:
        return {"leader_id": loc.part.leader_id, "leader_epoch": loc.part.leader_epoch}
    return {"leader_id": loc.leader[0], "leader_epoch": loc.leader[1]}


def partition_answer(tp: TP, loc: Located) -> dict[str, Any]:
    """A partition's answer as ShareFetch and ShareAcknowledge start it: its error and, for
    NOT_LEADER_OR_FOLLOWER, the current leader."""
    leader = leader_of(loc) if loc.error is ErrorCode.not_leader_or_follower else None
    return {
        "partition_index": tp[1],
        "error_code": loc.error,
        "current_leader": leader or {"leader_id": -1, "leader_epoch": -1},
    }


def group_by_topic(entries: Iterable[tuple[TP, dict[str, Any]]]) -> list[dict[str, Any]]:
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (topic_id, _), entry in entries:
        by_topic.setdefault(topic_id, []).append(entry)
    return [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]


def _later(broker: HandlerHost, ctx: RequestContext, render: Render, acked: Acked) -> LaterReply:
    """The answer, rendered once every write ``acked`` waits for is decided, or at the deadline."""
    reply = LaterReply(
        ctx,
        lambda timed_out: render(acked.outcome(bool(timed_out))),
        ctx.received_ms + WRITE_TIMEOUT_MS,
        True,
        "share-ack",
        broker,
    )
    acked.done = lambda: reply.answer(False)
    return reply


def after_written(broker: HandlerHost, ctx: RequestContext, render: Render, acked: Acked) -> Reply:
    """The answer once the acknowledged states' writes are decided (Kafka's
    ``SharePartition.acknowledge`` completes after the persister's write), each acknowledgement
    with its write's error; at once when none is pending. ``render`` builds the answer from the
    partitions' acknowledgement errors, so a write failing later is in it."""
    if not acked.pending():
        return Respond(render(acked.outcome(False)))
    return _later(broker, ctx, render, acked).deferred()


def respond_when_written(broker: HandlerHost, ctx: RequestContext, render: Render, acked: Acked) -> None:
    """:func:`after_written` for an answer sent from a delayed operation (a ShareFetch that waited
    for records): sent now, or once the writes are decided."""
    if not acked.pending():
        ctx.respond(render(acked.outcome(False)))
        return
    reply = _later(broker, ctx, render, acked)
    broker.purgatory.try_complete_else_watch(reply, (reply.key,), broker.now_ms)
