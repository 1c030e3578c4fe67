"""A single-node controller: validates admin requests, writes metadata records, replays them.

A one-broker cluster is its own controller, as a KRaft node in combined mode
with one voter is: every change (topic created, partitions added, config
set) becomes records appended and flushed to the ``__cluster_metadata`` log
before it is applied to the image, so a restart replays the same image.
Errors are Kafka's: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION,
INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT,
INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION, and POLICY_VIOLATION for a request
that would add more than :data:`MAX_PARTITIONS_PER_REQUEST` partitions.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reference_impl import defects
from reference_impl.log.api import Chunk, PartitionLog
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.names import topic_name_problem
from reference_impl.protocol.record_set import build_batch, iter_records
from reference_impl.protocol.records import iter_headers

from ..configs.model import ConfigError
from ..configs.resolution import validate_topic_configs
from .image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from .records import (
    ConfigRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    decode,
    encode,
)

if TYPE_CHECKING:
    from reference_impl.core.raft.controller.messages import AdminRequest, AdminResponse

METADATA_TOPIC = "__cluster_metadata"
PRODUCER_ID_BLOCK = 1000
MAX_PARTITIONS_PER_REQUEST = 10_000
"""Kafka's controller refuses a request that would create more partitions than this
(``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``, and ``QuorumController.MAX_RECORDS_PER_USER_OP``
bounds the records of any one operation): one CreatePartitions to 100,000 once left a broker
without file descriptors and a data directory it could not start on."""
EXCESSIVE_PARTITIONS_MESSAGE = "Excessively large number of partitions per request."


def excessive_partitions(total: int) -> KafkaError | None:
    """POLICY_VIOLATION when one request asks for more than :data:`MAX_PARTITIONS_PER_REQUEST` partitions.

    Kafka's ``ReplicationControlManager.validateTotalNumberOfPartitions``
    throws ``PolicyViolationException`` with this message before anything
    else is checked, and every topic of the request carries it.
    """
    if total > MAX_PARTITIONS_PER_REQUEST and not defects.enabled(defects.UNBOUNDED_PARTITIONS):
        return KafkaError(ErrorCode.policy_violation, EXCESSIVE_PARTITIONS_MESSAGE)
    return None


def check_partitions_per_request(total: int) -> None:
    """Raise :func:`excessive_partitions`' error, if any."""
    refusal = excessive_partitions(total)
    if refusal is not None:
        raise refusal


def requested_partitions(num_partitions: int, assignments: int, default_partitions: int) -> int:
    """The partitions one CreateTopics entry asks for, counted as Kafka counts them for the bound:
    the assignments when there are any, else the count (-1: the default; other non-positive: none)."""
    if assignments:
        return assignments
    if num_partitions == -1:
        return default_partitions
    return max(num_partitions, 0)


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: INVALID_TOPIC_EXCEPTION for a name it refuses (full match)."""
    problem = topic_name_problem(name)
    if problem is not None:
        raise KafkaError(ErrorCode.invalid_topic_exception, problem)


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


@dataclass(frozen=True, slots=True)
class CreatedTopic:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int
    configs: dict[str, str]


def assign_replicas(
    num_partitions: int,
    replication_factor: int,
    brokers: Sequence[int],
    first_partition: int,
    rng: random.Random,
) -> list[tuple[int, ...]]:
    """Kafka's rack-unaware placement: a random start broker, replicas shifted around the ring."""
    ordered = sorted(brokers)
    count = len(ordered)
    start = rng.randrange(count)
    shift = rng.randrange(count)
    out = []
    for i in range(num_partitions):
        p = first_partition + i
        if p > 0 and p % count == 0:
            shift += 1
        first = (p + start) % count
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            replicas.append(
                ordered[(first + 1 + (shift + j) % (count - 1)) % count] if count > 1 else ordered[first]
            )
        out.append(tuple(replicas))
    return out


