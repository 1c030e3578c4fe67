"""ShareGroupHeartbeat: v1 (KIP-932). A share-group member joins, heartbeats, leaves.

Behaviour: :mod:`..group.share_coordinator` (Kafka's ``GroupMetadataManager.shareGroupHeartbeat``).
Epoch 0 joins, -1 leaves; any other epoch is the member's current one. The answer carries the
member's epoch, the heartbeat interval and, when it changed, the partitions it may fetch from
(shared with other members: records are locked one by one by ShareFetch).
Errors: INVALID_REQUEST (empty group or member id, no subscription on join),
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, GROUP_ID_NOT_FOUND (the id names a classic or
consumer group), GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
GROUP_AUTHORIZATION_FAILED (no READ on the group), TOPIC_AUTHORIZATION_FAILED (a subscribed topic
the member may not DESCRIBE, existing or not: ``KafkaApis.handleShareGroupHeartbeat`` since
KAFKA-18817).
Version notes: v1 only, as kio 0.6.5 carries (Kafka 4.1's schema; 4.0's early-access v0 is gone).
Not implemented: the group's records in ``__consumer_offsets`` (held in memory only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..group.consumer_coordinator import topic_partitions
from ..group.share_coordinator import ShareHeartbeat
from .access import GROUP, TOPIC, TOPIC_REFUSED, Op, all_allowed, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(76, 1, 1)
def handle_share_group_heartbeat(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    cls = response_class(76, ctx.api_version)
    body: dict[str, Any] = {"throttle_time": 0, "member_epoch": 0, "heartbeat_interval": 0}
    if not allowed(broker, ctx, Op.READ, GROUP, request.group_id):  # Kafka: READ on the group
        return Respond(build(cls, {**body, "error_code": ErrorCode.group_authorization_failed}))
    names = request.subscribed_topic_names
    if names and not all_allowed(broker, ctx, Op.DESCRIBE, TOPIC, (str(n) for n in names)):
        refused = {"error_code": ErrorCode.topic_authorization_failed, "error_message": TOPIC_REFUSED}
        return Respond(build(cls, {**body, **refused}))  # KAFKA-18817: DESCRIBE on every subscribed topic
    req = ShareHeartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=int(request.member_epoch),
        rack_id=request.rack_id,
        subscribed_topic_names=tuple(str(n) for n in names) if names is not None else None,
        client_id=ctx.client_id or "",
        client_host=ctx.client_host,
    )
    coordinator = broker.group_coordinator
    try:
        with coordinator.operation(ctx.received_ms):
            reply = coordinator.share.heartbeat(req)
    except KafkaError as exc:
        return Respond(build(cls, {**body, "error_code": exc.code, "error_message": exc.message}))
    assignment = None
    if reply.assignment is not None:
        assignment = {"topic_partitions": topic_partitions(reply.assignment)}
    return Respond(
        build(
            cls,
            {
                **body,
                "error_code": ErrorCode.none,
                "member_id": reply.member_id,
                "member_epoch": reply.member_epoch,
                "heartbeat_interval": reply.heartbeat_interval_ms,
                "assignment": assignment,
            },
        )
    )
