"""Client telemetry (KIP-714) through a real client: librdkafka (confluent-kafka) pushes its metrics
when the broker offers it a subscription (``enable.metrics.push``, on by default since librdkafka 2.5).

The subscription (a ``client-metrics`` config resource matching the client's ``client.id``, every
metric, a 500 ms interval) is set through IncrementalAlterConfigs. What the client pushed is read
from the reference broker's store (DescribeConfigs of the reserved client-metrics resource
``kafka-harness.pushed-telemetry``, what ``kafka-harness telemetry`` prints), so the check runs on
the reference only; another target skips with the reason (a Kafka broker hands pushes to its plugin).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.clients import Client
from fixtures.targets.session import TargetSession
from fixtures.wire import Capabilities, Router, WireClient, ops

FEATURE = "Client telemetry"
PUSH_WINDOW_S = 20.0
"""A bound, not a timing: the loop ends at the first push seen (a few 500 ms intervals on a quiet
machine; a SASL_SSL cluster under load needs its handshakes and the subscription's replication first)."""
LIBRDKAFKA_TELEMETRY = (2, 5, 0)


def _pushed(router: Router, caps: Capabilities, client_id: str) -> dict[str, Any] | None:
    """What ``client_id`` pushed, from the store of whichever broker it pushed to (each broker keeps
    what it received; librdkafka pushes to one broker of its choice)."""
    for wire in router.connections():
        for entry in ops.describe_client_metrics(wire, caps, ops.TELEMETRY_INSPECT_RESOURCE).configs:
            summary: dict[str, Any] = json.loads(entry.value or "{}")
            if summary.get("client_id") == client_id and summary.get("pushes", 0) > 0:
                return summary
    return None


def test_librdkafka_pushes_subscribed_metrics(
    client_factory: Callable[[str], Client],
    target_session: TargetSession,
    wire: WireClient,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """KIP-714: a librdkafka producer matched by a subscription asks for it (GetTelemetrySubscriptions)
    and pushes OTLP metrics named ``org.apache.kafka.*`` (PushTelemetry) within a few intervals."""
    if target_session.spec.kind != "reference":
        pytest.skip("what clients pushed is readable on the reference broker only (its telemetry store)")
    if not (caps.versions("get_telemetry_subscriptions") and caps.versions("push_telemetry")):
        pytest.skip("the target does not advertise GetTelemetrySubscriptions and PushTelemetry")
    client = client_factory("confluent-kafka")
    import confluent_kafka

    librdkafka = tuple(int(x) for x in confluent_kafka.libversion()[0].split(".")[:3])
    if librdkafka < LIBRDKAFKA_TELEMETRY:
        pytest.skip(f"librdkafka {confluent_kafka.libversion()[0]} predates KIP-714 (2.5.0)")
    client_id, subscription = unique("rdk-telemetry"), unique("sub")
    configs: dict[str, str | None] = {"metrics": "*", "interval.ms": "500", "match": f"client_id={client_id}"}
    altered = ops.alter_client_metrics(wire, caps, subscription, configs)
    assert altered.error_code.value == 0, altered
    applied = ops.wait_config_everywhere(router, caps, ops.CLIENT_METRICS, subscription, "interval.ms", "500")
    assert applied, f"not every broker applied the subscription within {ops.CONFIG_APPLY_BOUND_S} s"
    try:
        settings = {**client.security.confluent(), "bootstrap.servers": client.bootstrap}
        settings["client.id"] = client_id
        producer = confluent_kafka.Producer(settings)
        deadline = time.monotonic() + PUSH_WINDOW_S
        summary = None
        while summary is None and time.monotonic() < deadline:
            producer.produce(topic, b"x")
            producer.poll(0.25)
            summary = _pushed(router, caps, client_id)
        producer.flush(10)
    finally:
        ops.alter_client_metrics(wire, caps, subscription, dict.fromkeys(configs))
    assert summary is not None, f"librdkafka ({client_id}) pushed no telemetry within {PUSH_WINDOW_S} s"
    names = [n for push in summary["last_pushes"] for n in push["metrics"]]
    assert names and all(n.startswith("org.apache.kafka.") for n in names), names
    print(f"librdkafka pushed {summary['pushes']} time(s), {summary['bytes']} bytes: {sorted(set(names))}")
