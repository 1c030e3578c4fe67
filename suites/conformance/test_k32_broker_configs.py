"""Broker and topic config catalogues: DescribeConfigs (32) and IncrementalAlterConfigs (44) on broker
resources, as Kafka's ConfigHelper, ConfigAdminManager and DynamicBrokerConfig answer them.

Rules (apache/kafka, core/src/main/scala/kafka/server/): a broker config Kafka defines as dynamic
per broker (``DynamicBrokerConfig``: the SASL/Kerberos and listener configs) may be set on a broker
(resource name = its id) and is then described with config_source DYNAMIC_BROKER_CONFIG (KIP-226);
a read-only one is refused with INVALID_REQUEST "Cannot update these configs dynamically"
(``DynamicBrokerConfig.validateConfigs``, made INVALID_REQUEST by ``ConfigAdminManager``); a per-broker
config at the cluster-wide default (resource name "") is INVALID_REQUEST; a topic is described with
every topic config ``LogConfig`` defines.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, ops

from .expect import expect, expect_code, expect_equal

FEATURE = "Configs"
TOPIC, BROKER = 2, 4
DYNAMIC_BROKER_CONFIG, DEFAULT_CONFIG = 2, 5
SET, DELETE = 0, 1
RELOGIN = "sasl.kerberos.min.time.before.relogin"

KAFKA_TOPIC_CONFIGS = frozenset(
    # LogConfig's topic configs (storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java
    # at apache/kafka 1eb7644), without message.format.version, message.timestamp.difference.max.ms and
    # message.downconversion.enable: deprecated there, gone from Kafka 4.0 (KIP-724)
    {
        "cleanup.policy",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.type",
        "compression.zstd.level",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        "unclean.leader.election.enable",
    }
)


def a_broker(router: Router, caps: Capabilities) -> int:
    """A broker that is not the controller Metadata names, when there is one (so a change to its own
    configs is forwarded to the controller, KIP-590)."""
    answer = ops.metadata(router, caps, [])
    nodes = sorted(int(b.node_id) for b in answer.brokers)
    others = [n for n in nodes if n != int(answer.controller_id)]
    return (others or nodes)[0]


def alter_broker(router: Router, caps: Capabilities, node: str, changes: list[tuple[str, int, Any]]) -> Any:
    """IncrementalAlterConfigs of a broker resource, sent to that broker (or any, for the default "")."""
    at = router.node(int(node)) if node else router.bootstrap
    answer = at.request(
        "incremental_alter_configs",
        caps.best("incremental_alter_configs"),
        validate_only=False,
        resources=[
            {
                "resource_type": BROKER,
                "resource_name": node,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in changes],
            }
        ],
    )
    return answer.responses[0]


def describe_broker(router: Router, caps: Capabilities, node: int, keys: list[str] | None) -> dict[str, Any]:
    answer = router.node(node).request(
        "describe_configs",
        caps.best("describe_configs"),
        include_synonyms=False,
        include_documentation=False,
        resources=[{"resource_type": BROKER, "resource_name": str(node), "configuration_keys": keys}],
    )
    result = answer.results[0]
    expect_code(result.error_code, "NONE", rule="KIP-133")
    return {c.name: c for c in result.configs}


@pytest.mark.requires("incremental_alter_configs")
def test_kerberos_relogin_is_set_on_a_broker(router: Router, caps: Capabilities) -> None:
    """librdkafka's admin test: sasl.kerberos.min.time.before.relogin (a per-broker dynamic config,
    DynamicListenerConfig.ReconfigurableConfigs) set on a broker succeeds; DescribeConfigs of that broker
    then shows it with config_source DYNAMIC_BROKER_CONFIG; DELETE restores Kafka's default (60000)."""
    node = a_broker(router, caps)
    before = describe_broker(router, caps, node, [RELOGIN])
    expect(RELOGIN in before, "DynamicBrokerConfig", f"{RELOGIN} not described by broker {node}")
    answer = alter_broker(router, caps, str(node), [(RELOGIN, SET, "58000")])
    expect_code(answer.error_code, "NONE", rule="KIP-226 per-broker config", where=answer.error_message or "")
    try:
        wire = router.node(node)
        applied = ops.wait_config_everywhere(router, caps, BROKER, str(node), RELOGIN, "58000", on=[wire])
        expect(applied, "KIP-226", f"broker {node} never described {RELOGIN}=58000")
        entry = describe_broker(router, caps, node, [RELOGIN])[RELOGIN]
        expect_equal(int(entry.config_source), DYNAMIC_BROKER_CONFIG, "KIP-226", f"{RELOGIN} config_source")
    finally:
        alter_broker(router, caps, str(node), [(RELOGIN, DELETE, None)])
    restored = ops.wait_config_everywhere(
        router, caps, BROKER, str(node), RELOGIN, "60000", on=[router.node(node)]
    )
    expect(restored, "KIP-339 DELETE", f"{RELOGIN} did not return to Kafka's default 60000")


