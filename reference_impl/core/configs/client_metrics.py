"""KIP-714's ``client-metrics`` config resources (resource type 16): their configs and selectors."""

from __future__ import annotations

from .model import ConfigDef, ConfigType

_T = ConfigType

CLIENT_METRICS_CONFIGS: dict[str, ConfigDef] = {
    # KIP-714's client-metrics resources (resource type 16): Kafka's ClientMetricsConfigs
    # (server/src/main/java/org/apache/kafka/server/metrics/ClientMetricsConfigs.java)
    d.name: d
    for d in (
        ConfigDef("metrics", _T.LIST, "", "Metric name prefixes to subscribe to (* for all)."),
        ConfigDef(
            "interval.ms",
            _T.INT,
            "300000",
            "Push interval of the matching clients.",
            valid=lambda v: 100 <= int(v) <= 3600000,
        ),
        ConfigDef("match", _T.LIST, "", "key=regex selectors of the clients this subscription is for."),
    )
}

TELEMETRY_MATCH_KEYS = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)
"""The selectors a ``match`` entry may name (ClientMetricsConfigs.ALLOWED_MATCH_PARAMS)."""
