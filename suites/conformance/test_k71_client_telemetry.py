"""Client telemetry (KIP-714): GetTelemetrySubscriptions (71), PushTelemetry (72), ListConfigResources
(74) and ``client-metrics`` config resources (type 16) through IncrementalAlterConfigs / DescribeConfigs.

Rules from KIP-714 and Kafka's broker (``server/src/main/java/org/apache/kafka/server/
ClientMetricsManager.java``, ``.../server/metrics/ClientMetricsInstance.java``,
``.../server/metrics/ClientMetricsConfigs.java``). Each case runs where the target advertises the
APIs it needs (a Kafka broker advertises 71/72 only with a client-telemetry receiver configured);
every subscription a case makes names its own client id in ``match`` and is deleted after it.
"""

from __future__ import annotations

import gzip
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fixtures.wire import Capabilities, WireClient, ops

from .expect import expect, expect_code, expect_equal

FEATURE = "Client telemetry"
RULE = "KIP-714"
MANAGER = "ClientMetricsManager.java"
CLIENT_METRICS = 16
SET, DELETE = 0, 1
APPLY_WAIT_S = 10.0


def _metrics_data(*names: str) -> bytes:
    """A minimal OTLP MetricsData: one resource, one scope, a metric per name (name only)."""

    def field(number: int, payload: bytes) -> bytes:
        length = len(payload)
        prefix = bytearray()
        while True:
            byte = length & 0x7F
            length >>= 7
            prefix.append(byte | (0x80 if length else 0))
            if not length:
                break
        return bytes([(number << 3) | 2]) + bytes(prefix) + payload

    metrics = b"".join(field(2, field(1, n.encode())) for n in names)
    return field(1, field(2, metrics))


def _alter(wire: WireClient, caps: Capabilities, name: str, op: int, configs: dict[str, str | None]) -> Any:
    return ops.alter_client_metrics(wire, caps, name, configs if op == SET else dict.fromkeys(configs))


def _describe(wire: WireClient, caps: Capabilities, name: str) -> Any:
    return ops.describe_client_metrics(wire, caps, name)


def _require_client_metrics(caps: Capabilities) -> None:
    """A target that advertises ListConfigResources (KIP-714's ListClientMetricsResources) claims
    client-metrics resources; one that does not is skipped."""
    if not caps.versions("incremental_alter_configs") or not caps.versions("list_config_resources"):
        pytest.skip("the target does not advertise IncrementalAlterConfigs and ListConfigResources")


@pytest.fixture
def subscription(
    wire: WireClient, caps: Capabilities, unique: Callable[[str], str]
) -> Iterator[Callable[..., str]]:
    """``make(client_id, metrics, interval_ms, also="")`` → a subscription for that client id (and the
    ``also`` selectors); deleted after."""
    _require_client_metrics(caps)
    made: list[str] = []

    def make(client_id: str, metrics: str, interval_ms: int, also: str = "") -> str:
        name = unique("sub")
        configs: dict[str, str | None] = {
            "metrics": metrics,
            "interval.ms": str(interval_ms),
            "match": f"client_id={client_id}" + (f",{also}" if also else ""),
        }
        result = _alter(wire, caps, name, SET, configs)
        expect_code(result.error_code, "NONE", rule=RULE, where=f"creating subscription {name}")
        made.append(name)
        # on a cluster the broker this test talks to applies the controller's record in its own time
        deadline = time.monotonic() + APPLY_WAIT_S
        while not _describe(wire, caps, name).configs and time.monotonic() < deadline:
            time.sleep(0.05)
        return name

    yield make
    for name in made:
        _alter(wire, caps, name, DELETE, {"metrics": None, "interval.ms": None, "match": None})


def _get(wire: WireClient, instance: uuid.UUID | None = None) -> Any:
    return wire.request("get_telemetry_subscriptions", 0, client_instance_id=instance or uuid.UUID(int=0))


def _push(
    wire: WireClient, instance: uuid.UUID, subscription_id: int, metrics: bytes = b"", **kw: Any
) -> Any:
    return wire.request(
        "push_telemetry",
        0,
        client_instance_id=instance,
        subscription_id=subscription_id,
        terminating=kw.get("terminating", False),
        compression_type=kw.get("compression_type", 0),
        metrics=metrics,
    )


