"""Kafka's side of the ApiVersions comparison (docs/APIVERSIONS.md): which listener of a Kafka 4 node
serves each API, and why the reference differs where it does (the gap ledger).

**Listeners** come from each message definition's ``"listeners"`` field in Kafka,
``clients/src/main/resources/common/message/<Name>Request.json`` (``"broker"`` and ``"controller"``;
``"zkBroker"`` is gone from Kafka 4, which removed ZooKeeper): read at apache/kafka trunk commit
1eb7644349cb07139d6a3c1ad1986979647cac99 for keys 0-87, and at the newer stored versions for 88-92
(StreamsGroupHeartbeat, StreamsGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets) and for ListConfigResources (74, KIP-1142's rename of
ListClientMetricsResources). ``ApiKeys.inScope(listenerType)`` (clients/src/main/java/org/apache/kafka/
common/protocol/ApiKeys.java) is what makes a node advertise an API on a listener.

**Versions** are kio 0.6.5's: kio generates one schema per version from the same JSON files, so
its range per API is the ``validVersions`` of the Kafka it was generated from (the message
definitions after Kafka 4.1.0: Produce v13, ShareGroupHeartbeat v1 only and ListConfigResources v1
are 4.1's). A Kafka broker advertises a version marked ``latestVersionUnstable`` only with
``unstable.api.versions.enable``; kio does not say which are, so the table takes the full range.
"""

from __future__ import annotations

BROKER = "B"
CONTROLLER = "C"

KAFKA_LISTENERS: dict[int, tuple[str, str]] = {
    # api key: (Kafka's name, listeners: B = broker, C = controller)
    0: ("Produce", "B"),
    1: ("Fetch", "BC"),
    2: ("ListOffsets", "B"),
    3: ("Metadata", "B"),
    8: ("OffsetCommit", "B"),
    9: ("OffsetFetch", "B"),
    10: ("FindCoordinator", "B"),
    11: ("JoinGroup", "B"),
    12: ("Heartbeat", "B"),
    13: ("LeaveGroup", "B"),
    14: ("SyncGroup", "B"),
    15: ("DescribeGroups", "B"),
    16: ("ListGroups", "B"),
    17: ("SaslHandshake", "BC"),
    18: ("ApiVersions", "BC"),
    19: ("CreateTopics", "BC"),
    20: ("DeleteTopics", "BC"),
    21: ("DeleteRecords", "B"),
    22: ("InitProducerId", "B"),
    23: ("OffsetForLeaderEpoch", "B"),
    24: ("AddPartitionsToTxn", "B"),
    25: ("AddOffsetsToTxn", "B"),
    26: ("EndTxn", "B"),
    27: ("WriteTxnMarkers", "B"),
    28: ("TxnOffsetCommit", "B"),
    29: ("DescribeAcls", "BC"),
    30: ("CreateAcls", "BC"),
    31: ("DeleteAcls", "BC"),
    32: ("DescribeConfigs", "BC"),
    33: ("AlterConfigs", "BC"),
    34: ("AlterReplicaLogDirs", "B"),
    35: ("DescribeLogDirs", "B"),
    36: ("SaslAuthenticate", "BC"),
    37: ("CreatePartitions", "BC"),
    38: ("CreateDelegationToken", "BC"),
    39: ("RenewDelegationToken", "BC"),
    40: ("ExpireDelegationToken", "BC"),
    41: ("DescribeDelegationToken", "BC"),
    42: ("DeleteGroups", "B"),
    43: ("ElectLeaders", "BC"),
    44: ("IncrementalAlterConfigs", "BC"),
    45: ("AlterPartitionReassignments", "BC"),
    46: ("ListPartitionReassignments", "BC"),
    47: ("OffsetDelete", "B"),
    48: ("DescribeClientQuotas", "B"),
    49: ("AlterClientQuotas", "BC"),
    50: ("DescribeUserScramCredentials", "BC"),
    51: ("AlterUserScramCredentials", "BC"),
    52: ("Vote", "C"),
    53: ("BeginQuorumEpoch", "C"),
    54: ("EndQuorumEpoch", "C"),
    55: ("DescribeQuorum", "BC"),
    56: ("AlterPartition", "C"),
    57: ("UpdateFeatures", "BC"),
    58: ("Envelope", "C"),
    59: ("FetchSnapshot", "C"),
    60: ("DescribeCluster", "BC"),
    61: ("DescribeProducers", "B"),
    62: ("BrokerRegistration", "C"),
    63: ("BrokerHeartbeat", "C"),
    64: ("UnregisterBroker", "BC"),
    65: ("DescribeTransactions", "B"),
    66: ("ListTransactions", "B"),
    67: ("AllocateProducerIds", "C"),
    68: ("ConsumerGroupHeartbeat", "B"),
    69: ("ConsumerGroupDescribe", "B"),
    70: ("ControllerRegistration", "C"),
    71: ("GetTelemetrySubscriptions", "B"),
    72: ("PushTelemetry", "B"),
    73: ("AssignReplicasToDirs", "C"),
    74: ("ListConfigResources", "B"),
    75: ("DescribeTopicPartitions", "B"),
    76: ("ShareGroupHeartbeat", "B"),
    77: ("ShareGroupDescribe", "B"),
    78: ("ShareFetch", "B"),
    79: ("ShareAcknowledge", "B"),
    80: ("AddRaftVoter", "BC"),
    81: ("RemoveRaftVoter", "BC"),
    82: ("UpdateRaftVoter", "C"),
    83: ("InitializeShareGroupState", "B"),
    84: ("ReadShareGroupState", "B"),
    85: ("WriteShareGroupState", "B"),
    86: ("DeleteShareGroupState", "B"),
    87: ("ReadShareGroupStateSummary", "B"),
    88: ("StreamsGroupHeartbeat", "B"),
    89: ("StreamsGroupDescribe", "B"),
    90: ("DescribeShareGroupOffsets", "B"),
    91: ("AlterShareGroupOffsets", "B"),
    92: ("DeleteShareGroupOffsets", "B"),
}

