"""The catalogue of Kafka's configs (reference_impl/core/configs/catalogue.py and its generated data).

Its rows come from Kafka's ConfigDefs (reference_impl/tools/kafka_configs_gen.py); when the Apache Kafka
mirror is on this machine, the generator runs again and must reproduce the checked-in data exactly.
"""

from __future__ import annotations

import collections
import subprocess
from pathlib import Path

import pytest

from reference_impl.core.configs.catalogue import BROKER_SCOPES, NOT_ENFORCED, not_enforced
from reference_impl.core.configs.kafka_broker_catalogue import (
    CLUSTER_LEVEL_LISTENER_CONFIGS,
    KAFKA_BROKER_CONFIGS,
    KAFKA_COMMIT,
    PER_LISTENER_ONLY,
)
from reference_impl.core.configs.kafka_topic_catalogue import KAFKA_TOPIC_CONFIGS, KAFKA_TOPIC_SYNONYMS
from reference_impl.core.configs.model import ConfigDef, ConfigError, ConfigSource, ConfigType
from reference_impl.core.configs.resolution import BrokerConfig, describe_topic_configs
from reference_impl.core.configs.tables import (
    BROKER_CONFIGS,
    OWN_BROKER_CONFIGS,
    OWN_TOPIC_CONFIGS,
    TOPIC_CONFIGS,
)
from reference_impl.tools import config_ledger, kafka_configs_gen

MIRROR = kafka_configs_gen.MIRROR


def _mirror_at_commit() -> bool:
    if not (MIRROR / "HEAD").exists() and not (MIRROR / ".git").exists():
        return False
    head = subprocess.run(["git", "-C", str(MIRROR), "rev-parse", "HEAD"], capture_output=True, text=True)
    return head.returncode == 0 and head.stdout.strip() == KAFKA_COMMIT


def refusal(definition: ConfigDef, value: str) -> str:
    """The message of the ConfigError ``definition`` raises for ``value``."""
    with pytest.raises(ConfigError) as refused:
        definition.validate(value)
    return str(refused.value)


def _kinds(rows: tuple[tuple[object, ...], ...]) -> dict[str, int]:
    return dict(collections.Counter(str(r[1]) for r in rows))


@pytest.mark.skipif(not _mirror_at_commit(), reason=f"no Apache Kafka mirror at {KAFKA_COMMIT} in {MIRROR}")
def test_generator_reproduces_the_checked_in_data() -> None:
    """Kafka's ConfigDefs at the mirror's commit, read again, give exactly the checked-in modules; the
    counts per type are printed for the record."""
    outputs = kafka_configs_gen.generate(MIRROR)
    assert not kafka_configs_gen.FAILURES
    for path, text in outputs.items():
        assert Path(path).read_text() == text, f"{path.name} differs from the mirror: regenerate it"
    namespace: dict[str, object] = {}
    exec(outputs[kafka_configs_gen.OUT_DIR / "kafka_broker_catalogue.py"], namespace)
    broker = namespace["KAFKA_BROKER_CONFIGS"]
    assert isinstance(broker, tuple)
    print(f"broker configs at {KAFKA_COMMIT[:12]}: {len(broker)} {_kinds(broker)}")
    print(f"topic configs: {len(KAFKA_TOPIC_CONFIGS)} {_kinds(KAFKA_TOPIC_CONFIGS)}")
    assert _kinds(broker) == _kinds(KAFKA_BROKER_CONFIGS)


def test_every_kafka_config_is_known_with_kafkas_type_and_scope() -> None:
    for name, kind, _default, _rule, scope, _origin, _internal in KAFKA_BROKER_CONFIGS:
        definition = BROKER_CONFIGS[name]
        assert definition.type is ConfigType[kind], name
        assert definition.read_only == (scope == "read-only"), name
    for row in KAFKA_TOPIC_CONFIGS:
        assert TOPIC_CONFIGS[row[0]].type is ConfigType[row[1]], row[0]
    scopes = collections.Counter(BROKER_SCOPES.values())
    print(f"broker scopes: {dict(scopes)}")
    assert set(scopes) == {"read-only", "per-broker", "cluster-wide"}


