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

from collections.abc import Set

from reference_impl.core.metadata.image import NO_LEADER, PartitionInfo, TopicInfo
from reference_impl.core.metadata.records import PartitionChangeRecord

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


def unclean_allowed(image: ControllerImage, topic: TopicInfo, default: bool) -> bool:
    value = topic.configs.get(UNCLEAN_CONFIG, image.broker_configs.get(UNCLEAN_CONFIG))
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
    image: ControllerImage, broker_id: int, live: Set[int], unclean_default: bool
) -> list[PartitionChangeRecord]:
    """``broker_id`` was fenced or is shutting down: drop it from every ISR and move its
    leaderships to the next eligible replica (KRaft's ``handleBrokerFenced``)."""
    out: list[PartitionChangeRecord] = []
    others = set(live) - {broker_id}
    for _name, topic in sorted(image.topics.items()):
        for _p, info in sorted(topic.partitions.items()):
            if broker_id not in info.isr and info.leader != broker_id:
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
