"""LeaveGroup: v0-5. Members leave a group (a rebalance follows for those who stay).

Behaviour: each member is removed (a pending member too); a static member
may be removed by its group instance id alone, with an empty member id (the
admin client's ``removeMembersFromConsumerGroup``). A Stable or
CompletingRebalance group then rebalances; a rebalancing group completes
its join phase if everyone left has rejoined.
Errors: INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS at
the top; per member UNKNOWN_MEMBER_ID (an unknown group too) and
FENCED_INSTANCE_ID.
Version notes: v0-2 one member id, its error at the top; v3+ a batch of
members with per-member errors (KIP-345); v5+ a reason per member.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .access import GROUP, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(13, 0, 5)
def handle_leave_group(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
    cls = response_class(13, version)
    if version < 3:
        identities: list[tuple[str, str | None]] = [(request.member_id, None)]
    else:
        identities = [(m.member_id, m.group_instance_id) for m in request.members]
    if not allowed(broker, ctx, Op.READ, GROUP, request.group_id):  # Kafka: READ on the group
        return Respond(build(cls, {"throttle_time": 0, "error_code": ErrorCode.group_authorization_failed}))
    error, codes = broker.group_coordinator.leave(request.group_id, identities, ctx.received_ms)
    if version < 3:
        if error is ErrorCode.none and codes:
            error = codes[0]
        return Respond(build(cls, {"throttle_time": 0, "error_code": error}))
    members = [
        {"member_id": mid, "group_instance_id": iid, "error_code": code}
        for (mid, iid), code in zip(identities, codes, strict=False)
    ]
    return Respond(build(cls, {"throttle_time": 0, "error_code": error, "members": members}))
