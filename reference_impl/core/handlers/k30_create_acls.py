"""CreateAcls: v1-3. Add ACL bindings, kept in the metadata log (AccessControlEntryRecord).

Behaviour (Kafka's ``AclApis.handleCreateAcls`` and the controller's
``AclControlManager.createAcls``, metadata/src/main/java/org/apache/kafka/controller/): every
creation gets SECURITY_DISABLED without an authorizer and CLUSTER_AUTHORIZATION_FAILED without ALTER
on the cluster; each ACL is checked on its own (INVALID_REQUEST: an UNKNOWN or ANY code, a pattern
type other than LITERAL/PREFIXED, an empty name, a CLUSTER resource not named ``kafka-cluster``, a
principal without ``Type:``); an ACL already held is a success. In a cluster a broker forwards the
request to the active controller, which answers once the records are committed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..security.acls import Acl
from .access import Op, cluster_allowed
from .k29_describe_acls import NO_AUTHORIZER
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(30, 1, 3)
def handle_create_acls(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def answer(results: list[dict[str, Any]]) -> Reply:
        return Respond(build(response_class(30, ctx.api_version), {"throttle_time": 0, "results": results}))

    count = len(request.creations)
    refusal: KafkaError | None = None
    if broker.authorizer is None:
        refusal = KafkaError(ErrorCode.security_disabled, NO_AUTHORIZER)
    elif not cluster_allowed(broker, ctx, Op.ALTER):
        refusal = KafkaError(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    if refusal is None:
        acls = [
            Acl.of(
                int(c.resource_type),
                c.resource_name,
                int(c.resource_pattern_type),
                c.principal,
                c.host,
                int(c.operation),
                int(c.permission_type),
            )
            for c in request.creations
        ]
        try:
            outcomes = broker.controller.writer().create_acls(acls, ctx.received_ms)
        except KafkaError as exc:  # NOT_CONTROLLER
            outcomes = [exc] * count
    else:
        outcomes = [refusal] * count
    return answer(
        [
            {"error_code": ErrorCode.none, "error_message": None}
            if o is None
            else {"error_code": o.code, "error_message": o.message}
            for o in outcomes
        ]
    )
