"""Fetch: v4-18. Records from a fetch offset, for consumers and for follower replicas, long-polled.

Behaviour: consumers (replica id -1) read below the high watermark
(read_uncommitted) or the last stable offset (read_committed, with
``aborted_transactions``). Followers (replica id ≥ 0: ``replica_id`` up to
v14, ``replica_state`` from v15) read up to the log end; their fetch offset
is their log end offset, which moves the high watermark (seed 002), and a
fetch whose last fetched epoch ended earlier on the leader is answered with
``diverging_epoch`` and no records (KIP-320). The answer waits in the
purgatory until ``min_bytes`` are available or ``max_wait_ms`` passes.
``max_bytes`` bounds the answer and ``partition_max_bytes`` each partition,
but the first batch of the first non-empty partition is returned whole even
when larger (KIP-74). Incremental fetch sessions (KIP-227, v7+) are in
:mod:`..fetch_sessions`, for consumers and followers alike (the follower's side:
:mod:`..replication.fetch_session`). On a controller listener the only partition is ``__cluster_metadata``-0,
fetched by quorum replicas (anything else is INVALID_REQUEST, as ``KafkaRaftClient`` answers); on
a broker listener the metadata log is no topic (UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION).
Errors per partition: TOPIC_AUTHORIZATION_FAILED with an authorizer (a consumer without READ on the
topic, a follower without CLUSTER_ACTION), UNKNOWN_TOPIC_OR_PARTITION (v13+ UNKNOWN_TOPIC_ID),
NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v9+,
KIP-320), OFFSET_OUT_OF_RANGE; on errors the offsets are -1.
Follower fetching (KIP-392, ``ReplicaManager.readFromLog``/``findPreferredReadReplica`` in
Kafka's ``core/src/main/scala/kafka/server/ReplicaManager.scala``): a consumer's fetch from v11 carries
client metadata (``rack_id``). With ``replica.selector.class`` set, a leader that picks a follower
(:mod:`..replication.read_replica`) answers that partition at once with no records, its offsets and
``preferred_read_replica``; and a follower serves such a fetch itself, below the high watermark it
knows (Kafka's ``fetchOnlyLeader`` is false for a consumer with client metadata), with
OFFSET_OUT_OF_RANGE past its log end. A consumer fetch without client metadata (v<11) and every
replica's fetch to a follower is NOT_LEADER_OR_FOLLOWER.
Version notes: v9+ current_leader_epoch; v11+ rack_id and preferred_read_replica; v12+ flexible,
diverging_epoch and current_leader; v13+ topic ids; v15+ replica_state.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from reference_impl import defects
from reference_impl.log.api import FileRegion
from reference_impl.protocol.apis import is_flexible, response_class
from reference_impl.protocol.build import build, get, millis
from reference_impl.protocol.codec import encode_body
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..fetch_sessions import FetchPlan, PartitionKey, SessionPartition
from ..metadata.records import METADATA_TOPIC, METADATA_TOPIC_ID
from ..partition import Noted
from ..purgatory import DelayedOperation
from ..quotas import CONSUMER_BYTE_RATE, user_of
from ..replication.read_replica import FollowerPosition, preferred_read_replica
from .access import TOPIC, Op, allowed, cluster_allowed, unchecked
from .registry import Deferred, Reply, Respond, Splices, handles

if TYPE_CHECKING:
    from ..partition import Partition
    from ..replication.isr import FollowerState
    from ..request_context import RequestContext
    from .host import HandlerHost

READ_COMMITTED = 1
SPLICE_MARK = b"\xfe\xedKH"
CONSUMER = -1


class FetchRequestState:
    """What one fetch asked for, resolved against this broker's topics."""

    def __init__(
        self,
        ctx: RequestContext,
        plan: FetchPlan,
        unknown_ids: list[Any],
        replica_id: int,
        min_bytes: int,
        max_bytes: int,
        isolation: int,
    ) -> None:
        self.ctx = ctx
        self.plan = plan
        self.unknown_ids = unknown_ids
        self.replica_id = replica_id
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.isolation = isolation
        self.denied: frozenset[str] = frozenset()
        """Topics the principal may not read (answered TOPIC_AUTHORIZATION_FAILED). They are not
        read, and do not count towards ``min_bytes``: Kafka reads only the authorized partitions
        (``interesting``), and answers at once when there are none."""
        self.follower_refused = False
        """A follower's fetch without CLUSTER_ACTION: every partition is refused."""
        self.client_rack: str | None = None
        """A consumer's rack from v11 (``""`` when it has none); None: no client metadata."""
        self.noted: set[PartitionKey] = set()
        """A follower's partitions whose fetch was recorded on arrival (it then waited): the answer
        does not record it again, as Kafka's ``DelayedFetch.onComplete`` only reads."""
        self.idle: dict[PartitionKey, tuple[tuple[object, ...], FollowerState | None]] = {}
        """Noted partitions found idle on arrival (``Noted.IDLE``): the partition's stamp then, and
        the leader's record of the follower. Left out of the answer as unchanged under the same
        stamp, they become quiet (:attr:`SessionPartition.quiet`)."""
        self.quiet: set[PartitionKey] = set()
        """Noted partitions whose session entry was quiet, under an unchanged stamp: idle without a
        check (:func:`_note_follower_positions`)."""

    @property
    def from_follower(self) -> bool:
        return self.replica_id >= 0

    def may_read(self, part: Partition) -> bool:
        """Kafka's ``FetchParams.fetchOnlyLeader``: only a consumer with client metadata (v11+) may
        read from a follower."""
        return part.is_leader or (not self.from_follower and self.client_rack is not None)


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes`` of data or its deadline (Kafka's DelayedFetch)."""

    def __init__(self, broker: HandlerHost, state: FetchRequestState, deadline_ms: int) -> None:
        super().__init__(deadline_ms)
        self.broker = broker
        self.state = state

    def try_complete(self, now_ms: int) -> bool:
        available = 0
        noted = self.state.noted
        for key, want in self.state.plan.partitions.items():
            if key in noted:  # a follower's, recorded on arrival: idle while led in that epoch
                part = self.broker.partition(*key)  # (what the checks below conclude, in three steps)
                if part is not None and (
                    _still_quiet(part, want, key, self.state)
                    or (
                        part.leads_online_in(want.current_leader_epoch)
                        and want.fetch_offset >= part.log.log_end_offset
                    )
                ):
                    continue
            if key[0] in self.state.denied:
                continue  # not read: its data must not move the answer's timing
            part = self.broker.partition(*key)
            if (
                part is None
                or part.offline is not None
                or not self.state.may_read(part)
                or part.leader_epoch < want.current_leader_epoch
            ):
                return self.force_complete(now_ms)  # an error to report: answer at once
            if _preferred_replica(self.broker, self.state, part, want.fetch_offset, now_ms) is not None:
                return self.force_complete(now_ms)  # Kafka answers a redirect at once
            try:
                part.check_leader_epoch(want.current_leader_epoch)
                if self.state.from_follower:
                    if key in self.state.noted:  # checked on arrival, in this epoch: no divergence
                        if want.fetch_offset >= part.log.log_end_offset:
                            continue  # nothing new to read yet
                        if self.state.min_bytes <= 1 and want.max_bytes > 0:
                            return self.force_complete(now_ms)  # a whole batch waits: read it once
                    if want.last_fetched_epoch >= 0:
                        epoch, end = part.log.end_offset_for_epoch(want.last_fetched_epoch)
                        if epoch < want.last_fetched_epoch or end < want.fetch_offset:
                            return self.force_complete(now_ms)
                    # DelayedFetch.tryComplete: bytes only when the log end is past the fetch offset
                    # (an idle partition of the follower's many costs no read)
                    size = (
                        part.log.read(want.fetch_offset, want.max_bytes).size
                        if want.fetch_offset < part.log.log_end_offset
                        else 0
                    )
                else:
                    size = part.read(
                        want.fetch_offset,
                        want.max_bytes,
                        committed_only=True,
                        transactional=self.state.isolation == READ_COMMITTED,
                    ).records.size
            except Exception:  # OFFSET_OUT_OF_RANGE and friends: the answer carries the error
                return self.force_complete(now_ms)
            available += size
            if available >= self.state.min_bytes:
                return self.force_complete(now_ms)
        return False

    def try_complete_on(self, key: Hashable, now_ms: int) -> bool:
        """A follower's fetch woken by one of its partitions, recorded on arrival: if that one is
        still led here in the same epoch with nothing past the fetch offset, nothing this fetch
        waits for changed (its other partitions notify their own changes)."""
        want = self.state.plan.partitions.get(key) if isinstance(key, tuple) else None
        if want is not None and key in self.state.noted and key[0] not in self.state.denied:
            part = self.broker.partition(*key)
            if part is not None and part.leads_online_in(want.current_leader_epoch):
                if want.fetch_offset >= part.log.log_end_offset:
                    return False
                if self.state.min_bytes <= 1 and want.max_bytes > 0:
                    return self.force_complete(now_ms)  # a whole batch waits here: enough
        return self.try_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        body, splices = answer(self.broker, self.state, now_ms)
        self.state.ctx.respond(body, splices)


def _refused(version: int, error: ErrorCode) -> Reply:
    """A top-level error and no partitions."""
    body = {"throttle_time": 0, "error_code": error, "session_id": 0, "responses": []}
    return Respond(build(response_class(1, version), body))


def is_metadata_fetch(request: Any) -> bool:
    """A KRaft replica's fetch: one partition of ``__cluster_metadata`` (by topic id from v13)."""
    topics = list(request.topics)
    if len(topics) != 1:
        return False
    topic = topics[0]
    return bool(get(topic, "topic_id") == METADATA_TOPIC_ID or get(topic, "topic") == METADATA_TOPIC)


@handles(1, 4, 18)
def handle_fetch(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
    if broker.is_controller_listener(ctx.listener) or defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER):
        if is_metadata_fetch(request):
            return broker.quorum.serve(ctx, 1, request)  # a quorum replica fetching __cluster_metadata
        if not defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER):
            return _refused(version, ErrorCode.invalid_request)  # KafkaRaftClient: not its partition
    replica_state = get(request, "replica_state")
    replica_id = int(
        replica_state.replica_id if replica_state is not None else get(request, "replica_id", -1)
    )
    isolation = int(get(request, "isolation_level", 0))
    requested: list[tuple[PartitionKey, SessionPartition]] = []
    unknown_ids: list[Any] = []
    for topic in request.topics:
        name = _topic_name(broker, topic)
        for p in topic.partitions:
            if name is None:
                unknown_ids.append((topic.topic_id, p.partition))
                continue
            requested.append(
                (
                    (name, p.partition),
                    SessionPartition(
                        fetch_offset=p.fetch_offset,
                        max_bytes=p.partition_max_bytes,
                        current_leader_epoch=get(p, "current_leader_epoch", -1),
                        last_fetched_epoch=get(p, "last_fetched_epoch", -1),
                    ),
                )
            )
    forgotten: list[PartitionKey] = []
    for topic in get(request, "forgotten_topics_data", ()) or ():
        name = _topic_name(broker, topic)
        if name is not None:
            forgotten.extend((name, index) for index in topic.partitions)
    plan = broker.fetch_sessions.plan(
        int(get(request, "session_id", 0)),
        int(get(request, "session_epoch", -1)),
        requested,
        forgotten,
        ctx.received_ms,
        allow_new=version >= 7,
    )
    if plan.error is not ErrorCode.none:
        return _refused(version, plan.error)
    max_bytes = min(int(get(request, "max_bytes", 2**31 - 1)), broker.config.get_int("fetch.max.bytes"))
    if replica_id < 0:  # KafkaApis: no more than the consumer's quota lets through in one window
        window = broker.client_quotas.max_in_window(CONSUMER_BYTE_RATE, user_of(ctx.principal), ctx.client_id)
        max_bytes = min(max_bytes, int(min(window, 2**31 - 1)))
    state = FetchRequestState(
        ctx, plan, unknown_ids, replica_id, int(request.min_bytes), max_bytes, isolation
    )
    state.follower_refused = replica_id >= 0 and not (
        unchecked(broker, ctx) or cluster_allowed(broker, ctx, Op.CLUSTER_ACTION)
    )
    state.denied = _denied_topics(broker, ctx, {name for name, _ in plan.partitions}, state)
    if version >= 11 and replica_id < 0:
        state.client_rack = str(get(request, "rack_id", "") or "")
    max_wait = millis(request.max_wait)
    nothing_to_wait_for = bool(state.denied) and all(name in state.denied for name, _ in plan.partitions)
    if max_wait <= 0 or request.min_bytes <= 0 or unknown_ids or nothing_to_wait_for:
        body, splices = answer(broker, state, ctx.received_ms)
        return Respond(body, splices)
    if state.from_follower and not state.denied:
        _note_follower_positions(broker, state, ctx.received_ms)
    return Deferred(DelayedFetch(broker, state, ctx.received_ms + max_wait), tuple(plan.partitions))


