"""OffsetCommit: v2-10. Store a group's consumed positions in ``__consumer_offsets``.

Behaviour: each partition's offset (with its leader epoch and metadata) is a
record in Kafka's format, appended with acks=all; the answer, and the
offset's visibility to OffsetFetch, wait until the record is committed. A
commit with generation -1 comes from a consumer without group management or
an admin client: accepted while the group is Empty (a group that does not
exist is created as a "simple" group). A member of the group must name the
current generation.
Errors per partition: UNKNOWN_TOPIC_OR_PARTITION (the topic or partition
does not exist), OFFSET_METADATA_TOO_LARGE (over ``offset.metadata.max.bytes``),
and for the whole request NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS (the group is completing a
rebalance), GROUP_ID_NOT_FOUND (v9+, a generation for a group that does not
exist; ILLEGAL_GENERATION before). A KIP-848 consumer-protocol group
(``ConsumerGroup.validateOffsetCommit``): epoch -1 only while it has no
members, else the member at its current epoch (UNKNOWN_MEMBER_ID,
STALE_MEMBER_EPOCH; UNSUPPORTED_VERSION below v9).
Version notes: v2-4 a retention time (written as an expire timestamp,
OffsetCommitValue v1); v6+ leader epochs; v7+ group instance ids; v8+
flexible; v10 topics by id (UNKNOWN_TOPIC_ID for an unknown id).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get, millis
from reference_impl.protocol.errors import ErrorCode

from ..group.coordinator import OffsetCommitItem
from ..group.offsets import TopicPartition
from ..group.reply import PendingReply
from .access import GROUP, TOPIC, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(8, 2, 10)
def handle_offset_commit(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
    cls = response_class(8, version)
    by_id = {t.topic_id: t.name for t in broker.image.topics.values()} if version >= 10 else {}
    topics: list[tuple[Any, str | None, list[int]]] = []
    items: list[OffsetCommitItem] = []
    refused: dict[TopicPartition, ErrorCode] = {}
    group_denied = not allowed(broker, ctx, Op.READ, GROUP, request.group_id)  # Kafka: READ on the group
    for t in request.topics:
        ident = t.topic_id if version >= 10 else t.name
        name = by_id.get(t.topic_id) if version >= 10 else t.name
        topics.append((ident, name, [int(p.partition_index) for p in t.partitions]))
        if name is None:
            continue
        if group_denied or not allowed(broker, ctx, Op.READ, TOPIC, name):  # and READ on each topic
            code = (
                ErrorCode.group_authorization_failed if group_denied else ErrorCode.topic_authorization_failed
            )
            refused.update(((name, int(p.partition_index)), code) for p in t.partitions)
            continue
        for p in t.partitions:
            items.append(
                OffsetCommitItem(
                    name,
                    int(p.partition_index),
                    int(p.committed_offset),
                    int(get(p, "committed_leader_epoch", -1)),
                    p.committed_metadata,
                )
            )

    def render(codes: dict[TopicPartition, ErrorCode]) -> ResponsePayload:
        codes = {**codes, **refused}
        body_topics = []
        for ident, name, partitions in topics:
            missing = ErrorCode.unknown_topic_id if name is None else ErrorCode.none
            if group_denied:  # OffsetCommitRequest.getErrorResponse: every partition, unknown ids too
                missing = ErrorCode.group_authorization_failed
            entry: dict[str, Any] = {
                "name" if version < 10 else "topic_id": ident if version >= 10 else name,
                "partitions": [
                    {"partition_index": p, "error_code": codes.get((name or "", p), missing)}
                    for p in partitions
                ],
            }
            body_topics.append(entry)
        return build(cls, {"throttle_time": 0, "topics": body_topics})

    if group_denied:
        return Respond(render({}))
    coordinator = broker.group_coordinator
    timeout = {(i.topic, i.partition): ErrorCode.coordinator_not_available for i in items}
    pending = PendingReply(
        coordinator, ctx, render, broker.config.get_int("offsets.commit.timeout.ms"), timeout
    )
    with coordinator.operation(ctx.received_ms):
        coordinator.commit_offsets(
            request.group_id,
            int(get(request, "generation_id_or_member_epoch", -1)),
            get(request, "member_id", "") or "",
            get(request, "group_instance_id"),
            millis(get(request, "retention_time", -1)),
            items,
            version,
            pending.answer,
            ctx.received_ms,
        )
    return pending.deferred()