@pytest.fixture
def telemetry_client(
    caps: Capabilities, wire_factory: Callable[..., WireClient], unique: Callable[[str], str]
) -> tuple[WireClient, str]:
    if not (caps.versions("get_telemetry_subscriptions") and caps.versions("push_telemetry")):
        pytest.skip("the target does not advertise GetTelemetrySubscriptions and PushTelemetry")
    client_id = unique("telemetry-client")
    return wire_factory(client_id=client_id), client_id


@pytest.mark.versions("get_telemetry_subscriptions")
def test_subscription_for_a_matching_client(
    version: int, telemetry_client: tuple[WireClient, str], subscription: Callable[..., str]
) -> None:
    """A new instance (zero id) gets an id, the metrics and interval of the subscription matching its
    client id, the compression types and ``telemetry_max_bytes``; delta temporality."""
    wire, client_id = telemetry_client
    subscription(client_id, "org.apache.kafka.producer.", 60000)
    answer = _get(wire)
    expect_code(answer.error_code, "NONE", rule=MANAGER)
    expect(answer.client_instance_id not in (None, uuid.UUID(int=0)), RULE, "no client instance id assigned")
    expect_equal(list(answer.requested_metrics), ["org.apache.kafka.producer."], RULE, "requested metrics")
    expect_equal(int(answer.push_interval.total_seconds() * 1000), 60000, RULE, "push interval (ms)")
    expect(int(answer.telemetry_max_bytes) > 0, RULE, "telemetry_max_bytes is not positive")
    expect(bool(answer.delta_temporality), RULE, "delta_temporality false")
    expect(set(answer.accepted_compression_types) <= {0, 1, 2, 3, 4}, RULE, "unknown compression types")


@pytest.mark.versions("get_telemetry_subscriptions")
def test_unmatched_client_gets_no_metrics_and_early_get_is_throttled(
    version: int, telemetry_client: tuple[WireClient, str]
) -> None:
    """A client no subscription matches is asked for no metrics (default interval); asking again
    before the push interval is THROTTLING_QUOTA_EXCEEDED (ClientMetricsInstance.java)."""
    wire, _ = telemetry_client
    first = _get(wire)
    expect_code(first.error_code, "NONE", rule=MANAGER)
    expect_equal(list(first.requested_metrics), [], RULE, "requested metrics of an unmatched client")
    again = _get(wire, first.client_instance_id)
    expect_code(again.error_code, "THROTTLING_QUOTA_EXCEEDED", rule=MANAGER)


@pytest.mark.versions("get_telemetry_subscriptions")
def test_software_name_selector(
    version: int, telemetry_client: tuple[WireClient, str], subscription: Callable[..., str]
) -> None:
    """``match`` selectors on client_software_name/version match what the connection's ApiVersions
    v3+ said (here the harness's "kafka-harness"), together with the client id."""
    wire, client_id = telemetry_client
    wire.api_versions()
    subscription(client_id, "org.apache.kafka.consumer.", 60000, "client_software_name=kafka-harness")
    subscription(client_id, "org.apache.kafka.producer.", 60000, "client_software_name=librdkafka")
    answer = _get(wire)
    expect_code(answer.error_code, "NONE", rule=MANAGER)
    wanted = ["org.apache.kafka.consumer."]
    expect_equal(
        list(answer.requested_metrics), wanted, RULE, "metrics of the subscription matching the software"
    )


@pytest.mark.versions("push_telemetry")
def test_push_rules(
    version: int, telemetry_client: tuple[WireClient, str], subscription: Callable[..., str]
) -> None:
    """Each on a new client instance, right after its GetTelemetrySubscriptions (a push's throttle
    check comes first and a refused push still counts as the last push): another subscription id is
    UNKNOWN_SUBSCRIPTION_ID; an unknown compression type UNSUPPORTED_COMPRESSION_TYPE; a gzip push of
    OTLP metrics NONE, a second one at once THROTTLING_QUOTA_EXCEEDED, a terminating one NONE (never
    throttled), and any push after it INVALID_REQUEST."""
    wire, client_id = telemetry_client
    subscription(client_id, "*", 60000)
    payload = gzip.compress(_metrics_data("org.apache.kafka.producer.record.queue.time.avg"))

    def fresh() -> tuple[uuid.UUID, int]:
        sub = _get(wire)
        expect_code(sub.error_code, "NONE", rule=MANAGER)
        return sub.client_instance_id, int(sub.subscription_id)

    iid, sid = fresh()
    expect_code(_push(wire, iid, sid + 1).error_code, "UNKNOWN_SUBSCRIPTION_ID", rule=MANAGER)
    iid, sid = fresh()
    unknown_codec = _push(wire, iid, sid, payload, compression_type=9).error_code
    expect_code(unknown_codec, "UNSUPPORTED_COMPRESSION_TYPE", rule=MANAGER)
    iid, sid = fresh()
    expect_code(_push(wire, iid, sid, payload, compression_type=1).error_code, "NONE", rule=MANAGER)
    again = _push(wire, iid, sid, payload, compression_type=1).error_code
    expect_code(again, "THROTTLING_QUOTA_EXCEEDED", rule=MANAGER)
    expect_code(_push(wire, iid, sid, terminating=True).error_code, "NONE", rule=MANAGER)
    expect_code(_push(wire, iid, sid, terminating=True).error_code, "INVALID_REQUEST", rule=MANAGER)