def _denied_topics(
    broker: HandlerHost, ctx: RequestContext, names: set[str], state: FetchRequestState
) -> frozenset[str]:
    """Kafka's ``handleFetchRequest`` (``core/src/main/scala/kafka/server/KafkaApis.scala``): a
    follower needs CLUSTER_ACTION on the cluster (else every partition is refused, topic ids it does
    not know included), a consumer READ on each topic (a topic named by id is resolved first: an id
    this broker does not know is UNKNOWN_TOPIC_ID, one it knows and the consumer may not read
    TOPIC_AUTHORIZATION_FAILED, as Kafka, which holds topic ids not sensitive)."""
    if state.from_follower:
        return frozenset(names) if state.follower_refused else frozenset()
    if unchecked(broker, ctx):
        return frozenset()
    return frozenset(n for n in names if not allowed(broker, ctx, Op.READ, TOPIC, n))


def _note_follower_positions(broker: HandlerHost, state: FetchRequestState, now_ms: int) -> None:
    """A follower's fetch about to wait: its offsets are its LEOs now, so acks=all produces and
    the high watermark move on arrival, not after the wait.

    A quiet partition (left out of the last answer as idle, not named again, its stamp unchanged)
    is idle now without the checks: a follower's session names every partition it follows from
    this leader, most of them idle (``__consumer_offsets``' 50), and checking each on every acks=all
    round trip cost ~0.4 ms of the cluster's end-to-end p50 (issue 22)."""
    replica_id = state.replica_id
    for key, want in state.plan.partitions.items():
        part = broker.partition(*key)
        if part is None:
            continue
        if want.quiet is not None:
            stamp, follower = want.quiet
            if stamp == part.quiet_stamp():
                follower.fetched_idle(now_ms)  # as IsrTracker.record_idle_fetch would
                state.noted.add(key)
                state.quiet.add(key)
                continue
            want.quiet = None
        noted = part.note_follower_fetch(
            state.replica_id,
            want.fetch_offset,
            want.last_fetched_epoch,
            want.current_leader_epoch,
            now_ms,
        )
        if noted is None:
            continue
        state.noted.add(key)
        if noted is Noted.IDLE:  # an idle repeat can move neither the high watermark nor the ISR
            state.idle[key] = (part.quiet_stamp(), part.follower_state(replica_id))
        else:
            broker.after_follower_fetch(part, now_ms, replica_id, noted is Noted.HW_MOVED)


