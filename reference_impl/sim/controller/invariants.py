"""Claims about the metadata every controller and broker replays, checked after every event.

They read each live node's *committed* image (what it has replayed from the
quorum), so they hold on standby controllers and brokers as much as on the
active controller.
"""

from __future__ import annotations

from typing import Any

from reference_impl.core.controller.records import ControllerImage
from reference_impl.core.metadata.image import NO_LEADER

from ..engine.simulation import Simulation


def _images(sim: Simulation) -> list[tuple[int, ControllerImage]]:
    out = []
    for node_id in sorted(sim.nodes):
        node: Any = sim.nodes[node_id]
        controller = getattr(node, "controller", None)
        image = controller.image if controller is not None else getattr(node, "image", None)
        if isinstance(image, ControllerImage):
            out.append((node_id, image))
    return out


class LeaderIsLiveAndInIsr:
    """Every partition's leader is in its ISR and is a registered, unfenced broker (or there is no
    leader); the ISR is a non-empty subset of the replicas.

    Source: issue 6 ``LeaderInIsr``; KRaft's ``PartitionChangeBuilder`` (a fenced broker leaves
    every ISR and leadership in the same batch that fences it; the ISR never becomes empty).
    """

    name = "LeaderIsLiveAndInIsr"

    def check(self, sim: Simulation) -> str | None:
        for node_id, image in _images(sim):
            for topic in image.topics.values():
                for p, info in topic.partitions.items():
                    where = f"node {node_id} {topic.name}-{p}"
                    if not info.isr or not set(info.isr) <= set(info.replicas):
                        return f"{where}: ISR {info.isr} is not a non-empty subset of {info.replicas}"
                    if info.leader == NO_LEADER:
                        continue
                    if info.leader not in info.isr:
                        return f"{where}: leader {info.leader} is not in ISR {info.isr}"
                    broker = image.brokers.get(info.leader)
                    if broker is None or broker.fenced:
                        return f"{where}: leader {info.leader} is fenced or unregistered"
        return None


class PartitionEpochsNeverDecrease:
    """On every node, a partition's leader epoch and partition epoch never go back.

    Source: KIP-380/KIP-841 epoch fencing (AlterPartition is fenced by the partition epoch,
    fetches by the leader epoch: both only work if they grow).
    """

    name = "PartitionEpochsNeverDecrease"

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int, str, int], tuple[int, int]] = {}

    def check(self, sim: Simulation) -> str | None:
        for node_id, image in _images(sim):
            incarnation = sim.incarnations[node_id]
            for topic in image.topics.values():
                for p, info in topic.partitions.items():
                    key = (node_id, incarnation, topic.name, p)
                    epochs = (info.leader_epoch, info.partition_epoch)
                    before = self.seen.get(key)
                    if before is not None and (epochs[0] < before[0] or epochs[1] < before[1]):
                        return f"node {node_id} {topic.name}-{p}: epochs went from {before} to {epochs}"
                    self.seen[key] = epochs
        return None


def controller_invariants() -> list[Any]:
    return [LeaderIsLiveAndInIsr(), PartitionEpochsNeverDecrease()]


def images_agree(sim: Simulation) -> str | None:
    """End of run: every live node that has replayed the same offset holds the same image."""
    by_offset: dict[int, tuple[int, dict[str, Any]]] = {}
    for node_id, image in _images(sim):
        summary = image.summary()
        seen = by_offset.setdefault(image.offset, (node_id, summary))
        if seen[1] != summary:
            return f"nodes {seen[0]} and {node_id} differ at metadata offset {image.offset}"
    return None
