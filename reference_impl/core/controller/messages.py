"""Requests brokers send to the active controller, and its answers, as plain values.

They mirror Kafka's BrokerRegistration, BrokerHeartbeat, CreateTopics and
AlterPartition (field names snake_cased) so the shell can translate them
field for field; controlled shutdown is a heartbeat with
``want_shut_down`` as in KRaft. A controller that is not active answers
NOT_CONTROLLER and the broker tries another.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationRequest:
    correlation_id: int
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    incarnation_id: str = ""
    """Names one process of the broker (Kafka's incarnation id): the same across its retries."""
    is_migrating_zk_broker: bool = False
    """v1+: a ZooKeeper broker migrating to KRaft (Kafka 4's controller refuses it)."""
    log_dirs: tuple[str, ...] | None = None
    """v2+ (KIP-858): the ids of the broker's online log directories (None: not said, in-process)."""
    previous_broker_epoch: int = -1
    """v3+ (KIP-966): the broker epoch before a clean shutdown (-1: none)."""
    features: tuple[tuple[str, int, int], ...] | None = None
    """(name, min, max) of the features the broker supports (None: not said, in-process)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationResponse:
    correlation_id: int
    error_code: ErrorCode
    broker_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatRequest:
    correlation_id: int
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    """Everything below this offset of the metadata log is applied on the broker."""
    want_fence: bool = False
    want_shut_down: bool = False
    offline_log_dirs: tuple[str, ...] = ()
    """KIP-858 (BrokerHeartbeat v1): ids of this broker's log directories that failed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatResponse:
    correlation_id: int
    error_code: ErrorCode
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequest:
    correlation_id: int
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponse:
    correlation_id: int
    error_code: ErrorCode
    error_message: str | None
    topic_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequest:
    """A partition leader asks to change its ISR (Kafka's AlterPartition, one partition)."""

    correlation_id: int
    broker_id: int
    broker_epoch: int
    topic_id: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionResponse:
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


ControllerRequest = (
    BrokerRegistrationRequest | BrokerHeartbeatRequest | CreateTopicsRequest | AlterPartitionRequest
)
ControllerResponse = (
    BrokerRegistrationResponse | BrokerHeartbeatResponse | CreateTopicsResponse | AlterPartitionResponse
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocateProducerIdsRequest:
    """A broker asks for a block of producer ids (Kafka's AllocateProducerIds, KIP-730)."""

    correlation_id: int
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocateProducerIdsResponse:
    correlation_id: int
    error_code: ErrorCode
    producer_id_start: int
    producer_id_len: int


# -- leadership and placement (Kafka's ElectLeaders, AlterPartitionReassignments,
# ListPartitionReassignments): clients send them to the active controller. ---------------------

PartitionResult = tuple[str, int, ErrorCode, str | None]
"""(topic, partition, error, message): one partition's outcome."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersRequest:
    correlation_id: int
    election_type: int
    """0: preferred replica, 1: unclean (Kafka's ``ElectionType``)."""
    partitions: tuple[tuple[str, int], ...] | None
    """None: every partition (results then leave out ELECTION_NOT_NEEDED, as Kafka does)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersResponse:
    correlation_id: int
    error_code: ErrorCode
    results: tuple[PartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionReassignmentsRequest:
    correlation_id: int
    reassignments: tuple[tuple[str, int, tuple[int, ...] | None], ...]
    """(topic, partition, target replicas); None cancels the partition's reassignment."""
    allow_replication_factor_change: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionReassignmentsResponse:
    correlation_id: int
    error_code: ErrorCode
    results: tuple[PartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListPartitionReassignmentsRequest:
    correlation_id: int
    partitions: tuple[tuple[str, int], ...] | None
    """None: every reassignment in progress."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OngoingReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListPartitionReassignmentsResponse:
    correlation_id: int
    error_code: ErrorCode
    ongoing: tuple[OngoingReassignment, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRequest:
    """Remove a broker's registration (Kafka's UnregisterBroker, API 64, ``kafka-cluster
    remove-broker``): what an operator sends once the broker is stopped and holds no replicas."""

    correlation_id: int
    broker_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerResponse:
    correlation_id: int
    error_code: ErrorCode
    error_message: str | None = None


AdminRequest = (
    ElectLeadersRequest
    | AlterPartitionReassignmentsRequest
    | ListPartitionReassignmentsRequest
    | UnregisterBrokerRequest
)
AdminResponse = (
    ElectLeadersResponse
    | AlterPartitionReassignmentsResponse
    | ListPartitionReassignmentsResponse
    | UnregisterBrokerResponse
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DirectoryAssignment:
    topic_id: str
    partition: int
    directory_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssignReplicasToDirsRequest:
    """A broker tells the controller which log directory holds each of its replicas (KIP-858's
    AssignReplicasToDirs)."""

    correlation_id: int
    broker_id: int
    broker_epoch: int
    assignments: tuple[DirectoryAssignment, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AssignReplicasToDirsResponse:
    correlation_id: int
    error_code: ErrorCode
    results: tuple[tuple[DirectoryAssignment, ErrorCode], ...] = ()