def _topic_name(broker: HandlerHost, topic: Any) -> str | None:
    name = get(topic, "topic")
    if name is not None:
        return str(name)
    found = broker.image.topic_by_id(get(topic, "topic_id"))
    return found.name if found else None


def answer(broker: HandlerHost, state: FetchRequestState, now_ms: int) -> tuple[Any, Splices]:
    """Read every partition of the plan now and build the response (and the file regions it carries)."""
    remaining = state.max_bytes
    splices: Splices = {}
    read: list[tuple[PartitionKey, dict[str, Any], int]] = []
    quiet = state.from_follower and state.plan.incremental
    for key, want in state.plan.partitions.items():
        if quiet and key in state.noted and _left_out(broker, state, key, want):
            continue  # an empty entry the incremental answer would leave out: not read at all
        want.quiet = None
        first = remaining == state.max_bytes
        entry, size = _read_partition(broker, state, key, want, remaining, first, now_ms, splices)
        remaining = max(0, remaining - size)
        read.append((key, entry, size))
    reported = [(key, entry) for key, entry, size in read if _reports(state, key, entry, size, update=False)]
    body = _body(broker, state, reported)
    if state.from_follower:
        broker.client_quotas.request.mark_exempt(state.ctx)  # a follower's fetch: a cluster action
    else:
        metered = broker.client_quotas.active(CONSUMER_BYTE_RATE)
        answer_size = _response_size(state, body, splices, reported) if metered else None
        throttled = _consumer_throttle(broker, state, answer_size, now_ms)
        if throttled is not None:
            return throttled, {}  # nothing reported: the session keeps what it last sent
    for key, entry, size in read:
        if not _reports(state, key, entry, size, update=True) and entry["records"] in splices:
            del splices[entry["records"]]  # left out of an incremental answer: nothing to send
    return body, splices


