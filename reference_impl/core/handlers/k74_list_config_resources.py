"""ListConfigResources (formerly ListClientMetricsResources): v0-1.

v0 (KIP-714) lists the client-metrics subscriptions; v1 (KIP-1142) lists config resources of the
types asked for (all supported when none): topics (2), brokers (4, by id), client-metrics (16)
and groups (32: those with group configs). Another type is INVALID_REQUEST.
Authorization: DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED), as Kafka's
``KafkaApis.handleListConfigResources``
(``clients/src/main/resources/common/message/ListConfigResourcesRequest.json`` for the versions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode

from ..metadata.image import BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from .access import Op, cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

SUPPORTED = (TOPIC_RESOURCE, BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE)


@handles(74, 0, 1)
def handle_list_config_resources(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version

    def answer(code: ErrorCode, resources: list[dict[str, Any]]) -> Reply:
        body = {"throttle_time": 0, "error_code": code, "config_resources": resources}
        return Respond(build(response_class(74, version), body))

    if not cluster_allowed(broker, ctx, Op.DESCRIBE_CONFIGS):
        return answer(ErrorCode.cluster_authorization_failed, [])
    asked = (
        [int(t) for t in get(request, "resource_types", ())] if version >= 1 else [CLIENT_METRICS_RESOURCE]
    )
    if any(t not in SUPPORTED for t in asked):
        return answer(ErrorCode.invalid_request, [])
    image = broker.image
    names = {
        CLIENT_METRICS_RESOURCE: sorted(image.client_metrics),
        TOPIC_RESOURCE: sorted(image.topics),
        BROKER_RESOURCE: [str(b) for b in sorted(image.brokers)],
        GROUP_RESOURCE: sorted(image.group_configs),
    }
    resources = [
        {"resource_name": name, "resource_type": rtype}
        for rtype in (asked or SUPPORTED)
        for name in names[rtype]
    ]
    return answer(ErrorCode.none, resources)
