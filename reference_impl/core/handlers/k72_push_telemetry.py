"""PushTelemetry (KIP-714): v0. A client instance's metrics (OTLP ``MetricsData``), kept bounded.

Kafka: ``KafkaApis.handlePushTelemetryRequest`` over
``server/src/main/java/org/apache/kafka/server/ClientMetricsManager.java``; the checks, their order
and the store are in ``core/telemetry.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build

from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(72, 0, 0)
def handle_push_telemetry(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    code = broker.telemetry.push(
        broker.image,
        request,
        ctx.client_id,
        ctx.client_host,
        broker.config.get_int("telemetry.max.bytes"),
        ctx.received_ms,
        ctx.connection_id,
    )
    return Respond(build(response_class(72, ctx.api_version), {"throttle_time": 0, "error_code": code}))
