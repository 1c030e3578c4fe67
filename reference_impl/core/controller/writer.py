"""The controller's decisions, written once: admin requests checked and turned into metadata records.

The quorum controller (:mod:`.quorum`) decides through :class:`RecordWriter`, which lacks only
where the records go (``commit``: to the Raft quorum; a single broker's is a one-voter quorum).
Errors are Kafka's:
TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR,
INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION, and POLICY_VIOLATION for a
request that would add more than :data:`MAX_PARTITIONS_PER_REQUEST` partitions (Kafka's
``ReplicationControlManager`` and ``ConfigurationControlManager``,
metadata/src/main/java/org/apache/kafka/controller/).
"""

from __future__ import annotations

import abc
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reference_impl import defects
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.names import topic_name_problem

from ..configs.model import ConfigError
from ..configs.resolution import validate_topic_configs
from ..metadata import feature_updates, features
from ..metadata.image import (
    BROKER_RESOURCE,
    CLIENT_METRICS_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    MetadataImage,
)
from ..metadata.records import (
    METADATA_TOPIC,
    AccessControlEntryRecord,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from ..security.acls import MAX_ACLS, Acl, AclFilter
from . import client_quotas, elections, leadership, membership, scram
from .messages import AdminRequest, AdminResponse, UnregisterBrokerRequest

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
class NewTopic:
    """A topic to create, as a CreateTopics entry asks (or the broker itself, for auto-creation and
    its internal topics): -1 partitions or replication factor means the broker's default."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str | None] = field(default_factory=dict)
    default_partitions: int = 1
    """``num.partitions``."""
    default_replication: int = 1
    """``default.replication.factor``."""


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


class RecordWriter(abc.ABC):
    """Checks admin requests against ``image`` and commits the records that carry them out."""

    def __init__(self, image: MetadataImage, node_id: int, rng: random.Random) -> None:
        self.image = image
        self.node_id = node_id
        self.rng = rng

    @abc.abstractmethod
    def commit(self, records: Sequence[MetadataRecord], now_ms: int) -> None:
        """Write ``records`` where this controller keeps them and apply them to ``image``."""

    # -- topics --------------------------------------------------------------------------------

    def create_topic(self, topic: NewTopic, *, validate_only: bool, now_ms: int) -> CreatedTopic:
        name, assignments = topic.name, topic.assignments
        num_partitions, replication_factor = topic.num_partitions, topic.replication_factor
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
            overrides = validate_topic_configs(topic.configs)
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
            num_partitions = topic.default_partitions if num_partitions == -1 else num_partitions
            if replication_factor == -1:
                replication_factor = topic.default_replication
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
        """Accept an ISR change from the partition's current leader at the current partition epoch
        (the checks of :func:`.elections.accepted_isr`)."""
        topic = self.image.topic_by_id(topic_id)
        if topic is None or partition not in topic.partitions:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, "no such partition")
        info = topic.partitions[partition]
        isr = elections.accepted_isr(info, leader_id, leader_epoch, partition_epoch, new_isr)
        self.commit([PartitionChangeRecord(topic_id=topic_id, partition=partition, isr=isr)], now_ms)
        if info.reassigning:  # an added replica may have completed the reassignment (KIP-455)
            self.commit(leadership.reassignment_progress(self.image, self.live_brokers()), now_ms)

    # -- elections and reassignments -----------------------------------------------------------

    def live_brokers(self) -> set[int]:
        """Brokers that may lead or join an ISR."""
        return {b for b, info in self.image.brokers.items() if not info.fenced}

    def admin(self, body: AdminRequest, now_ms: int) -> AdminResponse:
        """ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments, UnregisterBroker,
        decided and committed."""
        if isinstance(body, UnregisterBrokerRequest):
            return self.unregister_broker(body, now_ms)
        records, answer = leadership.decide(self.image, body, self.live_brokers())
        self.commit(records, now_ms)
        self.commit(leadership.reassignment_progress(self.image, self.live_brokers()), now_ms)
        return answer

    def unregister_broker(self, body: UnregisterBrokerRequest, now_ms: int) -> AdminResponse:
        """UnregisterBroker on a one-node controller (:mod:`.membership`). Its own broker, which is
        running, registers again at once, as a cluster broker does when its next heartbeat is
        refused BROKER_ID_NOT_REGISTERED; its partitions keep their leader meanwhile."""
        current = self.image.brokers.get(body.broker_id)
        live = self.live_brokers() - {body.broker_id}
        records, answer = membership.unregister_broker(self.image, body, live, -1, False)
        if current is not None and body.broker_id == self.node_id:
            again = RegisterBrokerRecord(
                broker_id=current.node_id, host=current.host, port=current.port, rack=current.rack
            )
            records = [r for r in records if not isinstance(r, PartitionChangeRecord)]
            records.append(again)
        self.commit(records, now_ms)
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
        """Apply config changes (None deletes an override); resource 2 = topic, 4 = broker, 16 =
        client-metrics subscription (KIP-714), 32 = group (GroupConfig; the values of these two
        checked by the handlers' check_changes / check_group_changes)."""
        if resource_type == TOPIC_RESOURCE and resource_name not in self.image.topics:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {resource_name} does not exist")
        if resource_type not in (TOPIC_RESOURCE, BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE):
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

    # -- ACLs (issue 18) -----------------------------------------------------------------------

    def create_acls(self, acls: Sequence[Acl], now_ms: int) -> list[KafkaError | None]:
        """Kafka's ``AclControlManager.createAcls``: each ACL checked (INVALID_REQUEST), an identical
        one already held is a success that writes nothing; the rest committed together."""
        results: list[KafkaError | None] = []
        records: list[MetadataRecord] = []
        pending: set[Acl] = set()
        for acl in acls:
            problem = acl.problem()
            if problem is None and len(self.image.acls) + len(pending) >= MAX_ACLS:
                problem = f"the reference broker holds at most {MAX_ACLS} ACLs"
            if problem is not None:
                results.append(KafkaError(ErrorCode.invalid_request, problem))
                continue
            results.append(None)
            if acl in pending or self.image.acls.find(acl) is not None:
                continue
            pending.add(acl)
            records.append(
                AccessControlEntryRecord.of(uuid.UUID(int=self.rng.getrandbits(128), version=4), acl)
            )
        self.commit(records, now_ms)
        return results

    def delete_acls(self, filters: Sequence[AclFilter], now_ms: int) -> list[KafkaError | list[Acl]]:
        """Kafka's ``AclControlManager.deleteAcls``: per filter, INVALID_REQUEST or the ACLs it
        matched (each removed once, whichever filters match it)."""
        results: list[KafkaError | list[Acl]] = []
        records: list[MetadataRecord] = []
        removed: set[uuid.UUID] = set()
        for flt in filters:
            problem = flt.problem()
            if problem is not None:
                results.append(KafkaError(ErrorCode.invalid_request, problem))
                continue
            matched = []
            for acl_id, acl in self.image.acls:
                if flt.matches(acl):
                    matched.append(acl)
                    if acl_id not in removed:
                        removed.add(acl_id)
                        records.append(RemoveAccessControlEntryRecord(id=acl_id))
            results.append(matched)
        self.commit(records, now_ms)
        return results

    # -- SCRAM credentials ---------------------------------------------------------------------

    def alter_scram(
        self,
        deletions: Sequence[scram.Deletion],
        upsertions: Sequence[scram.Upsertion],
        now_ms: int,
    ) -> list[scram.Result]:
        """AlterUserScramCredentials (:mod:`.scram`): every accepted change committed at once."""
        records, results = scram.decide(self.image, deletions, upsertions)
        self.commit(records, now_ms)
        return results

    # -- features (issue 20) -------------------------------------------------------------------

    def update_features(
        self, updates: Sequence[feature_updates.Update], *, validate_only: bool, now_ms: int
    ) -> tuple[int, str | None]:
        """UpdateFeatures (:func:`..metadata.feature_updates.decide`): (error code, message) of the
        whole request; the FeatureLevelRecords committed together unless validate_only. On a log
        written before feature records existed, the bootstrap levels of the features not updated
        are written first, so the finalized set stays whole once the image reads it."""
        levels, _ = features.effective_levels(self.image.finalized_features, self.image.features_epoch)
        records, code, message = feature_updates.decide(levels, updates)
        if code != feature_updates.NONE or validate_only:
            return code, message
        written: list[MetadataRecord] = []
        if self.image.features_epoch < 0:
            updated = {r.name for r in records}
            written += [
                FeatureLevelRecord(name=n, feature_level=lv) for n, lv in levels.items() if n not in updated
            ]
        self.commit([*written, *records], now_ms)
        return code, message

    # -- client quotas (issue 20) --------------------------------------------------------------

    def alter_client_quotas(
        self, alterations: Sequence[client_quotas.Alteration], *, validate_only: bool, now_ms: int
    ) -> list[client_quotas.Result]:
        """AlterClientQuotas (:mod:`.client_quotas`): the accepted changes committed at once, or
        none with ``validate_only``."""
        records, results = client_quotas.decide(self.image, alterations)
        if not validate_only:
            self.commit(records, now_ms)
        return results