def test_kerberos_relogin_is_a_per_broker_long() -> None:
    """librdkafka's admin test sets it on a broker (BrokerSecurityConfigs, DynamicListenerConfig)."""
    definition = BROKER_CONFIGS["sasl.kerberos.min.time.before.relogin"]
    assert (definition.type, definition.default, definition.read_only) == (ConfigType.LONG, "60000", False)
    assert BROKER_SCOPES[definition.name] == "per-broker"
    assert definition.validate("120000") == "120000"
    assert refusal(definition, "soon") == (
        "Invalid value soon for configuration sasl.kerberos.min.time.before.relogin: "
        "Not a number of type LONG"
    )


def test_catalogue_validators_are_checked() -> None:
    lz4 = TOPIC_CONFIGS["compression.lz4.level"]
    assert lz4.validate("17") == "17"
    assert refusal(lz4, "18") == (
        "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"
    )
    assert refusal(lz4, "0").endswith(": Value must be at least 1")
    gzip = TOPIC_CONFIGS["compression.gzip.level"]
    assert [gzip.validate(v) for v in ("-1", "9")] == ["-1", "9"]
    with pytest.raises(ConfigError):
        gzip.validate("0")
    with pytest.raises(ConfigError):
        BROKER_CONFIGS["group.share.max.groups"].validate("101")


def test_the_ledger_gives_a_reason_for_every_config_without_effect() -> None:
    ledger = not_enforced(set(OWN_BROKER_CONFIGS), set(OWN_TOPIC_CONFIGS))
    broker_only = {r[0] for r in KAFKA_BROKER_CONFIGS} - OWN_BROKER_CONFIGS
    topic_only = {r[0] for r in KAFKA_TOPIC_CONFIGS} - OWN_TOPIC_CONFIGS
    assert len(ledger) == len(broker_only) + len(topic_only)
    assert all(reason for reason in ledger.values())
    assert set(NOT_ENFORCED) >= {r[5] for r in KAFKA_BROKER_CONFIGS}
    print(
        f"known before: broker {len(OWN_BROKER_CONFIGS)}, topic {len(OWN_TOPIC_CONFIGS)}; "
        f"after: broker {len(BROKER_CONFIGS)}, topic {len(TOPIC_CONFIGS)}; "
        f"stored without effect: broker {len(broker_only)}, topic {len(topic_only)}"
    )


def test_the_ledger_document_is_up_to_date() -> None:
    assert config_ledger.DOC.read_text() == config_ledger.render(), (
        "docs/CONFIGS.md is stale: run python -m reference_impl.tools.config_ledger --write docs/CONFIGS.md"
    )


def test_topic_configs_default_from_kafkas_broker_synonym() -> None:
    """ServerTopicConfigSynonyms: each topic config's first broker synonym is the reference's too, and a
    catalogue-only topic config takes its default from it."""
    for topic, broker in KAFKA_TOPIC_SYNONYMS.items():
        assert TOPIC_CONFIGS[topic].synonyms[0][0] == broker, topic
    config = BrokerConfig.parse(1, ["compression.gzip.level=5"])
    (entry,) = describe_topic_configs({}, config, ["compression.gzip.level"])
    assert (entry.value, entry.source) == ("5", ConfigSource.STATIC_BROKER_CONFIG)


def test_listener_rules_agree_with_the_scopes() -> None:
    """The SSL store configs set only with a listener prefix are per-broker configs; the listener configs
    a cluster-wide default may set are cluster-wide ones (DynamicBrokerConfig)."""
    assert PER_LISTENER_ONLY and {BROKER_SCOPES[n] for n in PER_LISTENER_ONLY} == {"per-broker"}
    assert {BROKER_SCOPES.get(n, "cluster-wide") for n in CLUSTER_LEVEL_LISTENER_CONFIGS} <= {
        "cluster-wide",
        "read-only",
    }
