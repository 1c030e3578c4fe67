"""A broker's config values and a topic's effective ones, as DescribeConfigs reports them.

A topic's effective value of ``retention.ms`` is its own override if it has
one, else the broker's ``log.retention.ms`` (or ``log.retention.minutes`` /
``log.retention.hours``) if set, else Kafka's default: DescribeConfigs reports
that chain as *synonyms* with their *sources*, and clients (the admin tools,
kcat -X dump) depend on the shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reference_impl.log.config import LogConfig, LogConfigError

from ..security.settings import listener_prefixed
from .group_configs import GROUP_CONFIGS
from .model import ConfigDef, ConfigError, ConfigSource, ConfigType
from .tables import BROKER_CONFIGS, TOPIC_CONFIGS


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One row of a DescribeConfigs answer."""

    name: str
    value: str | None
    source: ConfigSource
    type: ConfigType
    read_only: bool
    doc: str
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


_SYNONYM_GROUPS = (
    # DynamicBrokerConfig.brokerConfigSynonyms: the broker configs that set the same thing, most specific
    # first (core/src/main/scala/kafka/server/DynamicBrokerConfig.scala)
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_synonyms(name: str) -> tuple[str, ...]:
    """Kafka's ``brokerConfigSynonyms(name, matchListenerOverride = true)``: the names whose values
    DescribeConfigs lists as ``name``'s synonyms (a listener-prefixed name's base config among them)."""
    if name == "log.flush.interval.ms":
        return (name, "log.flush.scheduler.interval.ms")
    for group in _SYNONYM_GROUPS:
        if name in group:
            return group
    if name.startswith("listener.name.") and (base := listener_prefixed(name)) is not None:
        return (name, base.name)
    return (name,)


@dataclass
class BrokerConfig:
    """Static broker settings (``--config k=v``) plus dynamic ones (AlterConfigs): this broker's own
    (resource name = its id) over the cluster-wide defaults (resource name "")."""

    node_id: int
    static: dict[str, str] = field(default_factory=dict)
    dynamic: dict[str, str] = field(default_factory=dict)
    dynamic_default: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, node_id: int, pairs: Iterable[str]) -> BrokerConfig:
        """From ``k=v`` strings; raises :class:`ConfigError` naming a bad key or value."""
        static: dict[str, str] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            key = key.strip()
            if not sep or not key:
                raise ConfigError(f"config {pair!r} is not key=value")
            definition = BROKER_CONFIGS.get(key) or TOPIC_CONFIGS.get(key) or listener_prefixed(key)
            if definition is None:
                raise ConfigError(f"unknown config {key!r}")
            normalised = definition.validate(value.strip())
            static[key] = "" if normalised is None else normalised
        return cls(node_id, static)

    def get(self, name: str) -> str | None:
        for store in (self.dynamic, self.dynamic_default, self.static):
            if name in store:
                return store[name]
        definition = BROKER_CONFIGS.get(name)
        return definition.default if definition else None

    def get_int(self, name: str) -> int:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return int(value)

    def get_bool(self, name: str) -> bool:
        return self.get(name) == "true"

    def describe(self, names: Iterable[str] | None = None, *, per_broker: bool = True) -> list[ConfigEntry]:
        """DescribeConfigs of this broker (``per_broker``: resource name = its id) or of the cluster-wide
        defaults (resource name ""), as Kafka's ``ConfigHelper.createBrokerConfigEntry``: this broker's
        every config, or only the dynamic defaults set; each with the synonyms from its own and its
        :func:`broker_synonyms` values, per source (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
        STATIC_BROKER_CONFIG, DEFAULT_CONFIG), dropping those listed before the name itself. A name Kafka
        does not define (a listener-prefixed config, a custom one) has type UNKNOWN."""
        if per_broker:
            listed = {n for n, d in BROKER_CONFIGS.items() if not d.hidden}
            listed |= {n for store in (self.dynamic, self.dynamic_default, self.static) for n in store}
        else:
            listed = set(self.dynamic_default)
        wanted = sorted(listed) if names is None else [n for n in names if n in listed]
        entries = []
        for name in wanted:
            definition = BROKER_CONFIGS.get(name)
            if definition is not None and definition.hidden and not self._is_set(name):
                continue  # defineInternal, dynamic-only and seeded-bug configs: listed once set
            chain = self._synonyms(name)
            if not per_broker:
                chain = [link for link in chain if link[2] is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
            value, source = (chain[0][1], chain[0][2]) if chain else (None, ConfigSource.DEFAULT_CONFIG)
            if definition is None:
                base = listener_prefixed(name)
                kind = base.type if base is not None else ConfigType.UNKNOWN
                entries.append(ConfigEntry(name, value, source, kind, True, "", tuple(chain)))
                continue
            entries.append(
                ConfigEntry(
                    name, value, source, definition.type, definition.read_only, definition.doc, tuple(chain)
                )
            )
        return entries

    def _is_set(self, name: str) -> bool:
        return any(name in store for store in (self.dynamic, self.dynamic_default, self.static))

    def _synonyms(self, name: str) -> list[tuple[str, str | None, ConfigSource]]:
        chain: list[tuple[str, str | None, ConfigSource]] = []
        names = broker_synonyms(name)
        for store, source in (
            (self.dynamic, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self.static, ConfigSource.STATIC_BROKER_CONFIG),
        ):
            chain.extend((n, store[n], source) for n in names if n in store)
        for n in names:
            definition = BROKER_CONFIGS.get(n)
            if definition is not None and definition.default is not None:
                chain.append((n, definition.default, ConfigSource.DEFAULT_CONFIG))
        while chain and chain[0][0] != name:
            chain.pop(0)  # e.g. a listener override when describing the base config
        return chain


def topic_default_chain(name: str, broker: BrokerConfig) -> list[tuple[str, str | None, ConfigSource]]:
    """Where a topic config's value comes from when the topic does not override it."""
    definition = TOPIC_CONFIGS[name]
    chain: list[tuple[str, str | None, ConfigSource]] = []
    for synonym, convert in definition.synonyms:
        for store, source in (
            (broker.dynamic, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (broker.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (broker.static, ConfigSource.STATIC_BROKER_CONFIG),
        ):
            if synonym in store:
                chain.append((synonym, convert(store[synonym]), source))
    chain.append((name, definition.default, ConfigSource.DEFAULT_CONFIG))
    return chain


def effective_topic_configs(overrides: Mapping[str, str], broker: BrokerConfig) -> dict[str, str]:
    """Every topic config's effective value: override, else broker synonym, else default."""
    out: dict[str, str] = {}
    for name in TOPIC_CONFIGS:
        if name in overrides:
            out[name] = overrides[name]
            continue
        value = topic_default_chain(name, broker)[0][1]
        if value is not None:
            out[name] = value
    return out


def describe_topic_configs(
    overrides: Mapping[str, str], broker: BrokerConfig, names: Iterable[str] | None = None
) -> list[ConfigEntry]:
    entries = []
    for definition in _wanted(TOPIC_CONFIGS, names):
        name = definition.name
        chain = topic_default_chain(name, broker)
        if definition.hidden and chain[0][1] is None and name not in overrides:
            continue
        if name in overrides:
            chain.insert(0, (name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        entries.append(_entry(definition, chain))
    return entries


def _wanted(table: Mapping[str, ConfigDef], names: Iterable[str] | None) -> list[ConfigDef]:
    """The definitions DescribeConfigs asked for: all (sorted) when ``names`` is None, else those
    named that ``table`` knows, in the order asked."""
    wanted = sorted(table) if names is None else names
    return [d for name in wanted if (d := table.get(name)) is not None]


def _entry(definition: ConfigDef, chain: list[tuple[str, str | None, ConfigSource]]) -> ConfigEntry:
    """A described config: its value and source those of the chain's first (most specific) link."""
    value, source = (chain[0][1], chain[0][2]) if chain else (None, ConfigSource.DEFAULT_CONFIG)
    return ConfigEntry(
        definition.name, value, source, definition.type, definition.read_only, definition.doc, tuple(chain)
    )


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Normalised topic overrides; :class:`ConfigError` for an unknown key or a bad value."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        normalised = definition.validate(value)
        if normalised is not None:
            out[name] = normalised
    try:
        LogConfig().with_changes(out)  # the log's own checks (relations between keys, Kafka 4 bounds)
    except LogConfigError as exc:
        raise ConfigError(str(exc)) from None
    return out


def describe_group_configs(
    overrides: Mapping[str, str], broker: BrokerConfig, names: Iterable[str] | None = None
) -> list[ConfigEntry]:
    """A group resource's configs as Kafka's ``ConfigHelper.createGroupConfigEntry`` lists them
    (core/src/main/scala/kafka/server/ConfigHelper.scala): every ``GroupConfig`` key with the value
    the group runs with, its override (source DYNAMIC_GROUP_CONFIG) or else the broker's ``group.*``
    value (``GroupConfig.fromProps`` over ``extractGroupConfigMap``), then reported as DEFAULT_CONFIG
    whatever set it; the one synonym is the entry itself (no broker config has a group key's name)."""
    entries = []
    for definition in _wanted(GROUP_CONFIGS, names):
        name = definition.name
        link: tuple[str, str | None, ConfigSource]
        if name in overrides:
            link = (name, overrides[name], ConfigSource.DYNAMIC_GROUP_CONFIG)
        else:
            value = next((broker.get(synonym) for synonym, _ in definition.synonyms), definition.default)
            link = (name, value, ConfigSource.DEFAULT_CONFIG)
        entries.append(_entry(definition, [link]))
    return entries


def effective_group_configs(overrides: Mapping[str, str], broker: BrokerConfig) -> dict[str, str]:
    """Every group config's value for a group: its override, else what the broker runs groups with."""
    return {e.name: e.value for e in describe_group_configs(overrides, broker) if e.value is not None}


_GROUP_BOUNDS = (
    # (group key, lower-bound broker config, upper-bound broker config): GroupConfig.validateValues
    (
        "consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    (
        "consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
    ),
    (
        "share.heartbeat.interval.ms",
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
    ),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    (
        "share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
)


def validate_group_configs(overrides: Mapping[str, str | None], broker: BrokerConfig) -> dict[str, str]:
    """A group's overrides after a change (None deletes one), normalised; :class:`ConfigError` as
    Kafka's ``GroupConfig.validate``: an unknown name, a value of the wrong type or outside its
    range, outside the broker's ``group.*.min/max.*`` bounds, or a session timeout not above the
    heartbeat interval. Keys the group does not set take the broker's value."""
    out: dict[str, str] = {}
    for name, value in overrides.items():
        definition = GROUP_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"Unknown group config name: {name}")
        normalised = definition.validate(value) if value is not None else None
        if normalised is not None:
            out[name] = normalised
    effective = effective_group_configs(out, broker)
    for name, low, high in _GROUP_BOUNDS:
        number = int(effective[name])
        if number < broker.get_int(low):
            raise ConfigError(f"{name} must be greater than or equal to {low}")
        if number > broker.get_int(high):
            raise ConfigError(f"{name} must be less than or equal to {high}")
    for kind in ("consumer", "share"):
        if int(effective[f"{kind}.session.timeout.ms"]) <= int(effective[f"{kind}.heartbeat.interval.ms"]):
            raise ConfigError(f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms")
    return out
