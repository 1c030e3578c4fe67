"""Preferred and unclean leader elections on request, automatic leader rebalancing, and partition
reassignment (KIP-455): pure functions of the metadata image, returning records and answers.

Elections (ElectLeaders), per partition, with Kafka's errors:

* PREFERRED moves the leadership to the first replica of the assignment when it is live and in
  the ISR (ELECTION_NOT_NEEDED if it leads already, PREFERRED_LEADER_NOT_AVAILABLE otherwise);
* UNCLEAN gives a leaderless partition a leader: the first live ISR member, else the first live
  replica outside the ISR, which becomes the whole ISR (ELECTION_NOT_NEEDED while it has a live
  leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live).

Asked for every partition (no list), the answer leaves out those that needed no election.
:func:`preferred_elections` is the same preferred election for every imbalanced partition: what the
controller does every ``leader.imbalance.check.interval.seconds`` when
``auto.leader.rebalance.enable`` is on (KRaft's leader balancing, without a per-broker ratio).

Reassignment is add-then-remove, recorded in the partition as Kafka records it: the target
replicas join ``replicas`` at once (target first, then those leaving) with ``adding_replicas`` and
``removing_replicas`` set; followers that were added fetch and join the ISR as any follower does;
once every adding replica is in the ISR, :func:`reassignment_progress` completes it in one change:
``replicas`` becomes the target, the leaving replicas leave the ISR, a leader that is leaving hands
over to the first target replica in the ISR, and both lists are cleared. A reassignment that adds
nothing completes at once; cancelling one (no target) reverts to the original replicas.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from kio.schema.errors import ErrorCode

from reference_impl.core.metadata.image import NO_LEADER, MetadataImage, PartitionInfo, TopicInfo
from reference_impl.core.metadata.records import PartitionChangeRecord

from . import messages as cm
from .elections import elect_leader

PREFERRED, UNCLEAN = 0, 1
UNKNOWN = "This server does not host this topic-partition."


def decide(
    image: MetadataImage, body: cm.AdminRequest, live: Set[int]
) -> tuple[list[PartitionChangeRecord], cm.AdminResponse]:
    """The records an admin request writes and its answer (sent once they are committed)."""
    match body:
        case cm.ElectLeadersRequest():
            return elect_leaders(image, body, live)
        case cm.AlterPartitionReassignmentsRequest():
            return alter_reassignments(image, body, live)
        case cm.ListPartitionReassignmentsRequest():
            return [], list_reassignments(image, body)
    raise TypeError(f"not an admin request: {type(body).__name__}")


def _asked(image: MetadataImage, partitions: Sequence[tuple[str, int]] | None) -> list[tuple[str, int]]:
    """The partitions a request names, once each in order; None names every partition."""
    if partitions is None:
        return [(name, p) for name, t in sorted(image.topics.items()) for p in sorted(t.partitions)]
    return list(dict.fromkeys(partitions))


def _lookup(image: MetadataImage, topic: str, partition: int) -> tuple[TopicInfo, PartitionInfo] | None:
    info = image.topics.get(topic)
    if info is None or partition not in info.partitions:
        return None
    return info, info.partitions[partition]


def _record(
    topic: TopicInfo,
    info: PartitionInfo,
    *,
    leader: int | None = None,
    isr: tuple[int, ...] | None = None,
    replicas: tuple[int, ...] | None = None,
    adding: tuple[int, ...] | None = None,
    removing: tuple[int, ...] | None = None,
) -> PartitionChangeRecord | None:
    """A change record carrying only what differs from ``info`` (None when nothing does)."""
    change = PartitionChangeRecord(
        topic_id=topic.topic_id,
        partition=info.partition,
        leader=leader if leader is not None and leader != info.leader else None,
        isr=isr if isr is not None and isr != info.isr else None,
        replicas=replicas if replicas is not None and replicas != info.replicas else None,
        adding_replicas=adding if adding is not None and adding != info.adding_replicas else None,
        removing_replicas=removing if removing is not None and removing != info.removing_replicas else None,
    )
    fields = (change.leader, change.isr, change.replicas, change.adding_replicas, change.removing_replicas)
    return None if all(f is None for f in fields) else change


# -- elections -----------------------------------------------------------------------------------


def _elect_one(
    topic: TopicInfo, info: PartitionInfo, election_type: int, live: Set[int]
) -> tuple[PartitionChangeRecord | None, ErrorCode, str | None]:
    name = f"{topic.name}-{info.partition}"
    if election_type == PREFERRED:
        preferred = info.replicas[0] if info.replicas else NO_LEADER
        if info.leader == preferred:
            return None, ErrorCode.election_not_needed, "Leader election not needed for topic partition."
        if preferred not in live or preferred not in info.isr:
            return (
                None,
                ErrorCode.preferred_leader_not_available,
                f"Failed to elect leader for partition {name} under strategy "
                f"PreferredReplicaPartitionLeaderElectionStrategy: preferred replica {preferred} is "
                f"{'not live' if preferred not in live else 'not in the ISR'}",
            )
        return _record(topic, info, leader=preferred), ErrorCode.none, None
    if election_type == UNCLEAN:
        if info.leader != NO_LEADER and info.leader in live:
            return None, ErrorCode.election_not_needed, "Leader election not needed for topic partition."
        leader, isr = elect_leader(info.replicas, info.isr, live, True)
        if leader == NO_LEADER:
            return (
                None,
                ErrorCode.eligible_leaders_not_available,
                f"Failed to elect leader for partition {name} under strategy "
                "UncleanPartitionLeaderElectionStrategy: no replica is live",
            )
        return _record(topic, info, leader=leader, isr=isr), ErrorCode.none, None
    return None, ErrorCode.invalid_request, f"unknown election type {election_type}"


def elect_leaders(
    image: MetadataImage, body: cm.ElectLeadersRequest, live: Set[int]
) -> tuple[list[PartitionChangeRecord], cm.ElectLeadersResponse]:
    records: list[PartitionChangeRecord] = []
    results: list[cm.PartitionResult] = []
    every = body.partitions is None
    for topic_name, index in _asked(image, body.partitions):
        found = _lookup(image, topic_name, index)
        if found is None:
            results.append((topic_name, index, ErrorCode.unknown_topic_or_partition, UNKNOWN))
            continue
        record, error, message = _elect_one(*found, body.election_type, live)
        if record is not None:
            records.append(record)
        if not (every and error == ErrorCode.election_not_needed):
            results.append((topic_name, index, error, message))
    return records, cm.ElectLeadersResponse(
        correlation_id=body.correlation_id, error_code=ErrorCode.none, results=tuple(results)
    )


def preferred_elections(image: MetadataImage, live: Set[int]) -> list[PartitionChangeRecord]:
    """Automatic leader rebalancing: every partition whose preferred replica could lead and does not."""
    out: list[PartitionChangeRecord] = []
    for _name, topic in sorted(image.topics.items()):
        for _p, info in sorted(topic.partitions.items()):
            record, error, _message = _elect_one(topic, info, PREFERRED, live)
            if record is not None and error == ErrorCode.none:
                out.append(record)
    return out


# -- reassignment --------------------------------------------------------------------------------


def _original(info: PartitionInfo) -> tuple[int, ...]:
    """The replicas before the reassignment in progress (all of them when there is none)."""
    return tuple(r for r in info.replicas if r not in info.adding_replicas)


def _completion(
    topic: TopicInfo,
    info: PartitionInfo,
    target: tuple[int, ...],
    isr: tuple[int, ...],
    leader: int,
    live: Set[int],
) -> PartitionChangeRecord | None:
    """The change that puts ``info`` on ``target`` with no reassignment left; None if it cannot
    happen yet (no ISR member among the target, or no target replica able to lead)."""
    new_isr = tuple(r for r in isr if r in target)
    if not new_isr:
        return None
    if leader not in new_isr:
        leader, _ = elect_leader(target, new_isr, live, False)
        if leader == NO_LEADER:
            return None
    return _record(topic, info, leader=leader, isr=new_isr, replicas=target, adding=(), removing=())


def _reassign_one(
    image: MetadataImage,
    topic: TopicInfo,
    info: PartitionInfo,
    target: tuple[int, ...] | None,
    allow_rf_change: bool,
    live: Set[int],
) -> tuple[PartitionChangeRecord | None, ErrorCode, str | None]:
    original = _original(info)
    if target is None:
        if not info.reassigning:
            return None, ErrorCode.no_reassignment_in_progress, "No ongoing reassignment for this partition."
        revert = _completion(topic, info, original, info.isr, info.leader, live)
        if revert is None:  # nobody of the original replicas can lead: drop only the additions later
            return None, ErrorCode.invalid_replica_assignment, "The original replicas cannot lead now."
        return revert, ErrorCode.none, None
    if not target:
        return (
            None,
            ErrorCode.invalid_replica_assignment,
            "The manual partition assignment includes an empty replica list.",
        )
    if len(set(target)) != len(target):
        return (
            None,
            ErrorCode.invalid_replica_assignment,
            f"The manual partition assignment includes duplicate replicas: {list(target)}",
        )
    unknown = [b for b in target if b not in image.brokers]
    if unknown:
        return (
            None,
            ErrorCode.invalid_replica_assignment,
            f"The manual partition assignment includes broker {unknown[0]}, "
            "but no such broker is registered.",
        )
    if not allow_rf_change and len(target) != len(original):
        return (
            None,
            ErrorCode.invalid_replication_factor,
            f"The replication factor is changed from {len(original)} to {len(target)}",
        )
    if target == original and not info.reassigning:
        return None, ErrorCode.none, None
    adding = tuple(r for r in target if r not in original)
    removing = tuple(r for r in original if r not in target)
    if not adding:  # nothing to wait for: straight to the target (a shrink or a reorder)
        done = _completion(topic, info, target, info.isr, info.leader, live)
        if done is not None:
            return done, ErrorCode.none, None
    merged = target + removing
    isr = tuple(r for r in info.isr if r in merged) or info.isr
    leader = info.leader
    if leader != NO_LEADER and leader not in merged:  # an addition of a re-targeted reassignment led
        leader, isr = elect_leader(merged, isr, live, False)
    record = _record(topic, info, leader=leader, isr=isr, replicas=merged, adding=adding, removing=removing)
    return record, ErrorCode.none, None


def alter_reassignments(
    image: MetadataImage, body: cm.AlterPartitionReassignmentsRequest, live: Set[int]
) -> tuple[list[PartitionChangeRecord], cm.AlterPartitionReassignmentsResponse]:
    records: list[PartitionChangeRecord] = []
    results: list[cm.PartitionResult] = []
    seen: set[tuple[str, int]] = set()
    for topic_name, index, target in body.reassignments:
        if (topic_name, index) in seen:
            results.append((topic_name, index, ErrorCode.invalid_request, "The partition is listed twice."))
            continue
        seen.add((topic_name, index))
        found = _lookup(image, topic_name, index)
        if found is None:
            results.append((topic_name, index, ErrorCode.unknown_topic_or_partition, UNKNOWN))
            continue
        record, error, message = _reassign_one(
            image, *found, target, body.allow_replication_factor_change, live
        )
        if record is not None:
            records.append(record)
        results.append((topic_name, index, error, message))
    return records, cm.AlterPartitionReassignmentsResponse(
        correlation_id=body.correlation_id, error_code=ErrorCode.none, results=tuple(results)
    )


def list_reassignments(
    image: MetadataImage, body: cm.ListPartitionReassignmentsRequest
) -> cm.ListPartitionReassignmentsResponse:
    """Reassignments in progress; unknown topics and partitions are left out, as Kafka does."""
    ongoing = []
    for topic_name, index in _asked(image, body.partitions):
        found = _lookup(image, topic_name, index)
        if found is not None and found[1].reassigning:
            info = found[1]
            ongoing.append(
                cm.OngoingReassignment(
                    topic=topic_name,
                    partition=index,
                    replicas=info.replicas,
                    adding_replicas=info.adding_replicas,
                    removing_replicas=info.removing_replicas,
                )
            )
    return cm.ListPartitionReassignmentsResponse(
        correlation_id=body.correlation_id, error_code=ErrorCode.none, ongoing=tuple(ongoing)
    )


def reassignment_progress(image: MetadataImage, live: Set[int]) -> list[PartitionChangeRecord]:
    """Complete every reassignment whose adding replicas are all in the ISR."""
    out: list[PartitionChangeRecord] = []
    for _name, topic in sorted(image.topics.items()):
        for _p, info in sorted(topic.partitions.items()):
            if not info.reassigning or any(r not in info.isr for r in info.adding_replicas):
                continue
            record = _completion(topic, info, info.target_replicas, info.isr, info.leader, live)
            if record is not None:
                out.append(record)
    return out


def any_reassigning(image: MetadataImage) -> bool:
    return any(info.reassigning for t in image.topics.values() for info in t.partitions.values())
