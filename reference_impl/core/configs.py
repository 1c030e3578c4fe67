"""Broker and topic configuration: Kafka's names, types, defaults, synonyms and sources.

A topic's effective value of ``retention.ms`` is its own override if it has
one, else the broker's ``log.retention.ms`` (or ``log.retention.minutes`` /
``log.retention.hours``) if set, else Kafka's default: DescribeConfigs reports
that chain as *synonyms* with their *sources*, and clients (the admin tools,
kcat -X dump) depend on the shape. Definitions below carry Kafka 4's defaults.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from reference_impl.defects import ALL as DEFECTS
from reference_impl.defects import DEFECTS_CONFIG
from reference_impl.log.config import LogConfig, LogConfigError

from .mutants import ALL as MUTANTS
from .mutants import MUTANT_CONFIG

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigType(enum.IntEnum):
    """DescribeConfigs v3+ ``config_type``."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigs ``config_source`` (v1+)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigError(ValueError):
    """A config name or value Kafka would reject (INVALID_CONFIG)."""


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str | None
    doc: str
    synonyms: tuple[tuple[str, Callable[[str], str]], ...] = ()
    """Broker configs that set this topic config, most specific first, with a converter."""
    valid: Callable[[str], bool] | None = None
    choices: tuple[str, ...] = ()
    read_only: bool = False
    hidden: bool = False
    """Not listed by DescribeConfigs unless set (the seeded bug modes' switch)."""

    def validate(self, value: str | None) -> str | None:
        """The value normalised, or :class:`ConfigError` naming the key."""
        if value is None:
            if self.type in (ConfigType.STRING, ConfigType.LIST, ConfigType.PASSWORD):
                return None
            raise ConfigError(f"Invalid value null for configuration {self.name}")
        try:
            if self.type in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
                number = int(value.strip())
                bound = {ConfigType.INT: INT_MAX, ConfigType.SHORT: 2**15 - 1}.get(self.type, LONG_MAX)
                if not -bound - 1 <= number <= bound:
                    raise ValueError("out of range")
                value = str(number)
            elif self.type is ConfigType.DOUBLE:
                value = repr(float(value))
            elif self.type is ConfigType.BOOLEAN:
                lowered = value.strip().lower()
                if lowered not in ("true", "false"):
                    raise ValueError("not a boolean")
                value = lowered
        except ValueError:
            raise ConfigError(
                f"Invalid value {value} for configuration {self.name}: not a valid {self.type.name}"
            ) from None
        if self.choices:
            items = [v.strip() for v in value.split(",")] if self.type is ConfigType.LIST else [value]
            for item in items:
                if item not in self.choices:
                    raise ConfigError(
                        f"Invalid value {value} for configuration {self.name}: "
                        f"String must be one of: {', '.join(self.choices)}"
                    )
        if self.valid is not None and not self.valid(value):
            raise ConfigError(f"Invalid value {value} for configuration {self.name}")
        return value


def _same(v: str) -> str:
    return v


def _times(factor: int) -> Callable[[str], str]:
    return lambda v: str(int(v) * factor)


def _at_least(low: int) -> Callable[[str], bool]:
    return lambda v: int(v) >= low


def _ratio(v: str) -> bool:
    return 0.0 <= float(v) <= 1.0


def parse_peer_addresses(value: str) -> dict[int, tuple[str, int]]:
    """``inter.broker.addresses``: ``2=host:port,3=host:port`` → {2: (host, port), 3: ...}."""
    out: dict[int, tuple[str, int]] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        node, sep, address = item.partition("=")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not node.strip().isdigit() or not port.isdigit():
            raise ConfigError(f"inter.broker.addresses entry {item!r} is not NODE=HOST:PORT")
        out[int(node)] = (host, int(port))
    return out


def _peer_addresses(value: str) -> bool:
    parse_peer_addresses(value)
    return True


