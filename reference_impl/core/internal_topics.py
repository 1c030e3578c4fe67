"""The coordinators' internal topics: ``__consumer_offsets``, ``__transaction_state`` and
``__share_group_state``.

Both are ordinary compacted topics, created on first use (Kafka creates them
when the first FindCoordinator arrives), with a partition per coordinator
shard; a group or transactional id belongs to the shard
``abs(javaHashCode(key)) % partitions``, computed exactly as Kafka does so a
key maps to the same partition number on every implementation.

Only their coordinators write them: a client's Produce or DeleteRecords on
one is INVALID_TOPIC_EXCEPTION (Kafka's ``ReplicaManager.appendToLocalLog``
and ``deleteRecordsOnLocalLog``, ``Topic.isInternal``), so no client can
plant records a coordinator would load as its own state, or erase them.
Kafka lets clients delete them, add partitions and change their configs
(``ControllerApis``, ``ReplicationControlManager``: no internal-topic check,
only ACLs), and so does the reference; the coordinators create them again
on the next FindCoordinator.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from reference_impl import defects
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.records import iter_headers

from .controller.writer import NewTopic

if TYPE_CHECKING:
    from reference_impl.protocol.record_set import Record

    from .configs.resolution import BrokerConfig
    from .controller.api import AdminController
    from .host import ReplicaHost
    from .metadata.image import MetadataImage
    from .partition import Partition
    from .ports import LogStore

SEGMENT_BYTES = "104857600"


def java_string_hash(value: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, wrapping at 32 bits (signed)."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % partitions`` (``abs`` is ``h & 0x7fffffff``)."""
    return (java_string_hash(key) & 0x7FFFFFFF) % partitions


class TopicsHost(Protocol):
    """What creating an internal topic needs of the broker: its metadata, configs and controller."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def controller(self) -> AdminController: ...

    def sync_partitions(self, now_ms: int) -> None:
        """Open, lead, follow or drop partitions as the metadata image now says."""


@dataclass(frozen=True, slots=True)
class InternalTopic:
    name: str
    partitions_config: str
    replication_config: str
    configs: tuple[tuple[str, str], ...]

    def partitions(self, broker: TopicsHost) -> int:
        topic = broker.image.topics.get(self.name)
        if topic is not None:
            return len(topic.partitions)
        return broker.config.get_int(self.partitions_config)

    def ensure(self, broker: TopicsHost, now_ms: int) -> None:
        """Create the topic if it does not exist, with RF capped at the live brokers."""
        if self.name in broker.image.topics:
            return
        live = sum(1 for b in broker.image.brokers.values() if not b.fenced)
        rf = max(1, min(broker.config.get_int(self.replication_config), live))
        try:
            topic = NewTopic(self.name, self.partitions(broker), rf, configs=dict(self.configs))
            broker.controller.create_topic(topic, validate_only=False, now_ms=now_ms)
        except KafkaError:
            if self.name not in broker.image.topics:
                raise
        broker.sync_partitions(now_ms)

    def led(self, broker: ReplicaHost) -> dict[int, Partition]:
        """The topic's partitions this broker leads, by index: the shards its coordinator loads."""
        return {
            index: part
            for (topic, index), part in broker.partitions.items()
            if topic == self.name and part.is_leader
        }

    def coordinator_partition(
        self, broker: ReplicaHost, index: int, loaded: set[int], missing: ErrorCode, what: str
    ) -> Partition:
        """Partition ``index`` if this broker leads it and its coordinator loaded it, else the error a
        coordinator answers: ``missing`` (no topic yet), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS."""
        if self.name not in broker.image.topics:
            raise KafkaError(missing, f"{self.name} does not exist yet")
        part = broker.partition(self.name, index)
        if part is None or not part.is_leader:
            raise KafkaError(ErrorCode.not_coordinator, f"{what} is coordinated elsewhere")
        if index not in loaded:
            raise KafkaError(ErrorCode.coordinator_load_in_progress, f"loading {self.name}-{index}")
        return part


def stored_records(store: LogStore, part: Partition, read_bytes: int = 1 << 20) -> Iterator[Record]:
    """The data records of a coordinator's partition, from its log start to its end (a load)."""
    offset = part.log.log_start_offset
    while offset < part.log.log_end_offset:
        data = b"".join(store.read_chunk(c) for c in part.log.read(offset, read_bytes).chunks)
        if not data:
            break
        for header in iter_headers(data):
            offset = header.next_offset
            if not header.is_control:
                yield from iter_records(data, header)


CONSUMER_OFFSETS = InternalTopic(
    "__consumer_offsets",
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    (("cleanup.policy", "compact"), ("compression.type", "producer"), ("segment.bytes", SEGMENT_BYTES)),
)
TRANSACTION_STATE = InternalTopic(
    "__transaction_state",
    "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
    (
        ("cleanup.policy", "compact"),
        ("compression.type", "uncompressed"),
        ("segment.bytes", SEGMENT_BYTES),
        ("unclean.leader.election.enable", "false"),
    ),
)

SHARE_GROUP_STATE = InternalTopic(
    "__share_group_state",
    "share.coordinator.state.topic.num.partitions",
    "share.coordinator.state.topic.replication.factor",
    # Kafka's share coordinator prunes the topic itself (deleting records below the oldest snapshot
    # still needed); the reference does not, so its records are kept (group/share_state.py).
    (
        ("cleanup.policy", "delete"),
        ("compression.type", "producer"),
        ("segment.bytes", SEGMENT_BYTES),
        ("retention.ms", "-1"),
    ),
)

INTERNAL_TOPIC_NAMES = frozenset({CONSUMER_OFFSETS.name, TRANSACTION_STATE.name, SHARE_GROUP_STATE.name})
"""Kafka's ``Topic.isInternal``."""


def refuses_client_writes(topic: str) -> bool:
    """Whether a client's Produce or DeleteRecords on ``topic`` is INVALID_TOPIC_EXCEPTION (Kafka gives
    no error message with it); the seeded defect ``internal-topic-writes`` lets them through."""
    return topic in INTERNAL_TOPIC_NAMES and not defects.enabled(defects.INTERNAL_TOPIC_WRITES)


_APPEND_ERRORS = {
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
}


def coordinator_error(code: ErrorCode) -> ErrorCode:
    """A failed write to an internal topic as its coordinator reports it to the client (Kafka's
    ``handleOperationException`` and ``TransactionStateManager`` mappings): the client then
    looks the coordinator up again, or retries."""
    return _APPEND_ERRORS.get(code, code)
