"""Broker config resources through the sans-IO broker: DescribeConfigs of a broker (its id) and of the
cluster-wide defaults (""), AlterConfigs / IncrementalAlterConfigs checked as Kafka's ConfigAdminManager
and DynamicBrokerConfig check them (core/src/main/scala/kafka/server/ConfigAdminManager.scala,
DynamicBrokerConfig.scala, ConfigHelper.scala)."""

from __future__ import annotations

from typing import Any

from reference_impl.core.configs.kafka_broker_catalogue import KAFKA_BROKER_CONFIGS
from reference_impl.core.configs.kafka_topic_catalogue import KAFKA_TOPIC_CONFIGS
from reference_impl.core.controller.records import ControllerImage, decode_snapshot, encode_snapshot
from reference_impl.core.metadata.records import ConfigRecord
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request
from .test_admin import create_topics

BROKER, TOPIC = 4, 2
SET, DELETE, APPEND = 0, 1, 2
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5
UNKNOWN_TYPE, LONG_TYPE = 0, 5


def describe(h: BrokerHarness, rtype: int, name: str, keys: list[str] | None = None) -> Any:
    result = h.call(
        request(
            32,
            4,
            resources=[{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
            include_synonyms=True,
            include_documentation=True,
        )
    ).results[0]
    assert result.error_code == ErrorCode.none, result.error_message
    return {c.name: c for c in result.configs}


def incremental(h: BrokerHarness, name: str, *ops: tuple[str, int, str | None]) -> Any:
    resource = {
        "resource_type": BROKER,
        "resource_name": name,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
    }
    return h.call(request(44, 1, resources=[resource], validate_only=False)).responses[0]


def legacy(h: BrokerHarness, name: str, **configs: str) -> Any:
    resource = {
        "resource_type": BROKER,
        "resource_name": name,
        "configs": [{"name": n.replace("_", "."), "value": v} for n, v in configs.items()],
    }
    return h.call(request(33, 2, resources=[resource], validate_only=False)).responses[0]


def test_a_broker_describes_every_kafka_config_and_a_topic_every_topic_config() -> None:
    h = BrokerHarness("log.retention.hours=1")
    entries = describe(h, BROKER, "1")
    visible = {r[0] for r in KAFKA_BROKER_CONFIGS if not r[6]}  # defineInternal ones are not listed
    assert visible <= set(entries)
    assert not {r[0] for r in KAFKA_BROKER_CONFIGS if r[6]} & set(entries)
    print(f"broker 1 described {len(entries)} configs ({len(visible)} of Kafka's, not internal)")
    relogin = entries["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.value, relogin.config_source, relogin.config_type, relogin.read_only) == (
        "60000",
        DEFAULT,
        LONG_TYPE,
        False,
    )
    assert relogin.documentation  # asked for (v3+): the reference's own words, never Kafka's
    assert entries["broker.id"].read_only and not entries["log.retention.ms"].read_only
    hours = entries["log.retention.hours"]
    assert (hours.value, hours.config_source) == ("1", STATIC)
    # log.retention.ms's synonyms are its group's values (DynamicBrokerConfig.brokerConfigSynonyms)
    assert [s.name for s in entries["log.retention.ms"].synonyms] == [
        "log.retention.ms",
        "log.retention.hours",
    ]
    create_topics(h, {"name": "t"})
    assert {r[0] for r in KAFKA_TOPIC_CONFIGS} <= set(describe(h, TOPIC, "t"))


def test_kerberos_relogin_is_set_per_broker_and_refused_at_the_cluster_default() -> None:
    """librdkafka's admin test sets sasl.kerberos.min.time.before.relogin on a broker: per-broker in
    Kafka (DynamicListenerConfig.ReconfigurableConfigs), so stored and described with its source; at the
    cluster-wide default it is INVALID_REQUEST."""
    h = BrokerHarness()
    name = "sasl.kerberos.min.time.before.relogin"
    assert incremental(h, "1", (name, SET, "58000")).error_code == ErrorCode.none
    entry = describe(h, BROKER, "1", [name])[name]
    assert (entry.value, entry.config_source) == ("58000", DYNAMIC_BROKER)
    assert [(s.value, s.source) for s in entry.synonyms] == [("58000", DYNAMIC_BROKER), ("60000", DEFAULT)]
    at_default = incremental(h, "", (name, SET, "58000"))
    assert at_default.error_code == ErrorCode.invalid_request
    assert at_default.error_message == (
        f"Cannot update these configs at default cluster level, broker id must be specified: Set({name})"
    )


def test_cluster_defaults_are_their_own_resource() -> None:
    h = BrokerHarness("log.retention.hours=2")
    assert describe(h, BROKER, "") == {}
    assert legacy(h, "", log_retention_ms="5000").error_code == ErrorCode.none
    defaults = describe(h, BROKER, "")
    assert list(defaults) == ["log.retention.ms"]
    assert (defaults["log.retention.ms"].value, defaults["log.retention.ms"].config_source) == (
        "5000",
        DYNAMIC_DEFAULT,
    )
    own = describe(h, BROKER, "1", ["log.retention.ms", "log.retention.hours"])
    assert own["log.retention.ms"].config_source == DYNAMIC_DEFAULT
    assert h.broker.config.get("log.retention.ms") == "5000"
    assert incremental(h, "1", ("log.retention.ms", SET, "7000")).error_code == ErrorCode.none
    chain = describe(h, BROKER, "1", ["log.retention.ms"])["log.retention.ms"].synonyms
    assert [s.source for s in chain][:3] == [DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC]
    assert h.broker.config.get("log.retention.ms") == "7000"


def test_read_only_bad_values_and_listener_rules_are_invalid_request() -> None:
    h = BrokerHarness()
    refused = incremental(h, "1", ("broker.id", SET, "5"))
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.invalid_request,
        "Cannot update these configs dynamically: Set(broker.id)",
    )
    assert legacy(h, "1", num_partitions="3").error_message == (
        "Cannot update these configs dynamically: Set(num.partitions)"
    )
    bad = incremental(h, "1", ("log.cleaner.threads", SET, "many"))
    assert bad.error_code == ErrorCode.invalid_request and "log.cleaner.threads" in bad.error_message
    store = incremental(h, "1", ("ssl.keystore.location", SET, "/x.pem"))
    assert store.error_message == (
        "These security configs can be dynamically updated only per-listener using the listener prefix: "
        "Set(ssl.keystore.location)"
    )
    prefixed = "listener.name.external.ssl.keystore.location"
    assert incremental(h, "1", (prefixed, SET, "/x.pem")).error_code == ErrorCode.none
    assert incremental(h, "", (prefixed, SET, "/x.pem")).error_code == ErrorCode.invalid_request
    assert incremental(h, "1", ("log.retention.ms", SET, None)).error_message == (
        "Null value not supported for : log.retention.ms"
    )
    assert incremental(h, "1", ("log.retention.ms", APPEND, "1")).error_message == (
        "Config value append is not allowed for config key: log.retention.ms"
    )
    assert incremental(h, "x", ("log.retention.ms", SET, "1")).error_message == (
        "Node id must be an integer, but it is: x"
    )
    assert incremental(h, "2", ("log.retention.ms", SET, "1")).error_message == (
        "Unexpected broker id, expected 1, but received 2"
    )


def test_a_config_kafka_does_not_define_is_stored_and_described_as_sensitive() -> None:
    """DynamicConfig.Broker.validate allows custom configs; ConfigHelper describes them with no type,
    and KafkaConfig.maybeSensitive hides a value of unknown type."""
    h = BrokerHarness()
    assert incremental(h, "1", ("custom.plugin.setting", SET, "on")).error_code == ErrorCode.none
    entry = describe(h, BROKER, "1", ["custom.plugin.setting"])["custom.plugin.setting"]
    assert (entry.value, entry.is_sensitive, entry.config_type, entry.config_source) == (
        None,
        True,
        UNKNOWN_TYPE,
        DYNAMIC_BROKER,
    )
    assert entry.documentation is None
    assert incremental(h, "1", ("custom.plugin.setting", DELETE, None)).error_code == ErrorCode.none
    assert describe(h, BROKER, "1", ["custom.plugin.setting"]) == {}


def test_a_brokers_own_configs_and_the_defaults_replay_and_survive_a_snapshot() -> None:
    image = ControllerImage(cluster_id="c", controller_id=1)
    image.apply(ConfigRecord(resource_type=BROKER, resource_name="1", name="a.b", value="x"), 0)
    image.apply(ConfigRecord(resource_type=BROKER, resource_name="", name="log.retention.ms", value="5"), 1)
    image.apply(ConfigRecord(resource_type=BROKER, resource_name="2", name="a.b", value="y"), 2)
    image.apply(ConfigRecord(resource_type=BROKER, resource_name="2", name="a.b", value=None), 3)
    again = decode_snapshot(encode_snapshot(image), "c", 4)
    assert (again.node_configs, again.broker_configs) == ({"1": {"a.b": "x"}}, {"log.retention.ms": "5"})


def test_replication_throttle_rates_are_dynamic_only() -> None:
    """QuotaConfig.brokerQuotaConfigs (DynamicConfig.Broker): settable at the cluster default and per
    broker, a LONG of at least 0, described only once set."""
    h = BrokerHarness()
    rate = "leader.replication.throttled.rate"
    assert rate not in describe(h, BROKER, "1")
    assert incremental(h, "", (rate, SET, "1048576")).error_code == ErrorCode.none
    assert describe(h, BROKER, "1", [rate])[rate].config_source == DYNAMIC_DEFAULT
    refused = incremental(h, "1", (rate, SET, "-1"))
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.invalid_request,
        f"Invalid value -1 for configuration {rate}: Value must be at least 0",
    )


def test_a_resource_named_twice_is_invalid_request_for_both() -> None:
    """ConfigAdminManager.preprocess: each resource must appear at most once in a request."""
    h = BrokerHarness()
    resource = {
        "resource_type": BROKER,
        "resource_name": "1",
        "configs": [{"name": "log.retention.ms", "value": "9"}],
    }
    answers = h.call(request(33, 2, resources=[resource, resource], validate_only=False)).responses
    assert [(r.error_code, r.error_message) for r in answers] == [
        (ErrorCode.invalid_request, "Each resource must appear at most once.")
    ] * 2
    assert h.broker.image.node_configs == {}


def test_legacy_alter_configs_has_no_broker_loggers() -> None:
    """ConfigAdminManager.preprocess(AlterConfigsRequestData): BROKER_LOGGER (8) is an unknown type there."""
    h = BrokerHarness()
    resource = {"resource_type": 8, "resource_name": "1", "configs": [{"name": "kafka", "value": "DEBUG"}]}
    answer = h.call(request(33, 2, resources=[resource], validate_only=False)).responses[0]
    assert (answer.error_code, answer.error_message) == (ErrorCode.invalid_request, "Unknown resource type 8")