def parse_quorum_voters(value: str) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters``: ``1@host:port,2@host:port`` → {1: (host, port), 2: ...}."""
    out: dict[int, tuple[str, int]] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        node, sep, address = item.partition("@")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not host or not node.strip().isdigit() or not port.isdigit():
            raise ConfigError(f"controller.quorum.voters entry {item!r} is not ID@HOST:PORT")
        out[int(node)] = (host, int(port))
    return out


def _process_roles(value: str) -> bool:
    from .cluster.roles import parse_roles  # the cluster package imports this module

    parse_roles(value)
    return True


def _quorum_voters(value: str) -> bool:
    parse_quorum_voters(value)
    return True


_T = ConfigType
TOPIC_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef(
            "cleanup.policy",
            _T.LIST,
            "delete",
            "Retention policy: delete and/or compact.",
            (("log.cleanup.policy", _same),),
            choices=("delete", "compact"),
        ),
        ConfigDef(
            "compression.type",
            _T.STRING,
            "producer",
            "Final compression of the topic's data.",
            (("compression.type", _same),),
            choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        ),
        ConfigDef(
            "delete.retention.ms",
            _T.LONG,
            "86400000",
            "How long tombstones are kept on compacted topics.",
            (("log.cleaner.delete.retention.ms", _same),),
            _at_least(0),
        ),
        ConfigDef(
            "file.delete.delay.ms",
            _T.LONG,
            "60000",
            "Delay before deleting a file from disk.",
            (("log.segment.delete.delay.ms", _same),),
            _at_least(0),
        ),
        ConfigDef(
            "flush.messages",
            _T.LONG,
            str(LONG_MAX),
            "Messages accumulated before a forced fsync.",
            (("log.flush.interval.messages", _same),),
            _at_least(1),
        ),
        ConfigDef(
            "flush.ms",
            _T.LONG,
            str(LONG_MAX),
            "Time before a forced fsync.",
            (("log.flush.interval.ms", _same),),
            _at_least(0),
        ),
        ConfigDef(
            "index.interval.bytes",
            _T.INT,
            "4096",
            "Bytes between offset index entries.",
            (("log.index.interval.bytes", _same),),
            _at_least(0),
        ),
        ConfigDef(
            "max.compaction.lag.ms",
            _T.LONG,
            str(LONG_MAX),
            "Longest a record stays uncompacted.",
            (("log.cleaner.max.compaction.lag.ms", _same),),
            _at_least(1),
        ),
        ConfigDef(
            "max.message.bytes",
            _T.INT,
            "1048588",
            "Largest record batch allowed.",
            (("message.max.bytes", _same),),
            _at_least(0),
        ),
        ConfigDef(
            "message.timestamp.after.max.ms",
            _T.LONG,
            "3600000",
            "How far in the future a CreateTime timestamp may be.",
            (("log.message.timestamp.after.max.ms", _same),),
            _at_least(0),
        ),
        ConfigDef(
            "message.timestamp.before.max.ms",
            _T.LONG,
            str(LONG_MAX),
            "How far in the past a CreateTime timestamp may be.",
            (("log.message.timestamp.before.max.ms", _same),),
            _at_least(0),
        ),
        ConfigDef(
            "message.timestamp.type",
            _T.STRING,
            "CreateTime",
            "CreateTime or LogAppendTime.",
            (("log.message.timestamp.type", _same),),
            choices=("CreateTime", "LogAppendTime"),
        ),
        ConfigDef(
            "min.cleanable.dirty.ratio",
            _T.DOUBLE,
            "0.5",
            "Dirty ratio above which the cleaner runs.",
            (("log.cleaner.min.cleanable.ratio", _same),),
            _ratio,
        ),
        ConfigDef(
            "min.compaction.lag.ms",
            _T.LONG,
            "0",
            "Shortest time a record stays uncompacted.",
            (("log.cleaner.min.compaction.lag.ms", _same),),
            _at_least(0),
        ),
        ConfigDef(
            "min.insync.replicas",
            _T.INT,
            "1",
            "Replicas that must acknowledge an acks=all write.",
            (("min.insync.replicas", _same),),
            _at_least(1),
        ),
        ConfigDef(
            "preallocate", _T.BOOLEAN, "false", "Preallocate segment files.", (("log.preallocate", _same),)
        ),
        ConfigDef(
            "retention.bytes",
            _T.LONG,
            "-1",
            "Largest size of a partition before old segments go.",
            (("log.retention.bytes", _same),),
        ),
        ConfigDef(
            "retention.ms",
            _T.LONG,
            "604800000",
            "Longest a segment is kept (-1: forever).",
            (
                ("log.retention.ms", _same),
                ("log.retention.minutes", _times(60_000)),
                ("log.retention.hours", _times(3_600_000)),
            ),
            _at_least(-1),
        ),
        ConfigDef(
            "segment.bytes",
            _T.INT,
            "1073741824",
            "Size of a segment file (at least 1 MiB since Kafka 4, KIP-1030).",
            (("log.segment.bytes", _same),),
            _at_least(1_048_576),
        ),
        ConfigDef(
            "internal.segment.bytes",
            _T.INT,
            None,
            "Kafka's test-only segment size with no lower bound (small segments in tests).",
            (("internal.segment.bytes", _same),),
            _at_least(14),
            hidden=True,
        ),
        ConfigDef(
            "segment.index.bytes",
            _T.INT,
            "10485760",
            "Size of a segment's offset index.",
            (("log.index.size.max.bytes", _same),),
            _at_least(4),
        ),
        ConfigDef(
            "segment.jitter.ms",
            _T.LONG,
            "0",
            "Random jitter subtracted from segment.ms.",
            (("log.roll.jitter.ms", _same), ("log.roll.jitter.hours", _times(3_600_000))),
            _at_least(0),
        ),
        ConfigDef(
            "segment.ms",
            _T.LONG,
            "604800000",
            "Time after which a segment is rolled.",
            (("log.roll.ms", _same), ("log.roll.hours", _times(3_600_000))),
            _at_least(1),
        ),
        ConfigDef(
            "unclean.leader.election.enable",
            _T.BOOLEAN,
            "false",
            "Whether an out-of-sync replica may become leader.",
            (("unclean.leader.election.enable", _same),),
        ),
        ConfigDef(
            MUTANT_CONFIG,
            _T.STRING,
            None,
            "A seeded bug mode for the property suite's mutation check; never set in production.",
            ((MUTANT_CONFIG, _same),),
            choices=MUTANTS,
            hidden=True,
        ),
    )
}

BROKER_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef("auto.create.topics.enable", _T.BOOLEAN, "true", "Create topics on Metadata requests."),
        ConfigDef("num.partitions", _T.INT, "1", "Partitions of an auto-created topic.", valid=_at_least(1)),
        ConfigDef(
            "default.replication.factor",
            _T.INT,
            "1",
            "Replication factor of auto-created topics.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "socket.request.max.bytes",
            _T.INT,
            "104857600",
            "Largest request frame accepted.",
            valid=_at_least(1),
            read_only=True,
        ),
        # -- the socket server: what a client may make the broker hold (reference_impl/core/read_gate.py,
        # reference_impl/server/guard.py); Kafka's names and types, server/src/main/java/org/apache/
        # kafka/network/SocketServerConfigs.java and .../server/config/ServerConfigs.java --
        ConfigDef(
            "queued.max.requests",
            _T.INT,
            "500",
            "Requests read and not yet handled, across connections, before no more are read.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "queued.max.request.bytes",
            _T.LONG,
            "104857600",
            "Bytes of requests being read or not yet handled before no more are read (≤ 0: no bound). "
            "Kafka's default is -1; the reference bounds it by default, at socket.request.max.bytes (the "
            "smallest bound Kafka accepts, so the largest request can always be read), because a hostile "
            "client must never decide how much memory the broker holds.",
            read_only=True,
        ),
        ConfigDef(
            "connections.max.idle.ms",
            _T.LONG,
            "600000",
            "A connection that reads and writes nothing this long is closed.",
            valid=_at_least(-1),
            read_only=True,
        ),
        ConfigDef(
            "max.connections",
            _T.INT,
            None,
            "Client connections held at once; more are closed as they are accepted. Kafka's default is "
            "2147483647; unset here, the broker process takes half of its RLIMIT_NOFILE soft limit, so "
            "connections can never take the descriptors its log segments, sendfile handles and peer "
            "links need (each connection is one descriptor).",
            valid=_at_least(0),
            read_only=True,
        ),
        ConfigDef(
            "max.connections.per.ip",
            _T.INT,
            None,
            "Client connections from one address; more are closed as they are accepted. Kafka's default "
            "is 2147483647; unset here, it is max.connections (on loopback every client shares one "
            "address, so a lower default would refuse the harness's own clients).",
            valid=_at_least(0),
            read_only=True,
        ),
        ConfigDef(
            "reference.request.receive.timeout.ms",
            _T.LONG,
            "30000",
            "Not a Kafka config: the longest a request may take to arrive, from its first byte to its "
            "last, before the connection is closed (a client trickling a frame a byte at a time). Kafka "
            "has no such bound (every byte resets connections.max.idle.ms); 30 s is a client's default "
            "request.timeout.ms, after which the client itself has given the request up (≤ 0: no bound).",
            read_only=True,
        ),
        ConfigDef(
            DEFECTS_CONFIG,
            _T.LIST,
            None,
            "Seeded hostile-input defects switched back on (reference_impl/defects.py); never set in "
            "production.",
            choices=DEFECTS,
            read_only=True,
            hidden=True,
        ),
        ConfigDef("broker.id", _T.INT, "-1", "This node's id.", read_only=True),
        ConfigDef("node.id", _T.INT, "-1", "This node's id.", read_only=True),
        ConfigDef("log.dirs", _T.STRING, None, "Where partitions live.", read_only=True),
        ConfigDef(
            "offsets.topic.num.partitions",
            _T.INT,
            "50",
            "Partitions of __consumer_offsets.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "offsets.topic.replication.factor",
            _T.SHORT,
            "3",
            "Replication of __consumer_offsets.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "offsets.retention.minutes", _T.INT, "10080", "Committed offsets retention.", valid=_at_least(1)
        ),
        ConfigDef(
            "transaction.state.log.num.partitions",
            _T.INT,
            "50",
            "Partitions of __transaction_state.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "transaction.state.log.replication.factor",
            _T.SHORT,
            "3",
            "Replication of __transaction_state.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "transaction.max.timeout.ms", _T.INT, "900000", "Largest transaction timeout.", valid=_at_least(1)
        ),
        ConfigDef(
            "inter.broker.addresses",
            _T.STRING,
            "",
            "Where to reach peers, NODE=HOST:PORT,... (default: their registered addresses).",
            valid=_peer_addresses,
            read_only=True,
        ),
        ConfigDef(
            "process.roles",
            _T.STRING,
            "",
            "broker, controller, or broker,controller (empty: both for a quorum voter, broker otherwise).",
            valid=_process_roles,
            read_only=True,
        ),
        ConfigDef(
            "controller.quorum.voters",
            _T.STRING,
            "",
            "The metadata quorum's voters, ID@HOST:PORT,... (empty: this broker is its own controller).",
            valid=_quorum_voters,
            read_only=True,
        ),
        ConfigDef(
            "listeners",
            _T.STRING,
            "",
            "NAME://HOST:PORT,... to listen on (--listen: PLAINTEXT).",
            read_only=True,
        ),
        ConfigDef(
            "advertised.listeners",
            _T.STRING,
            "",
            "Listeners as clients are told (default: listeners).",
            read_only=True,
        ),
        ConfigDef(
            "listener.security.protocol.map",
            _T.STRING,
            "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "NAME:PROTOCOL,... for every listener name.",
            read_only=True,
        ),
        ConfigDef(
            "controller.listener.names", _T.STRING, "", "The KRaft controller's listeners.", read_only=True
        ),
        ConfigDef(
            "inter.broker.listener.name", _T.STRING, "", "The listener peers use (PLAINTEXT).", read_only=True
        ),
        ConfigDef(
            "controller.quorum.election.timeout.ms",
            _T.INT,
            "1000",
            "How long a voter waits without a leader before it stands for election.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "controller.quorum.fetch.timeout.ms",
            _T.INT,
            "1000",
            "How long a follower goes without a good fetch before it stands (Kafka: 2000; here one "
            "election timeout plus jitter, so a successor is elected within two election timeouts).",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "controller.quorum.request.timeout.ms",
            _T.INT,
            "500",
            "How long a quorum request waits for its answer.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "metadata.log.max.record.bytes.between.snapshots",
            _T.LONG,
            "20971520",
            "Bytes of metadata records committed since the last snapshot after which every node writes a "
            "snapshot of its metadata image; the metadata log then starts at the snapshot (a replica "
            "behind that start catches up with FetchSnapshot).",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "broker.session.timeout.ms",
            _T.INT,
            "9000",
            "A broker without a heartbeat this long is fenced and loses its leaderships.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "auto.leader.rebalance.enable",
            _T.BOOLEAN,
            "true",
            "The active controller gives leaderships back to preferred replicas live and in the ISR.",
            read_only=True,
        ),
        ConfigDef(
            "leader.imbalance.check.interval.seconds",
            _T.LONG,
            "300",
            "How often the active controller checks for partitions not led by their preferred replica.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "broker.heartbeat.interval.ms",
            _T.INT,
            "2000",
            "How often a broker heartbeats to the active controller.",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "replica.fetch.wait.max.ms",
            _T.INT,
            "500",
            "Longest a follower's fetch waits at the leader for data.",
            valid=_at_least(0),
        ),
        ConfigDef(
            "replica.fetch.max.bytes",
            _T.INT,
            "1048576",
            "Bytes a follower fetches per partition.",
            valid=_at_least(0),
        ),
        ConfigDef(
            "replica.fetch.response.max.bytes",
            _T.INT,
            "10485760",
            "Bytes a follower's fetch answer may hold.",
            valid=_at_least(0),
        ),
        ConfigDef(
            "replica.fetch.backoff.ms",
            _T.INT,
            "1000",
            "Pause after a failed replica fetch.",
            valid=_at_least(0),
        ),
        ConfigDef(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            _T.INT,
            "10000",
            "How often transactions open longer than their timeout are aborted.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "group.initial.rebalance.delay.ms",
            _T.INT,
            "3000",
            "Delay of a new group's first rebalance.",
            valid=_at_least(0),
        ),
        ConfigDef(
            "group.min.session.timeout.ms", _T.INT, "6000", "Smallest session timeout.", valid=_at_least(0)
        ),
        ConfigDef(
            "group.max.session.timeout.ms", _T.INT, "1800000", "Largest session timeout.", valid=_at_least(0)
        ),
        # -- group coordinator (reference_impl/core/group) --
        ConfigDef(
            "group.max.size", _T.INT, str(INT_MAX), "Most members of a classic group.", valid=_at_least(1)
        ),
        ConfigDef(
            "offset.metadata.max.bytes",
            _T.INT,
            "4096",
            "Longest committed offset metadata.",
            valid=_at_least(0),
        ),
        ConfigDef(
            "offsets.retention.check.interval.ms",
            _T.LONG,
            "600000",
            "How often expired offsets are removed.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "offsets.commit.timeout.ms",
            _T.INT,
            "5000",
            "How long a coordinator write waits for the replicas.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "replica.lag.time.max.ms",
            _T.LONG,
            "30000",
            "Lag after which a follower leaves the ISR.",
            valid=_at_least(0),
        ),
        ConfigDef(
            "log.retention.check.interval.ms",
            _T.LONG,
            "300000",
            "Retention check period.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "log.flush.scheduler.interval.ms",
            _T.LONG,
            str(LONG_MAX),
            "Flush check period.",
            valid=_at_least(0),
        ),
        ConfigDef("log.cleaner.enable", _T.BOOLEAN, "true", "Run the log cleaner (compacted topics)."),
        ConfigDef(
            "log.cleaner.backoff.ms",
            _T.LONG,
            "15000",
            "Pause of the log cleaner when no log needs cleaning.",
            valid=_at_least(0),
        ),
        ConfigDef("log.retention.minutes", _T.INT, None, "retention.ms in minutes (topic default)."),
        ConfigDef("log.retention.hours", _T.INT, "168", "retention.ms in hours (topic default)."),
        ConfigDef("log.roll.hours", _T.INT, "168", "segment.ms in hours (topic default)."),
        ConfigDef("log.roll.jitter.hours", _T.INT, "0", "segment.jitter.ms in hours."),
        ConfigDef("fetch.max.bytes", _T.INT, "57671680", "Largest fetch answer.", valid=_at_least(0)),
        ConfigDef(
            "max.incremental.fetch.session.cache.slots",
            _T.INT,
            "1000",
            "Fetch sessions kept.",
            valid=_at_least(0),
        ),
    )
}


def _register_topic_synonyms() -> None:
    """Every broker synonym of a topic config is a broker config too."""
    for tdef in TOPIC_CONFIGS.values():
        for name, convert in tdef.synonyms:
            if name not in BROKER_CONFIGS:
                default = tdef.default if name == tdef.synonyms[0][0] else None
                BROKER_CONFIGS[name] = ConfigDef(
                    name,
                    tdef.type if convert is _same else _T.LONG,
                    default,
                    f"Broker default of topic config {tdef.name}.",
                    choices=tdef.choices,
                    hidden=tdef.hidden,
                )


_register_topic_synonyms()
from .security.settings import listener_prefixed, register  # noqa: E402  (it imports this module's defs)

register()  # the security configs (issue 18): ssl.*, sasl.*, and their listener.name.NAME. forms


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


@dataclass
class BrokerConfig:
    """Static broker settings (``--config k=v``) plus dynamic ones (AlterConfigs)."""

    node_id: int
    static: dict[str, str] = field(default_factory=dict)
    dynamic: dict[str, str] = field(default_factory=dict)

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
        if name in self.dynamic:
            return self.dynamic[name]
        if name in self.static:
            return self.static[name]
        definition = BROKER_CONFIGS.get(name)
        return definition.default if definition else None

    def get_int(self, name: str) -> int:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return int(value)

    def get_bool(self, name: str) -> bool:
        return self.get(name) == "true"

    def describe(self, names: Iterable[str] | None = None) -> list[ConfigEntry]:
        wanted = sorted(BROKER_CONFIGS) if names is None else list(names)
        entries = []
        for name in wanted:
            definition = BROKER_CONFIGS.get(name)
            if definition is None or (definition.hidden and self.get(name) is None):
                continue
            synonyms: list[tuple[str, str | None, ConfigSource]] = []
            if name in self.dynamic:
                synonyms.append((name, self.dynamic[name], ConfigSource.DYNAMIC_BROKER_CONFIG))
            if name in self.static:
                synonyms.append((name, self.static[name], ConfigSource.STATIC_BROKER_CONFIG))
            if definition.default is not None:
                synonyms.append((name, definition.default, ConfigSource.DEFAULT_CONFIG))
            value, source = (
                (synonyms[0][1], synonyms[0][2]) if synonyms else (None, ConfigSource.DEFAULT_CONFIG)
            )
            entries.append(
                ConfigEntry(
                    name,
                    value,
                    source,
                    definition.type,
                    definition.read_only,
                    definition.doc,
                    tuple(synonyms),
                )
            )
        return entries


def topic_default_chain(name: str, broker: BrokerConfig) -> list[tuple[str, str | None, ConfigSource]]:
    """Where a topic config's value comes from when the topic does not override it."""
    definition = TOPIC_CONFIGS[name]
    chain: list[tuple[str, str | None, ConfigSource]] = []
    for synonym, convert in definition.synonyms:
        for store, source in (
            (broker.dynamic, ConfigSource.DYNAMIC_BROKER_CONFIG),
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
    wanted = sorted(TOPIC_CONFIGS) if names is None else list(names)
    entries = []
    for name in wanted:
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            continue
        chain = topic_default_chain(name, broker)
        if definition.hidden and chain[0][1] is None and name not in overrides:
            continue
        if name in overrides:
            chain.insert(0, (name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        value, source = chain[0][1], chain[0][2]
        entries.append(
            ConfigEntry(
                name, value, source, definition.type, definition.read_only, definition.doc, tuple(chain)
            )
        )
    return entries


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
