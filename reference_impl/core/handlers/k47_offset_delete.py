"""OffsetDelete: v0. Delete a group's committed offsets of topics it does not subscribe to (KIP-496).

Behaviour: tombstones for the named offsets, answered once committed; a
partition without a committed offset is simply answered NONE. Errors: at
the top INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (a non-consumer group with members);
per partition GROUP_SUBSCRIBED_TO_TOPIC (a member of the group subscribes
to it; in a consumer-protocol group by name or regex) and
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from ..group.offsets import TopicPartition
from ..group.reply import PendingReply
from .access import GROUP, TOPIC, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(47, 0, 0)
def handle_offset_delete(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    cls = response_class(47, ctx.api_version)
    topics = [(t.name, [int(p.partition_index) for p in t.partitions]) for t in request.topics]
    unreadable = {name for name, _ in topics if not allowed(broker, ctx, Op.READ, TOPIC, name)}  # Kafka

    def render(result: tuple[ErrorCode, dict[TopicPartition, ErrorCode]]) -> ResponsePayload:
        error, codes = result
        body_topics = []
        if error is ErrorCode.none:
            body_topics = [
                {
                    "name": name,
                    "partitions": [
                        {
                            "partition_index": p,
                            "error_code": ErrorCode.topic_authorization_failed
                            if name in unreadable
                            else codes.get((name, p), ErrorCode.none),
                        }
                        for p in parts
                    ],
                }
                for name, parts in topics
            ]
        return build(cls, {"error_code": error, "throttle_time": 0, "topics": body_topics})

    if not request.group_id:
        return Respond(render((ErrorCode.invalid_group_id, {})))
    if not allowed(broker, ctx, Op.DELETE, GROUP, request.group_id):  # Kafka: DELETE on the group
        return Respond(render((ErrorCode.group_authorization_failed, {})))
    coordinator = broker.group_coordinator
    timeout: tuple[ErrorCode, dict[TopicPartition, ErrorCode]] = (ErrorCode.coordinator_not_available, {})
    pending = PendingReply(
        coordinator, ctx, render, broker.config.get_int("offsets.commit.timeout.ms"), timeout
    )
    with coordinator.operation(ctx.received_ms):
        coordinator.delete_offsets(
            request.group_id,
            [t for t in topics if t[0] not in unreadable],
            lambda e, c: pending.answer((e, c)),
            ctx.received_ms,
        )
    return pending.deferred()
