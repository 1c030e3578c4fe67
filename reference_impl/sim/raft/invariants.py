"""Claims about a Raft quorum checked after every simulated event, one claim per class.

The first four are those of Kafka raft's ``RaftEventSimulationTest``;
the others say what the acceptance criteria of issue 4 say (no committed
record lost or changed, a partitioned minority cannot commit). Each reads
the live nodes (``node.raft``) and, for nodes that are down, what their
disk kept. :func:`consistent_committed_data` is the end-of-run validation.
"""

from __future__ import annotations

import itertools
from typing import Any

from reference_impl.core.raft.states import LeaderState

from ..engine.simulation import Simulation


def _raft(node: Any) -> Any:
    return node.raft


def _members(sim: Simulation) -> dict[int, Any]:
    """The running nodes that take part in the quorum (voters and observers; not clients)."""
    return {n: node for n, node in sim.nodes.items() if hasattr(node, "raft")}


def _disks(sim: Simulation) -> dict[int, Any]:
    """The quorum members' disks (``log``, ``quorum_store``, ``snapshots``), running or not."""
    return {n: disk for n, disk in sim.disks.items() if hasattr(disk, "quorum_store")}


def _voters(sim: Simulation) -> tuple[int, ...]:
    for node in _members(sim).values():
        voters: tuple[int, ...] = _raft(node).quorum.voters
        return voters
    return tuple(sorted(_disks(sim)))


def _majority_of_any(group: frozenset[int], sets: set[tuple[int, ...]]) -> bool:
    return any(sum(1 for v in voters if v in group) * 2 > len(voters) for voters in sets)


class MonotonicEpoch:
    """A replica's persisted epoch never decreases, across restarts included.

    Source: Kafka raft ``RaftEventSimulationTest.MonotonicEpoch``; Raft §5.1 (currentTerm
    only grows).
    """

    name = "MonotonicEpoch"

    def __init__(self) -> None:
        self.epochs: dict[tuple[int, int], int] = {}

    def check(self, sim: Simulation) -> str | None:
        for node_id, disk in _disks(sim).items():
            stored = disk.quorum_store.read()
            if stored is None:
                continue
            key = (node_id, id(disk.quorum_store))  # a node formatted again is a new replica
            previous = self.epochs.get(key, -1)
            if stored.epoch < previous:
                return f"node {node_id} epoch went from {previous} to {stored.epoch}"
            self.epochs[key] = stored.epoch
        return None


class SingleLeaderPerEpoch:
    """No two replicas are ever leader in the same epoch.

    Source: Kafka raft ``RaftEventSimulationTest.SingleLeader``; Raft's Election Safety.
    """

    name = "SingleLeaderPerEpoch"

    def __init__(self) -> None:
        self.leaders: dict[int, int] = {}

    def check(self, sim: Simulation) -> str | None:
        for node_id, node in _members(sim).items():
            state = _raft(node).state
            if isinstance(state, LeaderState):
                first = self.leaders.setdefault(state.epoch, node_id)
                if first != node_id:
                    return f"epoch {state.epoch} has leaders {first} and {node_id}"
        return None


class MonotonicHighWatermark:
    """No leader reports a high watermark below one reported by a leader of an earlier epoch,
    and no replica's high watermark moves back while it runs.

    Source: Kafka raft ``RaftEventSimulationTest.MonotonicHighWatermark``; KIP-595 (a new
    leader's high watermark is undefined until it commits an entry of its own epoch, which
    lies above everything committed before). A deposed leader that has not yet heard of the
    newer epoch may still report its older, lower value: that is not a decrease.
    """

    name = "MonotonicHighWatermark"

    def __init__(self) -> None:
        self.leader_hw_by_epoch: dict[int, int] = {}
        self.per_incarnation: dict[tuple[int, int], int] = {}

    def check(self, sim: Simulation) -> str | None:
        for node_id, node in _members(sim).items():
            raft = _raft(node)
            hw = raft.high_watermark
            if hw is None:
                continue
            key = (node_id, sim.incarnations[node_id])
            if hw < self.per_incarnation.get(key, -1):
                return f"node {node_id} high watermark went from {self.per_incarnation[key]} to {hw}"
            self.per_incarnation[key] = hw
            if isinstance(raft.state, LeaderState):
                epoch = raft.state.epoch
                earlier = [h for e, h in self.leader_hw_by_epoch.items() if e < epoch]
                if earlier and hw < max(earlier):
                    return (
                        f"leader {node_id} of epoch {epoch} reports {hw}, "
                        f"below an earlier epoch's {max(earlier)}"
                    )
                self.leader_hw_by_epoch[epoch] = max(hw, self.leader_hw_by_epoch.get(epoch, -1))
        return None


