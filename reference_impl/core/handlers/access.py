"""What the handlers ask the authorizer (issue 18): may this request's principal do this?

Kafka's ``AuthHelper`` (``core/src/main/scala/kafka/server/AuthHelper.scala``) with the
:class:`~..security.acls.Authorizer`: without an authorizer everything is allowed and the
authorized-operations bitfields carry every operation the resource type supports. Requests on a
controller listener come from the cluster's own nodes (forwarded admin requests, which the node
that took them from the client has authorized, and the quorum APIs), which Kafka's deployments make
super users; they are not checked here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.acl_codes import Operation, ResourceType

from ..security.acls import CLUSTER_NAME, NOT_REQUESTED, SUPPORTED_OPERATIONS

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TXN = ResourceType.TRANSACTIONAL_ID
Op = Operation

__all__ = ["CLUSTER", "GROUP", "TOPIC", "TXN", "Op", "allowed", "bitfield", "cluster_allowed", "unchecked"]


def unchecked(broker: HandlerHost, ctx: RequestContext) -> bool:
    """No authorizer, or a request from the cluster's own nodes."""
    return broker.authorizer is None or broker.is_controller_listener(ctx.listener)


def allowed(broker: HandlerHost, ctx: RequestContext, op: Operation, rtype: ResourceType, name: str) -> bool:
    authorizer = broker.authorizer
    if authorizer is None or broker.is_controller_listener(ctx.listener):
        return True
    return authorizer.authorize(broker.image.acls, ctx.principal, ctx.client_host, op, rtype, name)


def cluster_allowed(broker: HandlerHost, ctx: RequestContext, op: Operation) -> bool:
    return allowed(broker, ctx, op, CLUSTER, CLUSTER_NAME)


def any_allowed(broker: HandlerHost, ctx: RequestContext, op: Operation, rtype: ResourceType) -> bool:
    """``authorizeByResourceType``: ``op`` on some resource of ``rtype``."""
    authorizer = broker.authorizer
    if authorizer is None or broker.is_controller_listener(ctx.listener):
        return True
    return authorizer.authorize_by_type(broker.image.acls, ctx.principal, ctx.client_host, op, rtype)


def bitfield(broker: HandlerHost, ctx: RequestContext, requested: Any, rtype: ResourceType, name: str) -> int:
    """An ``authorized_operations`` field: ``Integer.MIN_VALUE`` unless ``requested``."""
    if not requested:
        return NOT_REQUESTED
    authorizer = broker.authorizer
    if authorizer is None or broker.is_controller_listener(ctx.listener):
        bits = 0
        for op in SUPPORTED_OPERATIONS.get(rtype, ()):
            bits |= 1 << int(op)
        return bits
    return authorizer.authorized_operations(broker.image.acls, ctx.principal, ctx.client_host, rtype, name)
