"""Partition leader elections and the partition changes a broker's state change causes.

Pure functions of the image, as KRaft's ``PartitionChangeBuilder``:

* a clean election picks the first replica, in assignment order, that is in
  the ISR and live (registered, unfenced, not shutting down);
* an unclean one (``unclean.leader.election.enable``) may pick the first live
  replica outside the ISR, which then becomes the whole ISR;
* with no candidate the partition has no leader (-1) and keeps its ISR: the
  ISR never becomes empty, so the last member's data is not forgotten.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence, Set

from reference_impl.core.metadata.image import NO_LEADER, PartitionInfo, TopicInfo
from reference_impl.core.metadata.records import PartitionChangeRecord
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..mutants import MUTANT_CONFIG, UNCLEAN_ELECTION
from .messages import AssignReplicasToDirsRequest, DirectoryAssignment
from .records import ControllerImage

UNCLEAN_CONFIG = "unclean.leader.election.enable"


def elect_leader(
    replicas: tuple[int, ...], isr: tuple[int, ...], live: Set[int], unclean: bool
) -> tuple[int, tuple[int, ...]]:
    """(leader, ISR) after an election among ``live`` brokers."""
    for replica in replicas:
        if replica in isr and replica in live:
            return replica, isr
    if unclean:
        for replica in replicas:
            if replica in live:
                return replica, (replica,)
    return NO_LEADER, isr


def accepted_isr(
    info: PartitionInfo, leader_id: int, leader_epoch: int, partition_epoch: int, new_isr: Sequence[int]
) -> tuple[int, ...]:
    """The ISR an AlterPartition from ``leader_id`` commits, or KafkaError naming why it is refused.

    Kafka's AlterPartition checks (``ReplicationControlManager.alterPartition``): the leader and
    its epoch are current (FENCED_LEADER_EPOCH), the partition epoch matches
    (INVALID_UPDATE_VERSION), every ISR member is a replica and the leader stays in it
    (INVALID_REQUEST).
    """
    if leader_id != info.leader or leader_epoch != info.leader_epoch:
        raise KafkaError(
            ErrorCode.fenced_leader_epoch,
            f"leader {leader_id} epoch {leader_epoch} is not the current {info.leader}/{info.leader_epoch}",
        )
    if partition_epoch != info.partition_epoch:
        raise KafkaError(
            ErrorCode.invalid_update_version,
            f"partition epoch {partition_epoch} is not the current {info.partition_epoch}",
        )
    isr = tuple(sorted(set(new_isr)))
    if leader_id not in isr or any(r not in info.replicas for r in isr):
        raise KafkaError(ErrorCode.invalid_request, f"ISR {list(isr)} must hold the leader and only replicas")
    return isr


def unclean_allowed(image: ControllerImage, topic: TopicInfo, default: bool) -> bool:
    return unclean_configured(topic.configs, image.broker_configs, default)


def unclean_configured(
    topic_configs: Mapping[str, str], broker_configs: Mapping[str, str], default: bool
) -> bool:
    """Whether a partition of a topic with ``topic_configs`` may be led by a replica outside its
    ISR: the topic's ``unclean.leader.election.enable``, else the brokers', else ``default``.
    The unclean-election bug mode (:mod:`..mutants`) says yes whatever they say."""
    if topic_configs.get(MUTANT_CONFIG) == UNCLEAN_ELECTION:
        return True
    value = topic_configs.get(UNCLEAN_CONFIG, broker_configs.get(UNCLEAN_CONFIG))
    if value is None:
        return default
    return value.strip().lower() == "true"


def _change(
    topic: TopicInfo, info: PartitionInfo, leader: int, isr: tuple[int, ...]
) -> PartitionChangeRecord | None:
    if leader == info.leader and isr == info.isr:
        return None
    return PartitionChangeRecord(
        topic_id=topic.topic_id,
        partition=info.partition,
        leader=leader if leader != info.leader else None,
        isr=isr if isr != info.isr else None,
    )


def changes_removing_broker(
    image: ControllerImage,
    broker_id: int,
    live: Set[int],
    unclean_default: bool,
    only: Callable[[PartitionInfo], bool] | None = None,
) -> list[PartitionChangeRecord]:
    """``broker_id`` was fenced or is shutting down: drop it from every ISR and move its
    leaderships to the next eligible replica (KRaft's ``handleBrokerFenced``). With ``only``, just
    the partitions it selects: a broker's failed log directory (KRaft's ``handleDirectoriesOffline``,
    ``metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java``)."""
    out: list[PartitionChangeRecord] = []
    others = set(live) - {broker_id}
    for _name, topic in sorted(image.topics.items()):
        for _p, info in sorted(topic.partitions.items()):
            if broker_id not in info.isr and info.leader != broker_id:
                continue
            if only is not None and not only(info):
                continue
            isr = tuple(r for r in info.isr if r != broker_id) or info.isr
            leader = info.leader
            if leader in (broker_id, NO_LEADER):
                leader, isr = elect_leader(
                    info.replicas, isr, others, unclean_allowed(image, topic, unclean_default)
                )
            record = _change(topic, info, leader, isr)
            if record is not None:
                out.append(record)
    return out


def changes_electing_leaderless(
    image: ControllerImage, live: Set[int], unclean_default: bool
) -> list[PartitionChangeRecord]:
    """Partitions without a leader get one if an eligible replica is live now (a broker came back)."""
    out: list[PartitionChangeRecord] = []
    for _name, topic in sorted(image.topics.items()):
        for _p, info in sorted(topic.partitions.items()):
            if info.leader != NO_LEADER:
                continue
            leader, isr = elect_leader(
                info.replicas, info.isr, live, unclean_allowed(image, topic, unclean_default)
            )
            record = _change(topic, info, leader, isr)
            if record is not None:
                out.append(record)
    return out


def leaderships(image: ControllerImage, broker_id: int) -> int:
    """How many partitions ``broker_id`` leads (controlled shutdown waits for none)."""
    return sum(1 for t in image.topics.values() for p in t.partitions.values() if p.leader == broker_id)


def directory_assignments(
    image: ControllerImage, request: AssignReplicasToDirsRequest
) -> tuple[list[PartitionChangeRecord], tuple[tuple[DirectoryAssignment, ErrorCode], ...] | ErrorCode]:
    """The records an AssignReplicasToDirs writes and each assignment's error, or the error of the
    whole request: BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH (Kafka's ``handleAssignReplicasToDirs``
    and ``checkBrokerEpoch``; per assignment UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION,
    NOT_LEADER_OR_FOLLOWER when the broker holds no replica)."""
    broker_id = request.broker_id
    if broker_id not in image.broker_epochs:
        return [], ErrorCode.broker_id_not_registered
    if image.broker_epochs[broker_id] != request.broker_epoch:
        return [], ErrorCode.stale_broker_epoch
    records: list[PartitionChangeRecord] = []
    results: list[tuple[DirectoryAssignment, ErrorCode]] = []
    changed: dict[tuple[uuid.UUID, int], list[str]] = {}
    for assignment in request.assignments:
        try:
            topic_id = uuid.UUID(assignment.topic_id)
        except ValueError:
            results.append((assignment, ErrorCode.unknown_topic_id))
            continue
        topic = image.topic_by_id(topic_id)
        if topic is None:
            results.append((assignment, ErrorCode.unknown_topic_id))
            continue
        info = topic.partitions.get(assignment.partition)
        if info is None:
            results.append((assignment, ErrorCode.unknown_topic_or_partition))
            continue
        if broker_id not in info.replicas:
            results.append((assignment, ErrorCode.not_leader_or_follower))
            continue
        key = (topic_id, assignment.partition)
        dirs = changed.get(key) or [info.directory_of(r) for r in info.replicas]
        dirs[info.replicas.index(broker_id)] = assignment.directory_id
        changed[key] = dirs
        results.append((assignment, ErrorCode.none))
    for (topic_id, partition), dirs in changed.items():
        topic = image.topic_by_id(topic_id)
        assert topic is not None
        if tuple(dirs) != topic.partitions[partition].directories:
            records.append(
                PartitionChangeRecord(topic_id=topic_id, partition=partition, directories=tuple(dirs))
            )
    return records, tuple(results)