class LocalController:
    def __init__(
        self,
        image: MetadataImage,
        log: PartitionLog,
        node_id: int,
        rng: random.Random,
        read_chunk: Callable[[Chunk], bytes],
    ) -> None:
        self.image = image
        self.read_chunk = read_chunk
        self.log = log
        self.node_id = node_id
        self.rng = rng
        self._producer_id_next = 0
        self._producer_id_limit = 0

    # -- persistence ---------------------------------------------------------------------------

    def load(self) -> int:
        """Replay the metadata log into the image; returns how many records were applied."""
        count = 0
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            result = self.log.read(offset, 1 << 20)
            data = b"".join(self.read_chunk(c) for c in result.chunks)
            if not data:
                break
            for header in iter_headers(data):
                for record in iter_records(data, header):
                    if record.value is not None:
                        self.image.apply(decode(record.value), record.offset)
                        count += 1
                offset = header.next_offset
        return count

    def commit(self, records: Sequence[MetadataRecord], now_ms: int) -> None:
        """Append ``records`` as one batch, flush, then apply them (all or nothing)."""
        if not records:
            return
        batch = bytearray(build_batch([(None, encode(r)) for r in records], base_timestamp=now_ms))
        info = self.log.append_as_leader(batch, 0, now_ms)
        self.log.flush()
        for i, record in enumerate(records):
            self.image.apply(record, info.first_offset + i)

    # -- brokers and producer ids --------------------------------------------------------------

    def register_broker(self, node_id: int, host: str, port: int, rack: str | None, now_ms: int) -> None:
        current = self.image.brokers.get(node_id)
        if current is None or (current.host, current.port, current.rack) != (host, port, rack):
            self.commit([RegisterBrokerRecord(broker_id=node_id, host=host, port=port, rack=rack)], now_ms)

    def allocate_producer_id(self, now_ms: int) -> int:
        """Producer ids come in blocks recorded in the metadata log, so none is reused after a restart."""
        if self._producer_id_next >= self._producer_id_limit:
            start = self.image.next_producer_id
            self.commit(
                [ProducerIdsRecord(broker_id=self.node_id, next_producer_id=start + PRODUCER_ID_BLOCK)],
                now_ms,
            )
            self._producer_id_next, self._producer_id_limit = start, start + PRODUCER_ID_BLOCK
        pid = self._producer_id_next
        self._producer_id_next += 1
        return pid

    # -- topics --------------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: Mapping[int, Sequence[int]] | None,
        configs: Mapping[str, str | None],
        *,
        default_partitions: int,
        default_replication: int,
        validate_only: bool,
        now_ms: int,
    ) -> CreatedTopic:
        validate_topic_name(name)
        if name == METADATA_TOPIC:  # Kafka's ControllerApis.createTopics drops it from the request
            raise KafkaError(ErrorCode.topic_authorization_failed, "Authorization failed.")
        if name in self.image.topics:
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        for existing in self.image.topics:
            if _collision_key(existing) == _collision_key(name):
                raise KafkaError(
                    ErrorCode.invalid_topic_exception,
                    f"Topic '{name}' collides with existing topic: {existing}",
                )
        try:
            overrides = validate_topic_configs(configs)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.invalid_config, str(exc)) from None
        brokers = sorted(b.node_id for b in self.image.brokers.values() if not b.fenced)
        if assignments:
            check_partitions_per_request(len(assignments))
            if num_partitions != -1 or replication_factor != -1:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    "Both numPartitions or replicationFactor and replicasAssignments were set",
                )
            if sorted(assignments) != list(range(len(assignments))):
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment, "partitions in the assignment must be 0..n-1"
                )
            plan = [tuple(assignments[p]) for p in range(len(assignments))]
            self._check_assignment(plan, brokers)
            num_partitions, replication_factor = len(plan), len(plan[0])
        else:
            num_partitions = default_partitions if num_partitions == -1 else num_partitions
            replication_factor = default_replication if replication_factor == -1 else replication_factor
            if num_partitions <= 0:
                raise KafkaError(ErrorCode.invalid_partitions, "Number of partitions must be larger than 0.")
            check_partitions_per_request(num_partitions)
            if replication_factor <= 0:
                raise KafkaError(
                    ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0."
                )
            if replication_factor > len(brokers):
                raise KafkaError(
                    ErrorCode.invalid_replication_factor,
                    f"Unable to replicate the partition {replication_factor} time(s): "
                    f"The target replication factor of {replication_factor} cannot be reached "
                    f"because only {len(brokers)} broker(s) are registered.",
                )
            plan = assign_replicas(num_partitions, replication_factor, brokers, 0, self.rng)
        topic_id = uuid.UUID(int=self.rng.getrandbits(128), version=4)
        created = CreatedTopic(name, topic_id, num_partitions, replication_factor, overrides)
        if validate_only:
            return created
        records: list[MetadataRecord] = [TopicRecord(name=name, topic_id=topic_id)]
        records += [
            ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=k, value=v)
            for k, v in sorted(overrides.items())
        ]
        records += [
            PartitionRecord(
                topic_id=topic_id, partition=p, replicas=replicas, isr=replicas, leader=replicas[0]
            )
            for p, replicas in enumerate(plan)
        ]
        self.commit(records, now_ms)
        return created

    def _check_assignment(self, plan: Sequence[tuple[int, ...]], brokers: Sequence[int]) -> None:
        if not plan or not plan[0]:
            raise KafkaError(ErrorCode.invalid_replica_assignment, "empty replica assignment")
        for replicas in plan:
            if len(replicas) != len(plan[0]):
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    "All partitions should have the same number of replicas",
                )
            if len(set(replicas)) != len(replicas):
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"Duplicate brokers not allowed in replica assignment: {list(replicas)}",
                )
            for b in replicas:
                if b not in brokers:
                    raise KafkaError(
                        ErrorCode.invalid_replica_assignment,
                        f"Broker {b} in the replica assignment is not registered",
                    )

    def delete_topic(self, name: str, now_ms: int) -> uuid.UUID:
        topic = self.image.topics.get(name)
        if topic is None:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition."
            )
        self.commit([RemoveTopicRecord(topic_id=topic.topic_id)], now_ms)
        return topic.topic_id

    def create_partitions(
        self,
        name: str,
        count: int,
        assignments: Sequence[Sequence[int]] | None,
        *,
        validate_only: bool,
        now_ms: int,
    ) -> None:
        topic = self.image.topics.get(name)
        if topic is None:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition."
            )
        current = len(topic.partitions)
        if count < current:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"Topic currently has {current} partitions, which is higher than the requested {count}.",
            )
        if count == current:
            raise KafkaError(ErrorCode.invalid_partitions, f"Topic already has {current} partitions.")
        check_partitions_per_request(count - current)
        rf = len(topic.partitions[0].replicas)
        brokers = sorted(b.node_id for b in self.image.brokers.values() if not b.fenced)
        if assignments is not None:
            if len(assignments) != count - current:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"Attempted to add {count - current} additional partition(s), but only "
                    f"{len(assignments)} assignment(s) were specified.",
                )
            plan = [tuple(a) for a in assignments]
            if any(len(r) != rf for r in plan):
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"The manual partition assignment must have {rf} replicas per partition",
                )
            self._check_assignment(plan, brokers)
        else:
            if rf > len(brokers):
                raise KafkaError(
                    ErrorCode.invalid_replication_factor,
                    f"only {len(brokers)} broker(s) are registered for replication factor {rf}",
                )
            plan = assign_replicas(count - current, rf, brokers, current, self.rng)
        if validate_only:
            return
        self.commit(
            [
                PartitionRecord(
                    topic_id=topic.topic_id, partition=current + i, replicas=r, isr=r, leader=r[0]
                )
                for i, r in enumerate(plan)
            ],
            now_ms,
        )

    # -- ISR changes (AlterPartition) ----------------------------------------------------------

    def alter_partition(
        self,
        topic_id: uuid.UUID,
        partition: int,
        leader_id: int,
        leader_epoch: int,
        partition_epoch: int,
        new_isr: Sequence[int],
        now_ms: int,
    ) -> None:
        """Accept an ISR change from the partition's current leader at the current partition epoch.

        Kafka's AlterPartition checks: the leader and its epoch are current
        (FENCED_LEADER_EPOCH), the partition epoch matches (INVALID_UPDATE_VERSION),
        every ISR member is a replica (INVALID_REQUEST) and the leader stays in it.
        """
        topic = self.image.topic_by_id(topic_id)
        if topic is None or partition not in topic.partitions:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, "no such partition")
        info = topic.partitions[partition]
        if leader_id != info.leader or leader_epoch != info.leader_epoch:
            raise KafkaError(
                ErrorCode.fenced_leader_epoch,
                f"leader {leader_id} epoch {leader_epoch} is not the current {info.leader}/"
                f"{info.leader_epoch}",
            )
        if partition_epoch != info.partition_epoch:
            raise KafkaError(
                ErrorCode.invalid_update_version,
                f"partition epoch {partition_epoch} is not the current {info.partition_epoch}",
            )
        isr = tuple(sorted(set(new_isr)))
        if leader_id not in isr or any(r not in info.replicas for r in isr):
            raise KafkaError(
                ErrorCode.invalid_request, f"ISR {list(isr)} must hold the leader and only replicas"
            )
        self.commit([PartitionChangeRecord(topic_id=topic_id, partition=partition, isr=isr)], now_ms)
        if info.reassigning:  # an added replica may have completed the reassignment (KIP-455)
            from reference_impl.core.raft.controller import leadership

            self.commit(leadership.reassignment_progress(self.image, self.live_brokers()), now_ms)

    # -- elections and reassignments -----------------------------------------------------------

    def live_brokers(self) -> set[int]:
        """Brokers that may lead or join an ISR."""
        return {b for b, info in self.image.brokers.items() if not info.fenced}

    def admin(self, body: AdminRequest, now_ms: int) -> AdminResponse:
        """ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments, decided and committed."""
        from reference_impl.core.raft.controller import leadership

        records, answer = leadership.decide(self.image, body, self.live_brokers())
        self.commit(records, now_ms)
        self.commit(leadership.reassignment_progress(self.image, self.live_brokers()), now_ms)
        return answer

    # -- configs -------------------------------------------------------------------------------

    def set_configs(
        self,
        resource_type: int,
        resource_name: str,
        changes: Mapping[str, str | None],
        *,
        validate_only: bool,
        now_ms: int,
    ) -> None:
        """Apply config changes (None deletes an override); resource 2 = topic, 4 = broker."""
        if resource_type == TOPIC_RESOURCE and resource_name not in self.image.topics:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {resource_name} does not exist")
        if resource_type not in (TOPIC_RESOURCE, BROKER_RESOURCE):
            raise KafkaError(ErrorCode.invalid_request, f"unsupported resource type {resource_type}")
        if resource_type == TOPIC_RESOURCE:
            try:
                validate_topic_configs({k: v for k, v in changes.items() if v is not None})
            except ConfigError as exc:
                raise KafkaError(ErrorCode.invalid_config, str(exc)) from None
        if validate_only:
            return
        self.commit(
            [
                ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=k, value=v)
                for k, v in changes.items()
            ],
            now_ms,
        )