class MajorityReachedHighWatermark:
    """Everything below a leader's high watermark is durable on a majority of voters: of the
    leader's voter set when the high watermark moved (KIP-853: a VotersRecord commits under the new
    set's majority; what was committed before stays committed).

    Source: Kafka raft ``RaftEventSimulationTest.MajorityReachedHighWatermark``; Raft's
    commitment rule (§5.3-5.4).
    """

    name = "MajorityReachedHighWatermark"

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int, int], int] = {}
        """(node, incarnation, epoch) -> the high watermark last checked."""

    def check(self, sim: Simulation) -> str | None:
        for node_id, node in _members(sim).items():
            raft = _raft(node)
            if not isinstance(raft.state, LeaderState) or raft.high_watermark is None:
                continue
            key = (node_id, sim.incarnations[node_id], raft.state.epoch)
            if self.seen.get(key) == raft.high_watermark:
                continue  # checked when it moved: a voter set that grew since does not uncommit it
            self.seen[key] = raft.high_watermark
            voters = raft.state.voters  # the leader's own set: KIP-853 changes it at run time
            hw = raft.high_watermark
            durable = 0
            for voter in voters:
                log = _disks(sim)[voter].log
                if min(log.recovery_point, log.log_end_offset) >= hw:
                    durable += 1
            if durable < len(voters) // 2 + 1:
                return f"leader {node_id} high watermark {hw} is durable on only {durable} of {len(voters)}"
        return None


class CommittedRecordsNeverChange:
    """Every record a replica hands to its state machine as committed is the same record, at
    the same offset, on every replica and across every leader change and crash.

    Source: Kafka raft ``RaftEventSimulationTest.ConsistentCommittedData`` checked as it
    happens; Raft's State Machine Safety.
    """

    name = "CommittedRecordsNeverChange"

    def __init__(self) -> None:
        self.committed: dict[int, bytes] = {}
        self.seen: dict[tuple[int, int], tuple[int, int]] = {}

    def check(self, sim: Simulation) -> str | None:
        for node_id, node in _members(sim).items():
            records: list[tuple[int, bytes]] = getattr(node, "committed", [])
            key = (node_id, sim.incarnations[node_id])
            identity, start = self.seen.get(key, (id(records), 0))
            if identity != id(records):
                start = 0  # a snapshot replaced the list: check all of it again
            for offset, value in records[start:]:
                known = self.committed.setdefault(offset, value)
                if known != value:
                    return f"node {node_id} committed {value!r} at {offset}, another committed {known!r}"
            self.seen[key] = (id(records), len(records))
        return None


class MinorityCannotCommit:
    """While the network is partitioned, no replica in a group without a majority of voters
    learns a high watermark above the largest log end any replica had when the partition began.

    Source: issue 4's acceptance ("a partitioned minority controller cannot commit"); Raft's
    quorum intersection.
    """

    name = "MinorityCannotCommit"

    def __init__(self) -> None:
        self.groups: tuple[frozenset[int], ...] = ()
        self.ceiling = -1
        self.sets: dict[frozenset[int], set[tuple[int, ...]]] = {}
        """Per group, every voter set its members held since the partition began (KIP-853: a group
        that was a majority of the set in force may commit, though its members learn a newer one)."""

    def check(self, sim: Simulation) -> str | None:
        groups = sim.network.partition_groups
        if groups != self.groups:
            self.groups = groups
            self.ceiling = max((d.log.log_end_offset for d in _disks(sim).values()), default=0)
            self.sets = {g: {_voters(sim)} for g in groups}
        if not groups:
            return None
        for group in groups:
            known = self.sets[group]
            known.update(tuple(_raft(node).quorum.voters) for n, node in _members(sim).items() if n in group)
            if _majority_of_any(group, known):
                continue
            for node_id in group:
                node = _members(sim).get(node_id)
                if node is None:
                    continue
                hw = _raft(node).high_watermark
                if hw is not None and hw > self.ceiling:
                    return (
                        f"node {node_id} in minority {sorted(group)} has high watermark {hw} > {self.ceiling}"
                    )
        return None


def raft_invariants() -> list[Any]:
    return [
        MonotonicEpoch(),
        SingleLeaderPerEpoch(),
        MonotonicHighWatermark(),
        MajorityReachedHighWatermark(),
        CommittedRecordsNeverChange(),
        MinorityCannotCommit(),
    ]


def consistent_committed_data(sim: Simulation) -> str | None:
    """End-of-run validation: the committed records each live replica holds agree offset by
    offset (Kafka raft ``ConsistentCommittedData``), and each replica's log below its high
    watermark holds exactly the batches of every other's below theirs."""
    reference: dict[int, bytes] = {}
    for node_id, node in sorted(_members(sim).items()):
        for offset, value in getattr(node, "committed", []):
            known = reference.setdefault(offset, value)
            if known != value:
                return f"node {node_id} has {value!r} at {offset}, another has {known!r}"
    logs: dict[int, dict[int, bytes]] = {}
    for node_id, node in _members(sim).items():
        raft = _raft(node)
        hw = raft.high_watermark
        if hw is None:
            continue
        start = raft.log.start_offset
        logs[node_id] = {
            h.base_offset: data[h.position : h.position + h.size] for h, data in raft.log.batches(start, hw)
        }
    items = sorted(logs.items())
    for (a, batches_a), (b, batches_b) in itertools.pairwise(items):
        for offset in set(batches_a) & set(batches_b):
            if batches_a[offset] != batches_b[offset]:
                return f"nodes {a} and {b} hold different batches at {offset} below their high watermarks"
    return None
