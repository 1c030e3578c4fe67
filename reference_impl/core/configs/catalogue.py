"""Kafka's whole config catalogue, joined to the reference's own definitions.

The data is generated from Kafka's ``ConfigDef``s (:mod:`.kafka_broker_catalogue`,
:mod:`.kafka_topic_catalogue`; ``reference_impl/tools/kafka_configs_gen.py``). Every name there is known
to the broker: its Kafka type, its validator (checked as data, :func:`validator`) and, for a broker config,
its dynamic scope (``DynamicBrokerConfig``: read-only, per-broker or cluster-wide). A config the reference
already defines (:mod:`.tables`) keeps its own definition, default and checks; it takes Kafka's type and
scope. A config only the catalogue knows is stored and described but has no effect: :data:`NOT_ENFORCED`
says why, per defining class (the ledger).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .kafka_broker_catalogue import KAFKA_BROKER_CONFIGS
from .kafka_topic_catalogue import KAFKA_TOPIC_CONFIGS, KAFKA_TOPIC_SYNONYMS
from .model import ConfigDef, ConfigType

READ_ONLY, PER_BROKER, CLUSTER_WIDE = "read-only", "per-broker", "cluster-wide"

BROKER_SCOPES: dict[str, str] = {row[0]: row[4] for row in KAFKA_BROKER_CONFIGS}
"""Every Kafka broker config → its dynamic scope (DynamicBrokerConfig.AllDynamicConfigs/PerBrokerConfigs)."""

NOT_ENFORCED: dict[str, str] = {
    # the ledger: why a config only the catalogue knows has no effect on the reference broker, by the
    # Kafka class that defines it (a name of its own overrides its class)
    "RemoteLogManagerConfig": "tiered storage (KIP-405) is not implemented",
    "ServerConfigs": "thread pools, purgatories, controlled shutdown and request timeouts of Kafka's JVM "
    "broker have no counterpart in the single-threaded asyncio broker",
    "KRaftConfigs": "KRaft tuning the reference's Raft replica does not read (snapshot intervals, "
    "metadata log segments, ZooKeeper migration)",
    "SocketServerConfigs": "socket buffer sizes, network threads and connection-rate quotas are left to "
    "asyncio and the OS",
    "ReplicationConfigs": "replica fetcher tuning, purgatory intervals and inter-broker protocol pinning "
    "the reference's fetcher does not read",
    "GroupCoordinatorConfig": "coordinator threads, linger, offsets-topic tuning and migration policy the "
    "reference's group coordinator does not read",
    "CleanerConfig": "cleaner threads and buffers: the reference's cleaner runs in-line with its own bounds",
    "LogConfig": "log-manager tuning (checkpoint intervals, recovery threads, policies, message format) "
    "the reference's log does not read",
    "ShareGroupConfig": "share-group bounds the reference's share coordinator does not read",
    "ShareCoordinatorConfig": "share-state topic tuning the reference does not read",
    "TransactionLogConfig": "transaction-state topic tuning the reference does not read",
    "TransactionStateManagerConfig": "transactional-id expiry the reference does not run",
    "QuorumConfig": "Raft timings the reference's replica does not read",
    "MetricConfigs": "JMX and metrics reporters: the reference exports no metrics",
    "QuotaConfig": "quota sampling windows, callbacks and replication throttle rates: client quotas "
    "(byte rates, request_percentage, controller_mutation_rate) are enforced over Kafka's default windows "
    "(11 of 1 s, not configurable), replication throttles are not",
    "BrokerSecurityConfigs": "Kerberos (GSSAPI), login refresh, OAUTHBEARER JWKS and security providers: "
    "the reference serves PLAIN, SCRAM and unsecured OAUTHBEARER only",
    "DelegationTokenManagerConfigs": "delegation tokens are not implemented",
    "PasswordEncoderConfigs": "dynamic password configs are not encoded (ZooKeeper-era)",
    "topic": "a topic config the reference's log does not act on (tiered storage, compression levels, "
    "replication throttles, down-conversion, message format)",
}

_TYPES = {t.name: t for t in ConfigType}
Row = tuple[str, str, str | None, tuple[Any, ...] | None, str, str, bool]


def _bound(kind: ConfigType, text: str) -> float:
    return float(text) if kind is ConfigType.DOUBLE else int(text)


def validator(
    kind: ConfigType, rule: tuple[Any, ...] | None
) -> tuple[Callable[[str], bool] | None, tuple[str, ...]]:
    """A catalogue validator as the model's (check, choices); ``custom`` ones (Kafka's code) are not
    checked here."""
    if rule is None or rule[0] == "custom":
        return None, ()
    name = rule[0]
    if name == "at_least":
        low = rule[1]
        return (lambda v: _bound(kind, v) >= low), ()
    if name == "between":
        low, high = rule[1], rule[2]
        return (lambda v: low <= _bound(kind, v) <= high), ()
    if name in ("in", "list_in"):
        return None, tuple(str(c) for c in rule[1])
    if name == "in_ci":
        allowed = {str(c).lower() for c in rule[1]}
        return (lambda v: v.strip().lower() in allowed), ()
    if name == "non_empty_string":
        return (lambda v: v.strip() != ""), ()
    if name == "gzip_level":
        return (lambda v: int(v) == -1 or 1 <= int(v) <= 9), ()
    if name == "all":
        parts = [validator(kind, r) for r in rule[1:]]
        checks = [c for c, _ in parts if c is not None]
        return (lambda v: all(c(v) for c in checks)), tuple(x for _, ch in parts for x in ch)
    return None, ()  # non_null: a value is never null here


def _same(value: str) -> str:
    return value


def rule_text(kind: ConfigType, rule: tuple[Any, ...] | None) -> str | Callable[[str], str]:
    """Why a validator refuses a value, as Kafka's ConfigDef validators say it (``Range.ensureValid``
    names the bound crossed)."""
    if rule is None:
        return ""
    if rule[0] == "at_least":
        return f"Value must be at least {rule[1]}"
    if rule[0] == "between":
        low, high = rule[1], rule[2]
        return lambda v: (
            f"Value must be at least {low}" if _bound(kind, v) < low else f"Value must be no more than {high}"
        )
    if rule[0] == "in_ci":
        return f"String must be one of (case insensitive): {', '.join(str(c) for c in rule[1])}"
    if rule[0] == "non_empty_string":
        return "String may not be empty"
    if rule[0] == "gzip_level":
        return "Value must be -1 or between 1 and 9"
    return ""


def definition(row: Row, kind_of_resource: str) -> ConfigDef:
    """A catalogue row as a definition of a config the reference does not act on (a topic config's
    default from its broker synonym, as Kafka's)."""
    name, type_name, default, rule, scope, origin, internal = row
    kind = _TYPES[type_name]
    check, choices = validator(kind, rule)
    reason = NOT_ENFORCED.get(name) or NOT_ENFORCED.get(
        origin if kind_of_resource == "broker" else "topic", ""
    )
    return ConfigDef(
        name,
        kind,
        default,
        f"Kafka's {name} ({origin}); stored and described, without effect on the reference broker: {reason}",
        synonyms=((KAFKA_TOPIC_SYNONYMS[name], _same),)
        if kind_of_resource == "topic" and name in KAFKA_TOPIC_SYNONYMS
        else (),
        valid=check,
        choices=choices,
        read_only=scope == READ_ONLY,
        hidden=internal,
        rule=rule_text(kind, rule),
    )


def register(broker: dict[str, ConfigDef], topic: dict[str, ConfigDef]) -> None:
    """Join the catalogue to the reference's tables: known names take Kafka's type and scope, the
    others join as stored-only definitions."""
    for row in KAFKA_BROKER_CONFIGS:
        own = broker.get(row[0])
        if own is None:
            broker[row[0]] = definition(row, "broker")
        else:
            broker[row[0]] = replace(own, type=_TYPES[row[1]], read_only=row[4] == READ_ONLY)
    for row in KAFKA_TOPIC_CONFIGS:
        if row[0] not in topic:
            topic[row[0]] = definition(row, "topic")


def not_enforced(broker_own: set[str], topic_own: set[str]) -> dict[str, str]:
    """The ledger: every catalogue name the reference's own tables do not define → why it has no effect."""
    out = {
        r[0]: NOT_ENFORCED.get(r[0]) or NOT_ENFORCED[r[5]]
        for r in KAFKA_BROKER_CONFIGS
        if r[0] not in broker_own
    }
    for r in KAFKA_TOPIC_CONFIGS:
        if r[0] not in topic_own:
            out[f"topic:{r[0]}"] = NOT_ENFORCED.get(r[0]) or NOT_ENFORCED["topic"]
    return out
