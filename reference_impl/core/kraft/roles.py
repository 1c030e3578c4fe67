"""``process.roles``: whether a cluster node is a broker, a controller, or both (KIP-631).

By default a node in ``controller.quorum.voters`` is both (combined mode) and any other node is a
broker that observes the metadata log. ``process.roles=controller`` makes a voter a controller
only: it runs the metadata quorum and the controller, never registers as a broker (so no partition
is placed on it and Metadata never lists it), and serves only the APIs of Kafka's controller
listener; clients administer the cluster through the brokers, which forward to it (KIP-590).
A voter must have the controller role and a controller must be a voter, unless the node found the
quorum through ``controller.quorum.bootstrap.servers`` (KIP-853; the ids -2, -3, ... of
``peer_addresses.py``): then it is a controller that observes the metadata log until AddRaftVoter
adds it (Kafka's ``kafka-storage format --no-initial-controllers``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..configs.model import ConfigError

BROKER_ROLE = "broker"
CONTROLLER_ROLE = "controller"
ROLES = frozenset({BROKER_ROLE, CONTROLLER_ROLE})

CONTROLLER_LISTENER_APIS = frozenset(
    {
        1,  # Fetch (the metadata log's replication)
        18,  # ApiVersions
        19,  # CreateTopics
        20,  # DeleteTopics
        29,  # DescribeAcls (ControllerApis serves the ACL APIs too)
        30,  # CreateAcls (forwarded by brokers, KIP-590)
        31,  # DeleteAcls
        33,  # AlterConfigs
        37,  # CreatePartitions
        43,  # ElectLeaders
        44,  # IncrementalAlterConfigs
        45,  # AlterPartitionReassignments
        46,  # ListPartitionReassignments
        49,  # AlterClientQuotas (forwarded by brokers)
        51,  # AlterUserScramCredentials (forwarded by brokers)
        52,  # Vote
        53,  # BeginQuorumEpoch
        54,  # EndQuorumEpoch
        55,  # DescribeQuorum
        56,  # AlterPartition
        57,  # UpdateFeatures (forwarded by brokers)
        59,  # FetchSnapshot
        60,  # DescribeCluster (KIP-919)
        62,  # BrokerRegistration
        63,  # BrokerHeartbeat
        64,  # UnregisterBroker (forwarded by brokers)
        67,  # AllocateProducerIds
        73,  # AssignReplicasToDirs (KIP-858)
        80,  # AddRaftVoter (KIP-853; brokers forward it)
        81,  # RemoveRaftVoter (KIP-853; brokers forward it)
        82,  # UpdateRaftVoter (KIP-853)
    }
)
"""What a controller listener serves: the APIs Kafka's message definitions list for the
``controller`` listener, among those this broker implements."""

CONTROLLER_ONLY_APIS = frozenset({52, 53, 54, 56, 59, 62, 63, 67, 73, 82})
"""Vote, BeginQuorumEpoch, EndQuorumEpoch, AlterPartition, FetchSnapshot, BrokerRegistration,
BrokerHeartbeat, AllocateProducerIds, AssignReplicasToDirs, UpdateRaftVoter: the implemented APIs whose
message definition (``clients/src/main/resources/common/message/*Request.json``, ``"listeners"``) names the
``controller`` listener and not ``broker``. A broker listener neither advertises nor serves them
(Kafka's ``ApiVersionManager.isApiEnabled`` checks ``ApiKeys.inScope(listenerType)``)."""


def parse_roles(value: str) -> frozenset[str]:
    """``broker``, ``controller`` or both, comma-separated; empty means "derive from the voters"."""
    roles = frozenset(r.strip() for r in value.split(",") if r.strip())
    unknown = roles - ROLES
    if unknown:
        raise ConfigError(f"process.roles: unknown role(s) {sorted(unknown)} (known: broker, controller)")
    return roles


def node_roles(value: str, node_id: int, voters: Mapping[int, object]) -> frozenset[str]:
    """The roles of node ``node_id`` given ``process.roles`` (``value``) and the quorum's voters."""
    roles = parse_roles(value)
    is_voter = node_id in voters
    if not roles:
        return frozenset({BROKER_ROLE, CONTROLLER_ROLE}) if is_voter else frozenset({BROKER_ROLE})
    if CONTROLLER_ROLE in roles and not is_voter and not _bootstrap_only(voters):
        raise ConfigError(
            f"process.roles={value}: node {node_id} is not in controller.quorum.voters "
            f"({', '.join(map(str, sorted(voters))) or 'empty'}), so it cannot be a controller"
        )
    if is_voter and CONTROLLER_ROLE not in roles:
        raise ConfigError(f"process.roles={value}: node {node_id} is a voter, so it must be a controller")
    return roles


def _bootstrap_only(voters: Mapping[int, object]) -> bool:
    """The voters are bootstrap servers (negative ids, KafkaRaftClient's), not controller.quorum.voters."""
    return bool(voters) and all(v < 0 for v in voters)
