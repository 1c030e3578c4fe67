"""What the handlers ask the authorizer (issue 18): may this request's principal do this?

Kafka's ``AuthHelper`` (``core/src/main/scala/kafka/server/AuthHelper.scala``) with the
:class:`~..security.acls.Authorizer`: without an authorizer everything is allowed and the
authorized-operations bitfields carry every operation the resource type supports. Requests on a
controller listener come from the cluster's own nodes (forwarded admin requests, which the node
that took them from the client has authorized, and the quorum APIs), which Kafka's deployments make
super users; they are not checked here.
"""

from __future__ import annotations

from collections.abc import Iterable
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

__all__ = [
    "CLUSTER",
    "GROUP",
    "TOPIC",
    "TOPIC_REFUSED",
    "TXN",
    "Op",
    "all_allowed",
    "allowed",
    "bitfield",
    "cluster_allowed",
    "unchecked",
]

TOPIC_REFUSED = "Topic authorization failed."
"""The message of Kafka's ``Errors.TOPIC_AUTHORIZATION_FAILED``, which a request's
``getErrorResponse`` carries where the response has an error message."""


def unchecked(broker: HandlerHost, ctx: RequestContext) -> bool:
    """No authorizer, or a request from the cluster's own nodes."""
    return broker.authorizer is None or broker.is_controller_listener(ctx.listener)


def allowed(broker: HandlerHost, ctx: RequestContext, op: Operation, rtype: ResourceType, name: str) -> bool:
    authorizer = broker.authorizer
    if authorizer is None or broker.is_controller_listener(ctx.listener):
        return True
    return authorizer.authorize(broker.image.acls, ctx.principal, ctx.client_host, op, rtype, name)


def all_allowed(
    broker: HandlerHost, ctx: RequestContext, op: Operation, rtype: ResourceType, names: Iterable[str]
) -> bool:
    """``op`` on every one of ``names`` (none: allowed)."""
    return all(allowed(broker, ctx, op, rtype, name) for name in names)


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


def admin_write_authorized(broker: HandlerHost, ctx: RequestContext, api_key: int, request: Any) -> bool:
    """Whether the principal may do everything an admin write asks (CreateTopics, DeleteTopics,
    CreateAcls, DeleteAcls, AlterConfigs, CreatePartitions, IncrementalAlterConfigs,
    AlterClientQuotas, AlterUserScramCredentials, UpdateFeatures).

    A broker forwards such a request to the active controller (KIP-590), where it arrives on the
    controller listener and is not checked again; Kafka's controller checks the principal the
    Envelope carries instead. Here the forwarding node forwards only a request it authorizes whole;
    any other it answers itself: the refused resources with their authorization errors, the others
    with NOT_CONTROLLER, which clients retry at the controller."""
    if unchecked(broker, ctx):
        return True
    if api_key in (30, 31, 51, 57, 80, 81):  # CreateAcls, DeleteAcls, AlterUserScramCredentials,
        # UpdateFeatures, AddRaftVoter, RemoveRaftVoter
        return cluster_allowed(broker, ctx, Op.ALTER)
    if api_key == 49:  # AlterClientQuotas: ALTER_CONFIGS on the cluster (ControllerApis)
        return cluster_allowed(broker, ctx, Op.ALTER_CONFIGS)
    if api_key == 19:
        return cluster_allowed(broker, ctx, Op.CREATE) or all(
            allowed(broker, ctx, Op.CREATE, TOPIC, t.name) for t in request.topics
        )
    if api_key == 20:
        names = list(getattr(request, "topic_names", None) or ())
        for t in getattr(request, "topics", None) or ():
            found = broker.image.topic_by_id(t.topic_id) if t.name is None else None
            names.append(t.name if t.name is not None else (found.name if found else ""))
        return all(allowed(broker, ctx, Op.DELETE, TOPIC, n) for n in names)
    if api_key == 37:
        return all(allowed(broker, ctx, Op.ALTER, TOPIC, t.name) for t in request.topics)
    if api_key in (33, 44):
        return all(
            allowed(broker, ctx, Op.ALTER_CONFIGS, TOPIC, r.resource_name)
            if int(r.resource_type) == int(TOPIC)
            else cluster_allowed(broker, ctx, Op.ALTER_CONFIGS)
            for r in request.resources
        )
    return False
