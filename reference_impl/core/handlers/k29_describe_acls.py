"""DescribeAcls: v1-3. The ACLs a filter matches, grouped by resource pattern.

Behaviour (Kafka's ``AclApis.handleDescribeAcls``, ``core/src/main/scala/kafka/server/AclApis.scala``,
and ``AclBindingFilter``): SECURITY_DISABLED without an authorizer ("No Authorizer is configured"),
CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster, INVALID_REQUEST for a filter with an
UNKNOWN code; else every matching ACL, one entry per (resource type, name, pattern type).
Version notes: v1+ pattern types (v0, literal only, is gone from Kafka 4 and kio); v2+ flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from ..security.acls import AclFilter
from .access import Op, cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

NO_AUTHORIZER = "No Authorizer is configured."


@handles(29, 1, 3)
def handle_describe_acls(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def answer(code: ErrorCode, message: str | None, resources: list[dict[str, Any]]) -> Reply:
        body = {"throttle_time": 0, "error_code": code, "error_message": message, "resources": resources}
        return Respond(build(response_class(29, ctx.api_version), body))

    if broker.authorizer is None:
        return answer(ErrorCode.security_disabled, NO_AUTHORIZER, [])
    if not cluster_allowed(broker, ctx, Op.DESCRIBE):
        return answer(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.", [])
    flt = AclFilter.of(
        int(request.resource_type_filter),
        request.resource_name_filter,
        int(request.pattern_type_filter),
        request.principal_filter,
        request.host_filter,
        int(request.operation),
        int(request.permission_type),
    )
    problem = flt.problem()
    if problem is not None:
        return answer(ErrorCode.invalid_request, problem, [])
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for _, acl in broker.image.acls:
        if flt.matches(acl):
            key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
            grouped.setdefault(key, []).append(
                {
                    "principal": acl.principal,
                    "host": acl.host,
                    "operation": int(acl.operation),
                    "permission_type": int(acl.permission),
                }
            )
    resources = [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
        for (t, n, p), acls in sorted(grouped.items())
    ]
    return answer(ErrorCode.none, None, resources)
