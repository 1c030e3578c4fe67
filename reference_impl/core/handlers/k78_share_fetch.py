"""ShareFetch: v1-v2 (KIP-932). A share-group member fetches records it then holds under a lock.

Behaviour (Kafka's ``KafkaApis.handleShareFetchRequest``, ``SharePartitionManager.fetchMessages``
and ``SharePartition.acquire``, core/src/main/java/kafka/server/share/SharePartition.java): the
request carries the share session's epoch (0 opens a session, -1 closes it, else the session's
next epoch), the partitions to add to the session with their piggybacked acknowledgement batches
(applied first, answered in AcknowledgeErrorCode), and the partitions to forget. Then, unless the
epoch is -1, the broker acquires records for the member on every partition of the session it
leads: redeliveries first, then new records below the high watermark, at most ``MaxRecords``
(v1-v2) and the batches that fit in the partition's bytes; the answer carries the batches read
and AcquiredRecords ranges (first, last, delivery count). Records stay locked for
``group.share.record.lock.duration.ms``; the answer's AcquisitionLockTimeoutMs says so.
Opening a session over an existing one (epoch 0) and closing it (epoch -1) release what the
member still holds (KIP-932's share session table); so does the member leaving the group.
Errors, top-level: INVALID_REQUEST (empty group or member id, acknowledgements in the request that
opens the session, too many partitions or batches), GROUP_AUTHORIZATION_FAILED,
UNKNOWN_MEMBER_ID (opening a session for a member the local coordinator does not know: issue 19's
rule, not found in the Kafka sources read, see :func:`.share_common.open_session`),
SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED.
Per partition: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (with the
current leader), TOPIC_AUTHORIZATION_FAILED; acknowledgements: INVALID_RECORD_STATE,
INVALID_REQUEST.
Version notes: v1-v2, as Kafka's newest ShareFetchRequest.json (clients/src/main/resources/common/
message/, apache/kafka 08c855f4: validVersions 1-2; v0 was 4.0's early access, removed in 4.1) and
kio 0.6.5 define them. Acquisition counts records (MaxRecords is never exceeded, ShareAcquireMode's
record-limit behaviour) whatever v2's ShareAcquireMode says; Kafka's batch-optimized default may
exceed MaxRecords to end on a batch boundary. v2's renew acknowledgements (IsRenewAck, type 4,
KIP-1222) are INVALID_REQUEST here.
A fetch that acquires nothing waits up to MaxWaitMs (with MinBytes > 0) for records to acquire,
woken by produces and leadership changes on the session's partitions (DelayedShareFetch); a lock
that runs out during the wait counts as records to acquire only when the fetch is next woken.
A share-partition's state is read from the share coordinator when it is first used (and after a
leadership change; a fetch waits for it, at most LOAD_WAIT_MS past its MaxWaitMs) and written after
acknowledgements and expired locks (``group/share_persister.py``); the answer waits for the writes of
its acknowledgements, and AcknowledgeErrorCode carries a failed write's error (the records are back
with the member: Kafka's rollback), REQUEST_TIMED_OUT for one undecided at the deadline (as
ShareAcknowledge). Not implemented: NodeEndpoints (empty).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, millis
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..group.share_fetch import DEFAULT_MAX_RECORDS, MAX_RECORDS_PER_FETCH
from ..group.share_session import INITIAL_EPOCH
from ..purgatory import DelayedOperation
from .registry import Deferred, Reply, Respond, handles
from .share_common import (
    TP,
    Acked,
    Located,
    Render,
    acknowledge_all,
    after_written,
    locate,
    open_session,
    partition_answer,
    partitions_of,
    render_with,
    respond_when_written,
)

ACK_ERROR = "acknowledge_error_code"
LOAD_WAIT_MS = 10_000
"""How much longer than MaxWaitMs a fetch waits for its share-partitions' state to be read."""

if TYPE_CHECKING:
    from ..group.share_partition import SharePartition
    from ..request_context import RequestContext
    from .host import HandlerHost


@dataclass
class _Fetch:
    """One ShareFetch after its session and acknowledgement steps: what acquiring still has to fill."""

    ctx: RequestContext
    body: dict[str, Any]
    group_id: str
    member_id: str
    entries: dict[TP, dict[str, Any]]
    session: list[TP]
    budget: int
    remaining: int
    acked: Acked = field(default_factory=Acked)  # the acknowledgements' writes, waited for
    loading: bool = False  # a partition of the session had its state still being read
    answer_by_ms: int = 0  # MaxWaitMs, on the monotonic clock: no later than this once every state is read


