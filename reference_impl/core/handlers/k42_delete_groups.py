"""DeleteGroups: v0-2. Delete Empty groups with their committed offsets.

Behaviour: for each Empty group, tombstones for its offsets and for its
metadata are written to ``__consumer_offsets``; the answer waits until they
are committed. Errors per group: NON_EMPTY_GROUP (members present),
GROUP_ID_NOT_FOUND, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE (the write timed out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from ..group.reply import PendingReply
from .access import GROUP, Op, allowed
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(42, 0, 2)
def handle_delete_groups(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    names = list(request.groups_names)
    cls = response_class(42, ctx.api_version)
    denied = {g for g in names if not allowed(broker, ctx, Op.DELETE, GROUP, g)}  # Kafka: DELETE on each

    def render(results: dict[str, ErrorCode]) -> ResponsePayload:
        return build(
            cls,
            {
                "throttle_time": 0,
                "results": [
                    {
                        "group_id": g,
                        "error_code": ErrorCode.group_authorization_failed
                        if g in denied
                        else results.get(g, ErrorCode.none),
                    }
                    for g in names
                ],
            },
        )

    coordinator = broker.group_coordinator
    timeout = {g: ErrorCode.coordinator_not_available for g in names}
    pending = PendingReply(
        coordinator, ctx, render, broker.config.get_int("offsets.commit.timeout.ms"), timeout
    )
    with coordinator.operation(ctx.received_ms):
        coordinator.delete_groups([g for g in names if g not in denied], pending.answer, ctx.received_ms)
    return pending.deferred()
