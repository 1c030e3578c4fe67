"""DeleteAcls: v1-3. Remove the ACLs each filter matches (RemoveAccessControlEntryRecord).

Behaviour (Kafka's ``AclApis.handleDeleteAcls`` and ``AclControlManager.deleteAcls``): every
filter gets SECURITY_DISABLED without an authorizer and CLUSTER_AUTHORIZATION_FAILED without ALTER
on the cluster; a filter with an UNKNOWN code INVALID_REQUEST; else the ACLs it matched, each
removed. In a cluster the active controller decides (forwarded, answered once committed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..security.acls import Acl, AclFilter
from .access import Op, cluster_allowed
from .k29_describe_acls import NO_AUTHORIZER
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


def _matching(acl: Acl) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": int(acl.resource_type),
        "resource_name": acl.resource_name,
        "pattern_type": int(acl.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": int(acl.operation),
        "permission_type": int(acl.permission),
    }


@handles(31, 1, 3)
def handle_delete_acls(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    count = len(request.filters)
    outcomes: list[KafkaError | list[Acl]]
    if broker.authorizer is None:
        outcomes = [KafkaError(ErrorCode.security_disabled, NO_AUTHORIZER)] * count
    elif not cluster_allowed(broker, ctx, Op.ALTER):
        outcomes = [
            KafkaError(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
        ] * count
    else:
        filters = [
            AclFilter.of(
                int(f.resource_type_filter),
                f.resource_name_filter,
                int(f.pattern_type_filter),
                f.principal_filter,
                f.host_filter,
                int(f.operation),
                int(f.permission_type),
            )
            for f in request.filters
        ]
        try:
            outcomes = broker.controller.writer().delete_acls(filters, ctx.received_ms)
        except KafkaError as exc:  # NOT_CONTROLLER
            outcomes = [exc] * count
    results: list[dict[str, Any]] = [
        {"error_code": o.code, "error_message": o.message, "matching_acls": []}
        if isinstance(o, KafkaError)
        else {"error_code": ErrorCode.none, "error_message": None, "matching_acls": [_matching(a) for a in o]}
        for o in outcomes
    ]
    return Respond(
        build(response_class(31, ctx.api_version), {"throttle_time": 0, "filter_results": results})
    )
