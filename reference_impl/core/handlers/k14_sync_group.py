"""SyncGroup: v0-5. The leader hands in the assignment; every member gets its own share.

Behaviour (:mod:`..group.membership`): in CompletingRebalance a member's
SyncGroup waits until the leader's assignment is committed to
``__consumer_offsets``, then every waiting member gets its assignment and the
group is Stable; in Stable the current assignment is returned at once.
Errors: INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
REBALANCE_IN_PROGRESS, INCONSISTENT_GROUP_PROTOCOL (v5+).
Version notes: v3+ group instance id; v5+ protocol type and name in both
directions (KIP-559).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode

from ..group.membership import NEW_MEMBER_JOIN_TIMEOUT_MS, SyncRequest, sync_answer
from ..group.reply import PendingReply
from .access import GROUP, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(14, 0, 5)
def handle_sync_group(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    cls = response_class(14, ctx.api_version)

    def render(fields: dict[str, Any]) -> ResponsePayload:
        return build(cls, {"throttle_time": 0, **fields})

    if not allowed(broker, ctx, Op.READ, GROUP, request.group_id):  # Kafka: READ on the group
        return Respond(render(sync_answer(ErrorCode.group_authorization_failed)))
    coordinator = broker.group_coordinator
    pending = PendingReply(
        coordinator, ctx, render, NEW_MEMBER_JOIN_TIMEOUT_MS, sync_answer(ErrorCode.rebalance_in_progress)
    )
    coordinator.sync(
        SyncRequest(
            group_id=request.group_id,
            generation=int(request.generation_id),
            member_id=request.member_id,
            group_instance_id=get(request, "group_instance_id"),
            protocol_type=get(request, "protocol_type"),
            protocol_name=get(request, "protocol_name"),
            assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
        ),
        pending.answer,
        ctx.received_ms,
    )
    return pending.deferred()