def _still_quiet(
    part: Partition, want: SessionPartition, key: PartitionKey, state: FetchRequestState
) -> bool:
    """Taken as idle on arrival without the checks, and the partition's stamp still the same."""
    return want.quiet is not None and key in state.quiet and want.quiet[0] == part.quiet_stamp()


def _left_out(
    broker: HandlerHost, state: FetchRequestState, key: PartitionKey, want: SessionPartition
) -> bool:
    """Whether a noted partition's entry would be empty and left out of the incremental answer.
    One found idle on arrival and unchanged since, under the stamp it had then, becomes quiet: the
    next fetch, if it does not name it, skips its checks while the stamp holds."""
    part = broker.partition(*key)
    if part is None:
        return False
    if _still_quiet(part, want, key, state):
        return True
    if not _unchanged_for_follower(part, want):
        return False
    idle = state.idle.get(key)
    want.quiet = None
    if idle is not None:
        stamp, follower = idle
        if follower is not None and stamp == part.quiet_stamp():
            want.quiet = (stamp, follower)
    return True


def _unchanged_for_follower(part: Partition, want: SessionPartition) -> bool:
    """A follower's partition, recorded on arrival (so not diverging, its epoch current), with
    nothing past its fetch offset and the same offsets as last reported: its entry would be empty
    and left out of an incremental answer (``FetchSession.scala`` drops an unchanged partition),
    so reading it, for each of the idle partitions a follower fetches with every acks=all round
    trip, is work thrown away (issue 22)."""
    return (
        part.leads_online_in(want.current_leader_epoch)
        and want.fetch_offset == part.log.log_end_offset
        and want.last_high_watermark == part.high_watermark
        and want.last_stable_offset == part.last_stable_offset
        and want.last_log_start_offset == part.log.log_start_offset
    )


