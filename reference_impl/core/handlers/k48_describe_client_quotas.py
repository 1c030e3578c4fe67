"""DescribeClientQuotas: v0-1. The client quotas (issue 20) matching a filter, from the image.

Kafka's ``ClientQuotasImage.describe`` (``metadata/src/main/java/org/apache/kafka/image/
ClientQuotasImage.java``), answered by any broker from its metadata image (the quota table that
``ClientQuotaRecord`` replays into); the filter rules are :mod:`..quota_entities` (INVALID_REQUEST
for a bad combination, UNSUPPORTED_VERSION for an unknown entity type). Refused as a whole with
CLUSTER_AUTHORIZATION_FAILED when the principal may not DESCRIBE_CONFIGS the cluster (Kafka's
``KafkaApis.handleDescribeClientQuotasRequest``). v1 is v0 made flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.acl_codes import Operation
from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from ..quota_entities import Component, InvalidFilter, check_filter, matches
from .access import cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


def _refused(api_version: int, error: int, message: str) -> Reply:
    body = {"throttle_time": 0, "error_code": error, "error_message": message, "entries": None}
    return Respond(build(response_class(48, api_version), body))


@handles(48, 0, 1)
def handle_describe_client_quotas(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if not cluster_allowed(broker, ctx, Operation.DESCRIBE_CONFIGS):
        return _refused(
            ctx.api_version, ErrorCode.cluster_authorization_failed, "Cluster authorization failed."
        )
    try:
        components = check_filter(Component(c.entity_type, c.match_type, c.match) for c in request.components)
    except InvalidFilter as exc:
        return _refused(ctx.api_version, getattr(ErrorCode, exc.error.lower()), str(exc))
    entries = []
    for entity, values in broker.image.client_quotas.items():
        as_map = dict(entity)
        if not matches(as_map, components, request.strict):
            continue
        entries.append(
            {
                "entity": [
                    {"entity_type": t, "entity_name": n} for t, n in sorted(entity, key=lambda p: p[0])
                ],
                "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
            }
        )
    body = {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "entries": entries}
    return Respond(build(response_class(48, ctx.api_version), body))