KAFKA_RELEASE = (
    "the message definitions kio 0.6.5 carries (Kafka after 4.1.0; versions from kio's schemas), listeners "
    'from each `clients/src/main/resources/common/message/*Request.json` `"listeners"` field in '
    "apache/kafka (Kafka 4 has no `zkBroker` listener); see `reference_impl/tools/kafka_apis.py`."
)

GAP_LEDGER: dict[int, str] = {
    # -- served, but not on every listener Kafka serves it on --
    17: "SaslHandshake is not served on the controller listener: the reference's controller listener "
    "authenticates its peers with the listener's own protocol (server/links.py) but the core answers SASL "
    "only on client listeners; a controller-only node is reached by the cluster's own nodes alone.",
    36: "SaslAuthenticate: as SaslHandshake (17), not on the controller listener.",
    32: "DescribeConfigs is not served on the controller listener (Kafka's ControllerApis answers it for "
    "admin clients that bootstrap to controllers, KIP-919); the reference's controller listener serves what "
    "brokers forward and the quorum's own APIs.",
    50: "DescribeUserScramCredentials is not served on the controller listener (brokers answer it from "
    "their metadata image; nothing forwards it).",
    # -- older version ranges --
    22: "InitProducerId v6 (KIP-939, two-phase commit: keepPreparedTxn/enable2Pc) is not implemented.",
    56: "AlterPartition v3 (KIP-903: broker epochs of ISR members) is not implemented; v2 (topic ids).",
    63: "BrokerHeartbeat v2 (KIP-1180) is not implemented; v1 carries the offline log directories (KIP-858): "
    "the controller moves the leaderships of the replicas AssignReplicasToDirs placed in them.",
    # -- not implemented --
    38: "Delegation tokens (KIP-48) are not implemented: no token authentication.",
    39: "Delegation tokens (KIP-48) are not implemented.",
    40: "Delegation tokens (KIP-48) are not implemented.",
    41: "Delegation tokens (KIP-48) are not implemented.",
    58: "Envelope (KIP-590's principal-preserving forward): the reference forwards admin writes with its own "
    "request and checks ACLs at the broker first (core/handlers/forwarding.py), so the controller needs no "
    "Envelope.",
    70: "ControllerRegistration (KIP-919): controllers are known from controller.quorum.voters; they do not "
    "register their endpoints and features in the metadata log.",
    90: "Share-group offsets admin (KIP-932): not built yet (issue 19).",
    91: "Share-group offsets admin (KIP-932): not built yet (issue 19).",
    92: "Share-group offsets admin (KIP-932): not built yet (issue 19).",
    88: "Streams groups (KIP-1071, early access in Kafka 4.1) are not implemented.",
    89: "Streams groups (KIP-1071) are not implemented.",
}