def _reports(
    state: FetchRequestState, key: PartitionKey, entry: dict[str, Any], size: int, *, update: bool
) -> bool:
    """Whether the answer carries the partition (every one in a full fetch; what changed in an
    incremental one); ``update`` marks it reported in the session."""
    # FetchSession.scala: a partition with a preferred read replica, or a diverging epoch (to have
    # the follower truncate), is always in the answer
    has_error = (
        entry["error_code"] is not ErrorCode.none
        or entry["preferred_read_replica"] >= 0
        or "diverging_epoch" in entry
    )
    return state.plan.should_report(
        key,
        entry["high_watermark"],
        entry["last_stable_offset"],
        entry["log_start_offset"],
        size > 0,
        has_error,
        update=update,
    )


def _body(
    broker: HandlerHost, state: FetchRequestState, reported: list[tuple[PartitionKey, dict[str, Any]]]
) -> Any:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for key, entry in reported:
        by_topic.setdefault(key[0], []).append(entry)
    responses = []
    for name, partitions in by_topic.items():
        topic = broker.image.topics.get(name)
        responses.append(
            {"topic": name, "topic_id": topic.topic_id if topic else None, "partitions": partitions}
        )
    unknown = ErrorCode.topic_authorization_failed if state.follower_refused else ErrorCode.unknown_topic_id
    for topic_id, index in state.unknown_ids:
        responses.append(
            {
                "topic": None,
                "topic_id": topic_id,
                "partitions": [_error_entry(index, unknown, state.isolation)],
            }
        )
    return build(
        response_class(1, state.ctx.api_version),
        {"throttle_time": 0, "error_code": 0, "session_id": state.plan.session_id, "responses": responses},
    )


