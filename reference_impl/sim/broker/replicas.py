"""What the partition-replication claims read: the replicas of a run, whoever runs them.

The claims of :mod:`.invariants` are about partition replicas (the core's :class:`Partition`
objects on their logs), the controller's decisions about them, and what clients were told. Two
kinds of run hold replicas: the simulated cluster of whole brokers (:class:`SimReplicas`, built
from a :class:`Simulation` after every event) and the property model of
``reference_impl/acceptance/property`` (three bare replicas driven one fetch at a time, its own
controller). Each presents itself as a :class:`ReplicaView`, so every claim is written once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from reference_impl.core.broker import Broker
from reference_impl.core.partition import Partition

from ..engine.simulation import Simulation

PartitionKey = tuple[uuid.UUID, int]
"""(topic id, partition index)."""
Values = Mapping[int, bytes | None]
"""offset -> record value."""


@dataclass(frozen=True, slots=True)
class Replica:
    """One live replica: the node holding it, which start of that node it is, and its state."""

    node_id: int
    incarnation: int
    partition: Partition


@dataclass(frozen=True, slots=True)
class Registration:
    """A partition as a controller decided it (a metadata image's ``PartitionRegistration``)."""

    where: str
    topic: str
    index: int
    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


class ReplicaView(Protocol):
    """A run's replicas as the claims read them, at one instant."""

    def replicas(self) -> Sequence[Replica]:
        """Every replica on a running node (a node cut off by the network included)."""
        ...

    def leaders(self) -> Sequence[Replica]:
        """For each partition, the replica the controller's newest decision makes its leader, if
        it runs and is reachable (not a zombie of an older epoch)."""
        ...

    def registrations(self) -> Sequence[Registration]:
        """Every controller decision the run holds (each live node's image, or the model's one)."""
        ...

    def acknowledged(self) -> Mapping[PartitionKey, Values]:
        """Records acknowledged with acks=all, by partition."""
        ...

    def consumed(self) -> Mapping[PartitionKey, Values]:
        """Records a consumer read (below a leader's high watermark), by partition."""
        ...

    @property
    def durability_lost(self) -> bool:
        """A power loss took records that were not flushed: Kafka promises nothing about
        committed data after that (it leaves flushing to the OS and to replication)."""
        ...

    @property
    def unclean_elections(self) -> bool:
        """A replica outside the ISR may have been elected: acknowledged records may be gone."""
        ...


def live_brokers(sim: Simulation) -> dict[int, Broker]:
    """The running nodes that are brokers (simulated nodes holding a ``broker`` core), by id."""
    out = {}
    for node_id, node in sorted(sim.nodes.items()):
        broker = getattr(node, "broker", None)
        if broker is not None:
            out[node_id] = broker
    return out


class SimReplicas:
    """A simulated cluster of whole brokers as a :class:`ReplicaView`.

    The leader of a partition is the live replica leading it in the newest leader epoch any of
    them holds. ``acknowledged`` gives what a simulated producer was told (none by default: the
    end-of-run verdict, :func:`.invariants.check_converged`, judges it). The simulated disks
    flush what the scenarios need (``flush.messages``), and the simulated controller never
    elects uncleanly unless a topic asks for it.
    """

    durability_lost = False
    unclean_elections = False

    def __init__(
        self, sim: Simulation, acknowledged: Callable[[], Mapping[PartitionKey, Values]] | None = None
    ) -> None:
        self.sim = sim
        self._brokers = live_brokers(sim)
        self._replicas: list[Replica] | None = None
        self._acknowledged = acknowledged

    def replicas(self) -> list[Replica]:
        if self._replicas is None:  # one view serves every claim of one check
            self._replicas = []
            for node_id, broker in self._brokers.items():
                incarnation = self.sim.incarnations[node_id]
                self._replicas += [Replica(node_id, incarnation, p) for p in broker.partitions.values()]
        return self._replicas

    def leaders(self) -> list[Replica]:
        best: dict[PartitionKey, Replica] = {}
        for replica in self.replicas():
            part = replica.partition
            key = (part.topic_id, part.index)
            if part.is_leader and (key not in best or part.leader_epoch > best[key].partition.leader_epoch):
                best[key] = replica
        return [best[key] for key in sorted(best)]

    def registrations(self) -> list[Registration]:
        out = []
        for node_id, broker in self._brokers.items():
            for topic in broker.image.topics.values():
                for index, p in sorted(topic.partitions.items()):
                    out.append(
                        Registration(
                            f"node {node_id}'s image", topic.name, index, p.leader, tuple(p.isr),
                            tuple(p.replicas),
                        )
                    )
        return out

    def acknowledged(self) -> Mapping[PartitionKey, Values]:
        return {} if self._acknowledged is None else self._acknowledged()

    def consumed(self) -> Mapping[PartitionKey, Values]:
        return {}