BEHAVIOUR_GAPS: tuple[tuple[str, str], ...] = (
    (
        "AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter: kraft.version 1 quorums",
        "The Raft replica implements KIP-853 (core/raft/membership.py, voter_changes.py: VotersRecord and "
        "KRaftVersionRecord control records, one change at a time, a caught-up observer, the new set's "
        "majority, Kafka's errors), checked in the simulator (sim/raft/voter_fuzz.py, the mutants check). "
        "A process cluster is kraft.version 1 only with reference.kraft.version=1 (its voters formatted as "
        "the initial controllers at the first start, --initial-controllers; default 0: the leader answers "
        "the three APIs UNSUPPORTED_VERSION after Kafka's request checks, as a static Kafka 4 quorum), and "
        "its initial voters are the nodes of controller.quorum.voters; a new controller joins with "
        "controller.quorum.bootstrap.servers (core/kraft/peer_addresses.py: it observes through the "
        "bootstrap servers and the Fetch answers' NodeEndpoints, is then added with AddRaftVoter, and the "
        "others reach it at the voter set's endpoint; kafka-harness cluster add-controller). The reference "
        "derives a node's directory id from the cluster and node ids instead of meta.properties. The "
        "leader does not ask a new voter ApiVersions (its "
        "kraft.version range is taken as 0-1); observers of a kraft.version 1 quorum take a new epoch only "
        "with its leader (a removed voter stands no more; voters ask PreVotes first, core/raft/voting.py).",
    ),
    (
        "Vote / BeginQuorumEpoch / EndQuorumEpoch / FetchSnapshot: KIP-853 and KIP-996 on the wire",
        "Nodes send Vote v2, BeginQuorumEpoch v1, EndQuorumEpoch v1 and FetchSnapshot v1 "
        "(core/kraft/raft_wire.py) and check the voter key they name (INVALID_VOTER_KEY). Pre-vote "
        "(KIP-996, core/raft/voting.py) is a round held beside the replica's election state, not Kafka's "
        "Prospective state: the replica stays Follower/Unattached/... while it asks, and nothing of the "
        "round is persisted. The leader endpoints Vote, BeginQuorumEpoch and EndQuorumEpoch carry are "
        "sent, not used: peers' addresses come from controller.quorum.voters, the voter set and the Fetch "
        "answers' NodeEndpoints (core/kraft/peer_addresses.py). Raft's own Fetch goes at v17 as Kafka's "
        "(ReplicaState, ReplicaDirectoryId) and FetchSnapshot v1 carries the directory id too, but the "
        "leader counts a fetch by replica id alone (Kafka's LeaderState keys a voter by id and directory "
        "id); a snapshot does not carry the voter set (KIP-853 puts a VotersRecord in its header), see "
        "AddRaftVoter above.",
    ),
    (
        "BrokerRegistration: v1-4 semantics",
        "ClusterControlManager.registerBroker's checks in its order (core/controller/registration.py): a "
        "ZooKeeper-migrating broker is BROKER_ID_NOT_REGISTERED; LogDirs must name directories, none "
        "reserved, repeated or registered by another broker (INVALID_REGISTRATION). A v0/v1 request, "
        "which has no LogDirs, is accepted (a Kafka 4 controller refuses it): brokers register at v4, or "
        "at v1 when they know no directory ids (the simulator's memory stores). Which broker owns a "
        "directory is what the active controller saw registered (RegisterBrokerRecord carries no LogDirs "
        "here), not the metadata log. PreviousBrokerEpoch is read and not used (it matters to Kafka with "
        "eligible leader replicas, not kept here); the broker always sends -1. Feature ranges are checked"
        " against the finalized levels as Kafka's processRegistrationFeature (UNSUPPORTED_VERSION). "
        "Brokers send v4 without asking the controller's ApiVersions (every reference controller serves "
        "v0-4).",
    ),
    (
        "UpdateFeatures: kraft.version and feature dependencies",
        "Kafka (KAFKA-18979) upgrades kraft.version through the quorum's own control records, not a "
        "FeatureLevelRecord; the reference's Raft replica reads kraft.version from those records "
        "(KRaftVersionRecord, core/raft/voter_set.py) and ApiVersions reports it, but a quorum gets "
        "kraft.version 1 only when formatted with it (reference.kraft.version=1), and the upgrade 0 -> 1 at "
        "run time is not implemented, so an upgrade of kraft.version is INVALID_UPDATE_VERSION (Kafka "
        "refuses only its downgrade). "
        "Cross-feature dependencies "
        "(Features.validateVersion) are not checked: Kafka 4.0's (any level >= 1 needs metadata.version "
        ">= 4; kraft.version 1 needs >= 21) always hold or concern kraft.version "
        "(core/metadata/feature_updates.py).",
    ),
    (
        "DescribeTopicPartitions: eligible leader replicas (KIP-966)",
        "The controller keeps no ELR (no `eligible.leader.replicas.version` feature, no ELR in "
        "PartitionRecord/PartitionChangeRecord, no ELR-based election): implementing it means new record "
        "fields, the feature level and the election rules, more than this change could carry. Kafka with "
        "that feature at level 0 (ELR off; 4.0's default, not checked here for newer releases' new "
        "clusters) keeps the ELR and last-known ELR empty and DescribeTopicPartitions answers `[]` for "
        "both, which is what the reference answers (core/handlers/k75_describe_topic_partitions.py).",
    ),
    (
        "Client quotas: connection_creation_rate stored, not enforced",
        "AlterClientQuotas (49) writes ClientQuotaRecords as Kafka's ClientQuotaControlManager decides them "
        "and DescribeClientQuotas (48) answers from every broker's image (core/controller/client_quotas.py). "
        "producer_byte_rate and consumer_byte_rate are enforced as Kafka's ClientQuotaManager (KIP-219: "
        "throttle_time_ms in the answer, the connection muted that long, a throttled fetch answered empty; "
        "core/quotas.py); request_percentage as ClientRequestQuotaManager (KIP-124: the handler's time on "
        "the server's monotonic clock, the throttle bounded at one window, Kafka's exempt APIs; Kafka also "
        "charges network-thread time, not measured here; core/request_quotas.py); controller_mutation_rate "
        "as ControllerMutationQuotaManager (KIP-599: a token bucket charged the partitions mutated, "
        "THROTTLING_QUOTA_EXCEEDED per topic from CreateTopics v6, DeleteTopics v5, CreatePartitions v3; "
        "a request another broker forwards is charged to that broker's client id, as it is forwarded "
        "without Kafka's Envelope; core/mutation_quotas.py). "
        "connection_creation_rate is stored, not enforced; the quota.window.* settings are Kafka's "
        "defaults, not configurable. An `ip` entity name "
        "must be an IP literal: Kafka also accepts a hostname it resolves; the reference resolves no names.",
    ),
    (
        "Telemetry APIs always advertised (KIP-714)",
        "Kafka advertises GetTelemetrySubscriptions and PushTelemetry only when a metrics reporter that "
        "receives client telemetry is configured; the reference always has its receiver (a bounded "
        "in-memory store that `kafka-harness telemetry` reads), so it always advertises them.",
    ),
    (
        "Telemetry: the client_source_port selector",
        "The core does not know a connection's source port; `match` selectors on client_source_port "
        "match the empty string.",
    ),
    (
        "Telemetry: the pushed-metrics read path",
        "DescribeConfigs of the client-metrics resource `kafka-harness.pushed-telemetry` lists what clients "
        "pushed (one JSON summary per client instance); Kafka would list that resource's configs (none).",
    ),
    (
        "Group configs (resource type 32): what is left out",
        "The keys of Kafka's GroupConfig at apache/kafka 020f7ac5 (consumer.*, share.session/heartbeat/"
        "record.lock.duration, share.auto.offset.reset latest|earliest, and the by_duration:<ISO-8601> "
        "of later releases' ShareGroupAutoOffsetResetStrategy) are "
        "checked, stored in the metadata log, described and used by the coordinators and share-partitions "
        "(a share-partition reads share.auto.offset.reset only when it starts). Later releases' keys "
        "(share.isolation.level, share.delivery.count.limit, share.partition.max.record.locks, "
        "share.renew.acknowledge.enable, streams.*) are refused as unknown (INVALID_CONFIG). "
        "ListConfigResources names only groups that have configs.",
    ),
    (
        "Several log directories (JBOD, KIP-113/KIP-858): what differs",
        "log.dirs places partitions across directories (fewest partitions first), each with its "
        "meta.properties and directory.id; DescribeLogDirs (35) and AlterReplicaLogDirs (34) serve them; a "
        "directory's I/O error takes only its partitions offline (KAFKA_STORAGE_ERROR), BrokerHeartbeat v1 "
        "reports it and the controller moves their leaderships (reference_impl/log/dir_set.py). Differences: "
        "AlterReplicaLogDirs copies and swaps within the request, so DescribeLogDirs never shows an "
        "is_future_key log (Kafka copies in the background through a -future log). As in Kafka, a "
        "failure of the directory holding the metadata log, or of every directory, halts the broker "
        "(exit 1), and a directory comes back only with a restart; partitions the controller recorded in a "
        "directory still failed at a restart stay offline rather than being recreated empty.",
    ),
)
