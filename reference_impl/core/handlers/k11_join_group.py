"""JoinGroup: v0-9. Join (or rejoin) a classic group; parked until the rebalance's join phase completes.

Behaviour (:mod:`..group.membership`): a new dynamic member gets
MEMBER_ID_REQUIRED with its member id (v4+) and joins with it; the join
completes as soon as every known member has rejoined, or at the rebalance
timeout (a new group first waits ``group.initial.rebalance.delay.ms``). The
leader's answer lists every member's metadata for the chosen protocol.
Errors: INVALID_GROUP_ID (empty id), INVALID_SESSION_TIMEOUT (outside
``group.min.session.timeout.ms``..``group.max.session.timeout.ms``),
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED.
Version notes: v0 has no rebalance timeout (the session timeout stands in);
v4+ MEMBER_ID_REQUIRED; v5+ group instance ids (static membership,
KIP-345); v7+ protocol type and a nullable protocol name in the response;
v8+ a reason; v9 ``skip_assignment`` for a static leader rejoining a Stable
group (KIP-814).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get, millis
from reference_impl.protocol.errors import ErrorCode

from ..group.membership import NEW_MEMBER_JOIN_TIMEOUT_MS, JoinRequest, join_error
from ..group.reply import PendingReply
from ..group.state import Protocol
from .access import GROUP, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(11, 0, 9)
def handle_join_group(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
    session_ms = millis(request.session_timeout)
    rebalance_ms = millis(get(request, "rebalance_timeout", -1))
    if version == 0 or rebalance_ms < 0:
        rebalance_ms = session_ms
    cls = response_class(11, version)

    def render(fields: dict[str, Any]) -> ResponsePayload:
        if version < 7 and fields.get("protocol_name") is None:
            fields = {**fields, "protocol_name": ""}
        return build(cls, {"throttle_time": 0, **fields})

    if not allowed(broker, ctx, Op.READ, GROUP, request.group_id):  # Kafka: READ on the group
        return Respond(render(join_error(ErrorCode.group_authorization_failed, request.member_id)))
    coordinator = broker.group_coordinator
    pending = PendingReply(
        coordinator,
        ctx,
        render,
        max(rebalance_ms, NEW_MEMBER_JOIN_TIMEOUT_MS),
        join_error(ErrorCode.rebalance_in_progress, request.member_id),
    )
    coordinator.join(
        JoinRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            group_instance_id=get(request, "group_instance_id"),
            protocol_type=request.protocol_type,
            protocols=tuple(Protocol(p.name, bytes(p.metadata)) for p in request.protocols),
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            client_id=ctx.client_id,
            client_host=f"/{ctx.client_host}",
            api_version=version,
            reason=get(request, "reason"),
        ),
        pending.answer,
        ctx.received_ms,
    )
    return pending.deferred()