@pytest.mark.versions("push_telemetry")
def test_push_larger_than_telemetry_max_bytes(
    version: int, telemetry_client: tuple[WireClient, str], subscription: Callable[..., str]
) -> None:
    """Metrics longer than the broker's ``telemetry_max_bytes`` are TELEMETRY_TOO_LARGE."""
    wire, client_id = telemetry_client
    subscription(client_id, "*", 60000)
    sub = _get(wire)
    limit = int(sub.telemetry_max_bytes)
    if limit > 4 * 1024 * 1024:
        pytest.skip(f"telemetry_max_bytes {limit} is above what this case sends")
    answer = _push(wire, sub.client_instance_id, int(sub.subscription_id), b"\0" * (limit + 1))
    expect_code(answer.error_code, "TELEMETRY_TOO_LARGE", rule=MANAGER)


@pytest.mark.versions("push_telemetry")
def test_zero_instance_id_push_is_invalid(version: int, telemetry_client: tuple[WireClient, str]) -> None:
    """A push naming the zero client instance id is INVALID_REQUEST."""
    wire, _ = telemetry_client
    expect_code(_push(wire, uuid.UUID(int=0), 0).error_code, "INVALID_REQUEST", rule=MANAGER)


def test_client_metrics_configs_round_trip(
    wire: WireClient, caps: Capabilities, subscription: Callable[..., str]
) -> None:
    """A subscription set through IncrementalAlterConfigs is described with its three configs
    (source CLIENT_METRICS_CONFIG), and listed by ListConfigResources at every version."""
    name = subscription("some-client", "org.apache.kafka.consumer.", 30000)
    described = _describe(wire, caps, name)
    expect_code(described.error_code, "NONE", rule=RULE)
    configs = {c.name: c.value for c in described.configs}
    expect_equal(
        configs,
        {"metrics": "org.apache.kafka.consumer.", "interval.ms": "30000", "match": "client_id=some-client"},
        RULE,
        "client-metrics configs",
    )
    for version in caps.versions("list_config_resources"):
        body: dict[str, Any] = {"resource_types": [CLIENT_METRICS]} if version >= 1 else {}
        listed = wire.request("list_config_resources", version, **body)
        expect_code(listed.error_code, "NONE", rule="KIP-1142")
        expect(
            name in {r.resource_name for r in listed.config_resources},
            "KIP-1142",
            f"v{version}: {name} not listed",
        )


@pytest.mark.parametrize(
    ("configs", "code"),
    [
        ({"no.such.config": "1"}, "INVALID_REQUEST"),
        ({"interval.ms": "50"}, "INVALID_REQUEST"),
        ({"match": "no_such_key=x"}, "INVALID_CONFIG"),
    ],
    ids=["unknown-name", "interval-too-short", "bad-match-key"],
)
def test_bad_client_metrics_configs_are_refused(
    wire: WireClient, caps: Capabilities, unique: Callable[[str], str], configs: dict[str, str], code: str
) -> None:
    """ClientMetricsConfigs.validate: unknown names and an interval outside 100 ms..1 h are
    INVALID_REQUEST, a match selector on an unknown key INVALID_CONFIG."""
    _require_client_metrics(caps)
    result = _alter(wire, caps, unique("bad-sub"), SET, dict(configs))
    expect_code(result.error_code, code, rule="ClientMetricsConfigs.java")