class DelayedShareFetch(DelayedOperation):
    """A ShareFetch that acquired nothing, waiting up to MaxWaitMs for records to acquire
    (``core/src/main/java/kafka/server/share/DelayedShareFetch.java``)."""

    def __init__(self, broker: HandlerHost, state: _Fetch, deadline_ms: int) -> None:
        super().__init__(deadline_ms)
        self.broker = broker
        self.state = state

    def try_complete(self, now_ms: int) -> bool:
        leader = self.broker.group_coordinator.share.leader
        loading = False
        for tp in self.state.session:
            loc = locate(self.broker, self.state.ctx, leader, self.state.group_id, tp)
            if loc.loading:
                loading = True  # woken again once its state is read
                continue
            if loc.sp is None or loc.part is None:
                return self.force_complete(now_ms)  # an error to report: answer at once
            loc.sp.expire_locks(self.broker.mono_ms)
            if loc.sp.next_candidate() < loc.part.high_watermark:
                return self.force_complete(now_ms)
        if not loading and self.broker.mono_ms >= self.state.answer_by_ms:
            return self.force_complete(now_ms)  # every state read and MaxWaitMs already over
        return False

    def on_complete(self, now_ms: int) -> None:
        _fill(self.broker, self.state)
        self.broker.group_coordinator.share.sync.flush()
        respond_when_written(self.broker, self.state.ctx, _render(self.state), self.state.acked)