@pytest.mark.requires("incremental_alter_configs")
def test_a_per_broker_config_is_refused_at_the_cluster_default(router: Router, caps: Capabilities) -> None:
    """DynamicBrokerConfig.validateConfigs: a per-broker config named at the cluster-wide default
    (resource name "") is INVALID_REQUEST, broker id must be specified."""
    answer = alter_broker(router, caps, "", [(RELOGIN, SET, "58000")])
    expect_code(answer.error_code, "INVALID_REQUEST", rule="DynamicBrokerConfig per-broker configs")
    expect(
        "broker id must be specified" in (answer.error_message or ""),
        "DynamicBrokerConfig per-broker configs",
        f"message {answer.error_message!r}",
    )


@pytest.mark.requires("incremental_alter_configs")
def test_a_read_only_broker_config_is_refused(router: Router, caps: Capabilities) -> None:
    """DynamicBrokerConfig.validateConfigs: broker.id is not dynamic; ConfigAdminManager answers
    INVALID_REQUEST "Cannot update these configs dynamically: Set(broker.id)"."""
    node = a_broker(router, caps)
    answer = alter_broker(router, caps, str(node), [("broker.id", SET, str(node))])
    expect_code(answer.error_code, "INVALID_REQUEST", rule="DynamicBrokerConfig read-only configs")
    expect_equal(
        answer.error_message,
        "Cannot update these configs dynamically: Set(broker.id)",
        "DynamicBrokerConfig read-only configs",
        "error message",
    )
    entry = describe_broker(router, caps, node, ["broker.id"])["broker.id"]
    expect(bool(entry.read_only), "ConfigHelper read_only", "broker.id is not described read-only")


def test_a_topic_lists_kafkas_topic_configs(router: Router, caps: Capabilities, topic: str) -> None:
    """LogConfig: DescribeConfigs of a topic lists every topic config Kafka defines, each read_only
    false (ConfigHelper.createTopicConfigEntry)."""
    answer = router.to_controller().request(
        "describe_configs",
        caps.best("describe_configs"),
        include_synonyms=False,
        include_documentation=False,
        resources=[{"resource_type": TOPIC, "resource_name": topic, "configuration_keys": None}],
    )
    result = answer.results[0]
    expect_code(result.error_code, "NONE", rule="KIP-133")
    described = {c.name: c for c in result.configs}
    missing = sorted(KAFKA_TOPIC_CONFIGS - set(described))
    expect(not missing, "LogConfig", f"topic configs not described: {missing}")
    writable = [n for n in KAFKA_TOPIC_CONFIGS if described[n].read_only]
    expect(not writable, "ConfigHelper read_only", f"described read-only: {writable}")


@pytest.mark.requires("alter_configs")
def test_librdkafka_admin_alter_configs(router: Router, caps: Capabilities, topic: str, unique: Any) -> None:
    """librdkafka's admin test (tests/0081-admin.c, do_test_AlterConfigs): one AlterConfigs request,
    sent to a broker, sets topic configs (NONE), sasl.kerberos.min.time.before.relogin=58000 on that
    broker (NONE) and topic configs of a topic that does not exist (UNKNOWN_TOPIC_OR_PARTITION)."""
    node = a_broker(router, caps)
    resources = [
        (TOPIC, topic, {"compression.type": "gzip", "flush.ms": "12345678"}),
        (BROKER, str(node), {RELOGIN: "58000"}),
        (TOPIC, unique("absent"), {"compression.type": "lz4", "max.compaction.lag.ms": "3600000"}),
    ]
    answer = router.node(node).request(
        "alter_configs",
        caps.best("alter_configs"),
        validate_only=False,
        resources=[
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
            for kind, name, configs in resources
        ],
    )
    try:
        wanted = ("NONE", "NONE", "UNKNOWN_TOPIC_OR_PARTITION")
        for response, (kind, name, _), code in zip(answer.responses, resources, wanted, strict=True):
            expect_code(
                response.error_code, code, rule="librdkafka 0081-admin", where=f"resource {kind}:{name}"
            )
    finally:
        alter_broker(router, caps, str(node), [(RELOGIN, DELETE, None)])


@pytest.mark.requires("incremental_alter_configs")
def test_a_topic_config_set_to_null_is_invalid_request(
    router: Router, caps: Capabilities, topic: str
) -> None:
    """ConfigAdminManager.preprocess, on the broker, for every resource: a config SET to null (not
    DELETEd) is INVALID_REQUEST 'Null value not supported for : NAME'."""
    answer = ops.controller_request(
        router,
        "incremental_alter_configs",
        caps.best("incremental_alter_configs"),
        {
            "validate_only": False,
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": topic,
                    "configs": [{"name": "retention.ms", "config_operation": SET, "value": None}],
                }
            ],
        },
        lambda a: a.responses[0].error_code,
    )
    result = answer.responses[0]
    expect_code(result.error_code, "INVALID_REQUEST", rule="ConfigAdminManager.preprocess")
    expect_equal(
        result.error_message,
        "Null value not supported for : retention.ms",
        "ConfigAdminManager.preprocess",
        "error message",
    )