def _uvarint_size(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def _response_size(
    state: FetchRequestState, body: Any, splices: Splices, reported: list[tuple[PartitionKey, dict[str, Any]]]
) -> int:
    """``FetchResponse.sizeOf``: 4 + the body's size, as Kafka counts a consumer's fetch towards its
    quota; the records a placeholder stands for (spliced from the log files) counted at their real
    size, with their length prefix (a varint of length + 1 in flexible versions)."""
    size = 4 + len(encode_body(body))
    flexible = is_flexible(1, state.ctx.api_version)
    for _key, entry in reported:
        token = entry["records"]
        if isinstance(token, bytes) and token in splices:
            real = splices[token][1]
            size += real - len(token)
            if flexible:
                size += _uvarint_size(real + 1) - _uvarint_size(len(token) + 1)
    return size


def _consumer_throttle(broker: HandlerHost, state: FetchRequestState, size: int | None, now_ms: int) -> Any:
    """KafkaApis.handleFetchRequest's quotas: the request's handler time counts towards
    request_percentage (core/request_quotas.py) and the answer's size towards consumer_byte_rate;
    over either the size is taken back, the connection muted for the larger throttle time (KIP-219)
    and the answer is empty, carrying it (``FetchContext.getThrottledResponse``: session id 0 for a
    full fetch, the session's for an incremental one, whose partitions are not marked reported).
    None within both (``size`` None: no consumer_byte_rate quota)."""
    ctx = state.ctx
    user, quotas = user_of(ctx.principal), broker.client_quotas
    request_throttle = quotas.request.record(broker, ctx)
    bandwidth = 0 if size is None else quotas.record(CONSUMER_BYTE_RATE, user, ctx.client_id, size, now_ms)
    throttle = max(request_throttle, bandwidth)
    if throttle <= 0:
        return None
    if size is not None:
        quotas.unrecord(CONSUMER_BYTE_RATE, user, ctx.client_id, size, now_ms)
    broker.throttle(ctx.connection_id, throttle)
    session_id = state.plan.session_id if state.plan.incremental else 0
    return build(
        response_class(1, ctx.api_version),
        {"throttle_time": throttle, "error_code": 0, "session_id": session_id, "responses": []},
    )


def _error_entry(index: int, code: ErrorCode, isolation: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": [] if isolation == READ_COMMITTED else None,
        "preferred_read_replica": -1,
        "records": b"",
    }


def _preferred_replica(
    broker: HandlerHost, state: FetchRequestState, part: Partition, fetch_offset: int, now_ms: int
) -> int | None:
    """The follower a leader sends this consumer to, or None (read here)."""
    if state.client_rack is None or not part.is_leader or part.tracker is None:
        return None
    return preferred_read_replica(
        broker.config.get("replica.selector.class"),
        state.client_rack,
        leader_id=part.local_id,
        leader_log_end_offset=part.log.log_end_offset,
        isr=part.isr,
        followers={
            r: FollowerPosition(f.log_end_offset, f.last_caught_up_ms)
            for r, f in part.tracker.followers.items()
        },
        racks={b: info.rack for b, info in broker.image.brokers.items() if not info.fenced},
        fetch_offset=fetch_offset,
        now_ms=now_ms,
    )


def _redirect_entry(index: int, part: Partition, preferred: int, isolation: int) -> dict[str, Any]:
    """Kafka skips the read when a preferred read replica is set: no records, the leader's offsets."""
    entry = _error_entry(index, ErrorCode.none, isolation)
    entry["high_watermark"] = part.high_watermark
    entry["last_stable_offset"] = part.last_stable_offset
    entry["log_start_offset"] = part.log.log_start_offset
    entry["preferred_read_replica"] = preferred
    return entry


def _read_partition(
    broker: HandlerHost,
    state: FetchRequestState,
    key: PartitionKey,
    want: SessionPartition,
    remaining: int,
    first: bool,
    now_ms: int,
    splices: Splices,
) -> tuple[dict[str, Any], int]:
    if key[0] in state.denied:
        return _error_entry(key[1], ErrorCode.topic_authorization_failed, state.isolation), 0
    part = broker.partition(*key)
    if part is None:
        return _error_entry(key[1], ErrorCode.unknown_topic_or_partition, state.isolation), 0
    try:
        part.check_online()
        if not state.may_read(part):
            raise KafkaError(ErrorCode.not_leader_or_follower)
        if state.from_follower:
            info = part.read_for_follower(
                state.replica_id,
                want.fetch_offset,
                want.last_fetched_epoch,
                want.current_leader_epoch,
                min(want.max_bytes, remaining),
                now_ms,
                record=key not in state.noted,
            )
            if key not in state.noted:
                broker.after_follower_fetch(part, now_ms, state.replica_id, info.high_watermark_moved)
        else:
            part.check_leader_epoch(want.current_leader_epoch)
            preferred = _preferred_replica(broker, state, part, want.fetch_offset, now_ms)
            if preferred is not None:
                return _redirect_entry(key[1], part, preferred, state.isolation), 0
            info = part.read(
                want.fetch_offset,
                min(want.max_bytes, remaining),
                committed_only=True,
                transactional=state.isolation == READ_COMMITTED,
                min_one_batch=first,
            )
    except KafkaError as exc:
        entry = _error_entry(key[1], exc.code, state.isolation)
        if exc.code in (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch):
            entry["current_leader"] = {"leader_id": part.leader_id, "leader_epoch": part.leader_epoch}
        return entry, 0
    chunks = info.records.chunks
    data: bytes
    if chunks and all(isinstance(c, FileRegion) for c in chunks):
        data = SPLICE_MARK + broker.rng.randbytes(12)  # replaced by the file regions when encoded
        splices[data] = (tuple(c for c in chunks if isinstance(c, FileRegion)), info.records.size)
    else:
        data = b"".join(broker.store.read_chunk(c) for c in chunks)
    aborted = None
    if state.isolation == READ_COMMITTED:
        aborted = [
            {"producer_id": a.producer_id, "first_offset": a.first_offset}
            for a in part.aborted_transactions(want.fetch_offset, info.last_stable_offset)
        ]
    entry = {
        "partition_index": key[1],
        "error_code": ErrorCode.none,
        "high_watermark": info.high_watermark,
        "last_stable_offset": info.last_stable_offset,
        "log_start_offset": info.log_start_offset,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": data,
    }
    if info.diverging_epoch is not None:
        entry["diverging_epoch"] = {"epoch": info.diverging_epoch[0], "end_offset": info.diverging_epoch[1]}
    return entry, info.records.size
