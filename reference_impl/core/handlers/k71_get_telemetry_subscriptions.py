"""GetTelemetrySubscriptions (KIP-714): v0. The metrics a client instance should push, and how often.

Kafka: ``KafkaApis.handleGetTelemetrySubscriptionsRequest`` over
``server/src/main/java/org/apache/kafka/server/ClientMetricsManager.java``; the rules are in
``core/telemetry.py``. A Kafka broker advertises the telemetry APIs only when a metrics reporter
that receives client telemetry is configured; the reference always has its receiver (the bounded
store that ``kafka-harness telemetry`` reads), so it always advertises them. The software name and
version selectors match what the connection's ApiVersions v3+ said (``k18_api_versions`` notes it).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build

from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(71, 0, 0)
def handle_get_telemetry_subscriptions(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    fields = broker.telemetry.get_subscriptions(
        broker.image,
        request.client_instance_id,
        uuid.UUID(int=broker.rng.getrandbits(128) or 1),
        ctx.client_id,
        ctx.client_host,
        broker.config.get_int("telemetry.max.bytes"),
        ctx.received_ms,
        ctx.connection_id,
    )
    body = {
        "throttle_time": 0,
        "client_instance_id": None,
        "subscription_id": 0,
        "accepted_compression_types": [],
        "push_interval": 0,
        "telemetry_max_bytes": 0,
        "delta_temporality": False,
        "requested_metrics": [],
    } | fields
    return Respond(build(response_class(71, ctx.api_version), body))
