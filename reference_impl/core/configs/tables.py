"""Kafka's broker and topic config definitions (a data table), with Kafka 4's defaults.

A topic config lists its broker synonyms (``retention.ms`` ← ``log.retention.ms`` ←
``log.retention.minutes`` ← ``log.retention.hours``), most specific first, each with the
converter into the topic config's unit; every synonym is registered as a broker config too.
"""

from __future__ import annotations

from reference_impl.defects import ALL as DEFECTS
from reference_impl.defects import DEFECTS_CONFIG

from ..kraft.roles import parse_roles
from ..mutants import ALL as MUTANTS
from ..mutants import MUTANT_CONFIG
from ..mutants import STARTUP_MODES as STARTUP_MUTANTS
from ..mutants import TXN_MODES as TXN_MUTANTS
from ..replication.read_replica import SELECTORS as READ_SELECTORS
from ..security.settings import SECURITY_CONFIGS
from .catalogue import register as _register_kafka_catalogue
from .model import (
    INT_MAX,
    LONG_MAX,
    ConfigDef,
    ConfigType,
    parse_bootstrap_servers,
    parse_peer_addresses,
    parse_quorum_voters,
)
from .validators import at_least as _at_least
from .validators import ratio as _ratio
from .validators import same as _same
from .validators import times as _times


def _peer_addresses(value: str) -> bool:
    parse_peer_addresses(value)
    return True


def _process_roles(value: str) -> bool:
    parse_roles(value)
    return True


def _bootstrap_servers(value: str) -> bool:
    parse_bootstrap_servers(value)
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
            choices=MUTANTS + TXN_MUTANTS + STARTUP_MUTANTS,
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
            "telemetry.max.bytes",
            _T.INT,
            "1048576",
            "Largest PushTelemetry metrics payload accepted (KIP-714; Kafka's ServerConfigs).",
            valid=_at_least(1),
            read_only=True,
        ),
        ConfigDef(
            "max.request.partition.size.limit",
            _T.INT,
            "2000",
            "Most partitions one DescribeTopicPartitions answer holds (KIP-966; Kafka's ServerConfigs).",
            valid=_at_least(1),
            read_only=True,
        ),
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
            "reference.kraft.version",
            _T.INT,
            "0",
            "Not a Kafka config: the kraft.version a node formats its empty metadata log with (kafka-storage "
            "format --initial-controllers): 1 makes controller.quorum.voters the initial controllers, which "
            "AddRaftVoter and RemoveRaftVoter then change.",
            valid=lambda v: int(v) in (0, 1),
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
        ConfigDef("log.dirs", _T.STRING, None, "Where partitions live: comma-separated directories (JBOD).",
                  read_only=True),
        ConfigDef("log.dir", _T.STRING, None, "The log directory when log.dirs is not set.", read_only=True),
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
            "controller.quorum.bootstrap.servers",
            _T.LIST,
            "",
            "HOST:PORT,... of controller listeners to find the metadata quorum through (KIP-853), when "
            "controller.quorum.voters is empty: the node observes the metadata log (kraft.version 1) and "
            "a controller among them becomes a voter once AddRaftVoter adds it.",
            valid=_bootstrap_servers,
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
        # Consumer-protocol groups (KIP-848; Kafka's GroupCoordinatorConfig).
        ConfigDef(
            "group.consumer.heartbeat.interval.ms",
            _T.INT,
            "5000",
            "Heartbeat interval given to consumer-protocol members.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "group.consumer.session.timeout.ms",
            _T.INT,
            "45000",
            "Session timeout of consumer-protocol members.",
            valid=_at_least(1),
        ),
        # Their bounds, which also bound a group's own value (GroupConfig.validateValues).
        *(
            ConfigDef(
                f"group.{kind}.{edge}.{what}", _T.INT, default, f"{edge.title()} {what} of {kind} groups."
            )
            for kind in ("consumer", "share")
            for edge, what, default in (
                ("min", "session.timeout.ms", "45000"),
                ("max", "session.timeout.ms", "60000"),
                ("min", "heartbeat.interval.ms", "5000"),
                ("max", "heartbeat.interval.ms", "15000"),
            )
        ),
        ConfigDef(
            "group.share.session.timeout.ms",
            _T.INT,
            "45000",
            "Session timeout of share-group members.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "group.share.heartbeat.interval.ms",
            _T.INT,
            "5000",
            "Heartbeat interval given to share-group members.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "group.share.min.record.lock.duration.ms", _T.INT, "15000", "Smallest group lock duration."
        ),
        ConfigDef("group.share.max.record.lock.duration.ms", _T.INT, "60000", "Largest group lock duration."),
        ConfigDef(
            "group.consumer.max.size",
            _T.INT,
            str(INT_MAX),
            "Most members of a consumer-protocol group.",
            valid=_at_least(1),
        ),
        ConfigDef(
            "group.consumer.assignors",
            _T.LIST,
            "uniform,range",
            "Server-side assignors of consumer-protocol groups, the first the default.",
        ),
        # Share groups (KIP-932; Kafka's ShareGroupConfig: lock duration at least 1000).
        ConfigDef(
            "group.share.record.lock.duration.ms",
            _T.INT,
            "30000",
            "Acquisition lock of a share-group record.",
            valid=_at_least(1000),
        ),
        ConfigDef(
            "group.share.delivery.count.limit",
            _T.INT,
            "5",
            "Deliveries of a share-group record before it is archived.",
            valid=_at_least(2),
        ),
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
            "broker.rack",
            _T.STRING,
            None,
            "This broker's rack, registered with the controller (Metadata and DescribeCluster "
            "answers carry it; follower fetching matches consumers' racks against it).",
            read_only=True,
        ),
        ConfigDef(
            "replica.selector.class",
            _T.STRING,
            None,
            "Which replica a consumer reads from (KIP-392): none (the leader), Kafka's "
            "RackAwareReplicaSelector (a follower in the consumer's rack) or LeaderSelector.",
            choices=READ_SELECTORS,
            read_only=True,
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


def _register_security_configs() -> None:
    """The security configs (issue 18: ``ssl.*``, ``sasl.*``) are defined by the module that reads
    them; they join the table so that ``--config`` and DescribeConfigs know them."""
    for definition in SECURITY_CONFIGS:
        BROKER_CONFIGS.setdefault(definition.name, definition)


_register_security_configs()
OWN_BROKER_CONFIGS, OWN_TOPIC_CONFIGS = frozenset(BROKER_CONFIGS), frozenset(TOPIC_CONFIGS)
_register_kafka_catalogue(BROKER_CONFIGS, TOPIC_CONFIGS)  # all of Kafka's, configs/catalogue.py
