"""Heartbeat: v0-4. A member says it is alive; the answer says whether a rebalance is under way.

Behaviour: resets the member's session timer. REBALANCE_IN_PROGRESS while
the group prepares a rebalance (the member must rejoin); NONE in
CompletingRebalance and Stable. Errors: INVALID_GROUP_ID, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_MEMBER_ID (unknown member or group,
or an Empty group), FENCED_INSTANCE_ID, ILLEGAL_GENERATION.
Version notes: v3+ group instance id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode

from .access import GROUP, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(12, 0, 4)
def handle_heartbeat(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if not allowed(broker, ctx, Op.READ, GROUP, request.group_id):  # Kafka: READ on the group
        body = {"throttle_time": 0, "error_code": ErrorCode.group_authorization_failed}
        return Respond(build(response_class(12, ctx.api_version), body))
    code = broker.group_coordinator.heartbeat(
        request.group_id,
        int(request.generation_id),
        request.member_id,
        get(request, "group_instance_id"),
        ctx.received_ms,
    )
    return Respond(build(response_class(12, ctx.api_version), {"throttle_time": 0, "error_code": code}))
