"""Fetch: v4-18. Records from a fetch offset, below the high watermark, long-polled.

Behaviour: consumers read below the high watermark (read_uncommitted) or the
last stable offset (read_committed, with ``aborted_transactions``). The
answer waits in the purgatory until ``min_bytes`` are available or
``max_wait_ms`` passes. ``max_bytes`` bounds the answer and
``partition_max_bytes`` each partition, but the first batch of the first
non-empty partition is returned whole even when larger (KIP-74).
Incremental fetch sessions (KIP-227, v7+) are in :mod:`..fetch_sessions`.
Errors per partition: UNKNOWN_TOPIC_OR_PARTITION (v13+ UNKNOWN_TOPIC_ID),
NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v9+,
KIP-320), OFFSET_OUT_OF_RANGE; on errors the offsets are -1.
Version notes: v9+ current_leader_epoch; v11+ rack_id (no follower reads:
preferred_read_replica is -1); v12+ flexible, current_leader on leader
errors; v13+ topic ids; v15+ replica_state.
Not implemented yet: replica (follower) fetches (issue 4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get, millis
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..fetch_sessions import FetchPlan, PartitionKey, SessionPartition
from ..purgatory import DelayedOperation
from .registry import Deferred, Reply, Respond, handles

if TYPE_CHECKING:
    from ..broker import Broker, RequestContext

READ_COMMITTED = 1


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes`` of data or its deadline (Kafka's DelayedFetch)."""

    def __init__(
        self,
        broker: Broker,
        ctx: RequestContext,
        plan: FetchPlan,
        unknown_ids: list[Any],
        min_bytes: int,
        max_bytes: int,
        isolation: int,
        deadline_ms: int,
    ) -> None:
        super().__init__(deadline_ms)
        self.broker = broker
        self.ctx = ctx
        self.plan = plan
        self.unknown_ids = unknown_ids
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.isolation = isolation

    def try_complete(self, now_ms: int) -> bool:
        available = 0
        for (topic, index), want in self.plan.partitions.items():
            part = self.broker.partition(topic, index)
            if part is None or not part.is_leader:
                return self.force_complete(now_ms)  # an error to report: answer at once
            try:
                part.check_leader_epoch(want.current_leader_epoch)
                info = part.read(
                    want.fetch_offset,
                    want.max_bytes,
                    committed_only=True,
                    transactional=self.isolation == READ_COMMITTED,
                )
            except KafkaError:
                return self.force_complete(now_ms)
            available += info.records.size
            if available >= self.min_bytes:
                return self.force_complete(now_ms)
        return False

    def on_complete(self, now_ms: int) -> None:
        self.ctx.respond(
            answer(self.broker, self.ctx, self.plan, self.unknown_ids, self.max_bytes, self.isolation)
        )


@handles(1, 4, 18)
def handle_fetch(broker: Broker, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
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
        return Respond(
            build(
                response_class(1, version),
                {"throttle_time": 0, "error_code": plan.error, "session_id": 0, "responses": []},
            )
        )
    max_bytes = min(int(get(request, "max_bytes", 2**31 - 1)), broker.config.get_int("fetch.max.bytes"))
    max_wait = millis(request.max_wait)
    op = DelayedFetch(
        broker,
        ctx,
        plan,
        unknown_ids,
        int(request.min_bytes),
        max_bytes,
        isolation,
        ctx.received_ms + max(0, max_wait),
    )
    if max_wait <= 0 or request.min_bytes <= 0 or unknown_ids:
        op.completed = True
        return Respond(answer(broker, ctx, plan, unknown_ids, max_bytes, isolation))
    return Deferred(op, tuple(plan.partitions))


def _topic_name(broker: Broker, topic: Any) -> str | None:
    name = get(topic, "topic")
    if name is not None:
        return str(name)
    found = broker.image.topic_by_id(get(topic, "topic_id"))
    return found.name if found else None


def answer(
    broker: Broker,
    ctx: RequestContext,
    plan: FetchPlan,
    unknown_ids: list[Any],
    max_bytes: int,
    isolation: int,
) -> Any:
    """Read every partition of the plan now and build the response."""
    remaining = max_bytes
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for key, want in plan.partitions.items():
        entry, size = _read_partition(broker, key, want, remaining, isolation, first=remaining == max_bytes)
        remaining = max(0, remaining - size)
        has_records = size > 0
        if plan.should_report(
            key,
            entry["high_watermark"],
            entry["last_stable_offset"],
            entry["log_start_offset"],
            has_records,
            entry["error_code"] is not ErrorCode.none,
        ):
            by_topic.setdefault(key[0], []).append(entry)
    responses = []
    for name, partitions in by_topic.items():
        topic = broker.image.topics.get(name)
        responses.append(
            {"topic": name, "topic_id": topic.topic_id if topic else None, "partitions": partitions}
        )
    for topic_id, index in unknown_ids:
        responses.append(
            {
                "topic": None,
                "topic_id": topic_id,
                "partitions": [_error_entry(index, ErrorCode.unknown_topic_id, isolation)],
            }
        )
    return build(
        response_class(1, ctx.api_version),
        {"throttle_time": 0, "error_code": 0, "session_id": plan.session_id, "responses": responses},
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


def _read_partition(
    broker: Broker, key: PartitionKey, want: SessionPartition, remaining: int, isolation: int, first: bool
) -> tuple[dict[str, Any], int]:
    part = broker.partition(*key)
    if part is None:
        return _error_entry(key[1], ErrorCode.unknown_topic_or_partition, isolation), 0
    try:
        if not part.is_leader:
            raise KafkaError(ErrorCode.not_leader_or_follower)
        part.check_leader_epoch(want.current_leader_epoch)
        info = part.read(
            want.fetch_offset,
            min(want.max_bytes, remaining),
            committed_only=True,
            transactional=isolation == READ_COMMITTED,
            min_one_batch=first,
        )
    except KafkaError as exc:
        entry = _error_entry(key[1], exc.code, isolation)
        if exc.code in (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch):
            entry["current_leader"] = {"leader_id": part.leader_id, "leader_epoch": part.leader_epoch}
        return entry, 0
    data = b"".join(broker.store.read_chunk(c) for c in info.records.chunks)
    aborted = None
    if isolation == READ_COMMITTED:
        aborted = [
            {"producer_id": a.producer_id, "first_offset": a.first_offset}
            for a in part.aborted_transactions(want.fetch_offset, info.last_stable_offset)
        ]
    return {
        "partition_index": key[1],
        "error_code": ErrorCode.none,
        "high_watermark": info.high_watermark,
        "last_stable_offset": info.last_stable_offset,
        "log_start_offset": info.log_start_offset,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": data,
    }, len(data)