@handles(78, 1, 2)
def handle_share_fetch(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    cls = response_class(78, ctx.api_version)
    lock_ms = broker.config.get_int("group.share.record.lock.duration.ms")
    body: dict[str, Any] = {
        "throttle_time": 0,
        "acquisition_lock_timeout": lock_ms,
        "responses": [],
        "node_endpoints": [],
    }
    now = ctx.received_ms
    try:
        state = _prepare(broker, ctx, request, body)
    except KafkaError as exc:
        return Respond(build(cls, {**body, "error_code": exc.code, "error_message": exc.message}))
    if isinstance(state, tuple):
        broker.group_coordinator.share.sync.flush()
        entries, acked = state
        return after_written(broker, ctx, render_with(cls, body, entries.items(), ACK_ERROR), acked)
    acquired = _fill(broker, state)
    broker.group_coordinator.share.sync.flush()  # acknowledgements and expired locks, persisted
    max_wait = max(0, millis(request.max_wait)) if int(request.min_bytes) > 0 else 0
    keys = _watch_keys(broker, state.session)
    if acquired or not keys or (max_wait <= 0 and not state.loading):
        # Kafka answers once the piggybacked acknowledgements are written (handleAcknowledgements'
        # future); a fetch that waits for records answers when it is done waiting
        return after_written(broker, ctx, _render(state), state.acked)
    # Kafka's fetch waits for its share-partitions to initialize (SharePartitionManager.fetchMessages):
    # a partition whose state is being read holds the answer, up to LOAD_WAIT_MS past MaxWaitMs.
    state.answer_by_ms = broker.mono_ms + max_wait
    deadline = now + max_wait + (LOAD_WAIT_MS if state.loading else 0)
    return Deferred(DelayedShareFetch(broker, state, deadline), keys)


def _prepare(
    broker: HandlerHost, ctx: RequestContext, request: Any, body: dict[str, Any]
) -> _Fetch | tuple[dict[TP, dict[str, Any]], Acked]:
    """Session and acknowledgements; the answer's entries (and the acknowledgements' writes) when
    the request closed the session."""
    acked = Acked()
    named = partitions_of(request)
    forgotten = [(t.topic_id, int(p)) for t in request.forgotten_topics_data for p in t.partitions]
    epoch = int(request.share_session_epoch)
    if epoch == INITIAL_EPOCH and any(batches for _, batches in named):
        raise KafkaError(ErrorCode.invalid_request, "Acknowledge data present on initial fetch request")
    group_id, member_id = request.group_id or "", request.member_id or ""
    leader, session = open_session(broker, ctx, request, added=[tp for tp, _ in named], forgotten=forgotten)
    entries: dict[TP, dict[str, Any]] = {}
    for tp, loc, code in acknowledge_all(broker, ctx, leader, request, named, acked, without_batches=False):
        entries[tp] = _entry(tp, loc)
        if code is not None:
            entries[tp]["acknowledge_error_code"] = code
    if session is None:  # epoch -1: acknowledge, then close (KafkaApis: no fetch on a final epoch)
        leader.release_member(group_id, member_id)
        return entries, acked
    return _Fetch(
        ctx,
        body,
        group_id,
        member_id,
        entries,
        sorted(session.partitions, key=lambda x: (str(x[0]), x[1])),
        _max_records(request),
        max(0, min(int(request.max_bytes), broker.config.get_int("fetch.max.bytes"))),
        acked,
    )


def _fill(broker: HandlerHost, state: _Fetch) -> bool:
    """Acquire on the session's partitions within the budgets, the locks timed on the monotonic
    clock; True if anything was acquired."""
    leader = broker.group_coordinator.share.leader
    got_any = False
    state.loading = False
    for tp in state.session:
        if state.budget <= 0 or state.remaining <= 0:
            break
        loc = locate(broker, state.ctx, leader, state.group_id, tp)
        state.loading = state.loading or loc.loading
        if loc.sp is None or loc.part is None:
            if tp in state.entries:
                state.entries[tp] = _entry(tp, loc) | {
                    "acknowledge_error_code": state.entries[tp]["acknowledge_error_code"]
                }
            continue
        got = _acquire(broker, loc, state.member_id, broker.mono_ms, state.budget, state.remaining)
        if got is None:
            continue
        entry = state.entries.setdefault(tp, _entry(tp, loc))
        entry["records"], entry["acquired_records"], count, size = got
        state.budget -= count
        state.remaining -= size
        got_any = True
    return got_any


def _render(state: _Fetch) -> Render:
    """The answer of ``state`` with its acknowledgements' errors (once their writes are decided)."""
    return render_with(
        response_class(78, state.ctx.api_version), state.body, state.entries.items(), ACK_ERROR
    )


def _watch_keys(broker: HandlerHost, session: list[TP]) -> tuple[tuple[str, int], ...]:
    """The (topic, partition) keys a produce or a leadership change wakes a waiting fetch by."""
    keys = []
    for topic_id, index in session:
        topic = broker.image.topic_by_id(topic_id) if topic_id is not None else None
        if topic is not None:
            keys.append((topic.name, index))
    return tuple(keys)


def _max_records(request: Any) -> int:
    asked = int(getattr(request, "max_records", 0))
    return min(asked if asked > 0 else DEFAULT_MAX_RECORDS, MAX_RECORDS_PER_FETCH)


def _entry(tp: TP, loc: Located) -> dict[str, Any]:
    return partition_answer(tp, loc) | {
        "acknowledge_error_code": ErrorCode.none,
        "records": b"",
        "acquired_records": [],
    }


def _acquire(
    broker: HandlerHost, loc: Located, member_id: str, mono_ms: int, budget: int, max_bytes: int
) -> tuple[bytes, list[dict[str, int]], int, int] | None:
    """Acquire records of the batches that fit in ``max_bytes`` from the first record the member may
    take; (batch bytes, AcquiredRecords, records acquired, bytes) or None when nothing was."""
    sp: SharePartition | None = loc.sp
    part = loc.part
    assert sp is not None and part is not None
    sp.expire_locks(mono_ms)
    start = sp.next_candidate()
    hw = part.high_watermark
    if start >= hw:
        return None
    try:
        info = part.read(start, max_bytes, committed_only=True, min_one_batch=True)
    except KafkaError:
        return None
    if info.records.size == 0:
        return None
    end = _end_of(part, start, info.records.size)
    ranges = sp.acquire(member_id, mono_ms=mono_ms, log_end=min(hw, end), max_records=budget)
    if not ranges:
        return None
    data = b"".join(broker.store.read_chunk(c) for c in info.records.chunks)
    acquired = [
        {"first_offset": r.first_offset, "last_offset": r.last_offset, "delivery_count": r.delivery_count}
        for r in ranges
    ]
    count = sum(r.last_offset - r.first_offset + 1 for r in ranges)
    return data, acquired, count, info.records.size


def _end_of(part: Any, start: int, size: int) -> int:
    """One past the last offset of the batches from ``start`` whose bytes add up to ``size``."""
    end = start
    seen = 0
    for header in part.log.batch_headers(start):
        if seen >= size:
            break
        seen += header.size
        end = header.base_offset + header.last_offset_delta + 1
    return end
