"""Raft voters as simulated nodes: what survives a crash (the disk) and what does not (the node).

:class:`RaftDisk` is a replica's durable state: its metadata log (a
:class:`MemoryLog`, whose ``crash()`` drops the unflushed suffix), its
``quorum-state`` store and its snapshots (both written atomically, so kept
whole). :class:`RaftSimNode` wraps a :class:`RaftClient` built from that disk
and records, as a listener, every committed record it was handed, which the
invariants compare across nodes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from reference_impl.core.raft.api import CommittedBatch, LeaderAndEpoch, RaftConfig, RaftStep
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import Envelope
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore, RaftLog, Snapshot
from reference_impl.log.memory import MemoryLog

from ..engine.network import LinkFaults
from ..engine.simulation import Simulation
from .invariants import raft_invariants


@dataclass
class RaftDisk:
    log: MemoryLog = field(default_factory=MemoryLog)
    quorum_store: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    snapshots: MemorySnapshotStore = field(default_factory=MemorySnapshotStore)
    crashes: int = 0

    def crash(self) -> None:
        self.crashes += 1
        self.log.crash()

    def raft_log(self) -> RaftLog:
        return RaftLog(self.log, self.snapshots)


def encode_records(records: list[tuple[int, bytes]]) -> bytes:
    """The test state machine's snapshot: every committed (offset, value), one per line."""
    return b"\n".join(b"%d:%s" % (offset, value.hex().encode()) for offset, value in records)


def decode_records(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    for line in data.split(b"\n"):
        if line:
            offset, value = line.split(b":")
            out.append((int(offset), bytes.fromhex(value.decode())))
    return out


class RaftSimNode:
    """A voter (or observer) whose state machine is the list of committed records: the quorum
    alone, for tests. With ``snapshot_every`` it snapshots that list every so many records."""

    def __init__(self, client: RaftClient, snapshot_every: int | None = None) -> None:
        self.raft = client
        self.snapshot_every = snapshot_every
        self.committed: list[tuple[int, bytes]] = []
        self.loaded_snapshot: Snapshot | None = None
        self.leader_changes: list[LeaderAndEpoch] = []
        self._last_snapshot_offset = 0
        client.register(self)

    def step(self, message: Envelope | None, now_ms: int) -> RaftStep:
        result = self.raft.step(message, now_ms)
        published = self.raft.published_offset
        if self.snapshot_every is not None and published - self._last_snapshot_offset >= self.snapshot_every:
            self.raft.create_snapshot(published, encode_records(self.committed))
            self._last_snapshot_offset = published
        return result

    def handle_commit(self, batch: CommittedBatch) -> None:
        self.committed.extend(batch.records)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.loaded_snapshot = snapshot
        self.committed = decode_records(snapshot.data)
        self._last_snapshot_offset = snapshot.snapshot_id.offset

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader_changes.append(leader)


def raft_node_factory(
    voters: tuple[int, ...], disks: dict[int, RaftDisk], config: RaftConfig, snapshot_every: int | None = None
) -> Callable[[int, random.Random, int], RaftSimNode]:
    def build(node_id: int, rng: random.Random, now_ms: int) -> RaftSimNode:
        disk = disks[node_id]
        client = RaftClient(node_id, voters, disk.raft_log(), disk.quorum_store, rng, now_ms, config)
        return RaftSimNode(client, snapshot_every)

    return build


def build_raft_simulation(
    seed: int,
    voters: int = 3,
    *,
    config: RaftConfig | None = None,
    faults: LinkFaults | None = None,
    snapshot_every: int | None = None,
    trace: bool = True,
    check_invariants: bool = True,
) -> tuple[Simulation, dict[int, RaftDisk]]:
    """A quorum of ``voters`` replicas (ids 1..N) on fresh disks, every invariant installed."""
    ids = tuple(range(1, voters + 1))
    disks = {n: RaftDisk() for n in ids}
    sim = Simulation(seed, faults=faults, trace=trace)
    if check_invariants:
        sim.invariants.extend(raft_invariants())
    factory = raft_node_factory(ids, disks, config or RaftConfig(), snapshot_every)
    for n in ids:
        sim.add_node(n, factory, disks[n])
    return sim, disks


def current_leader(sim: Simulation) -> int | None:
    """The live replica in Leader state with the highest epoch, if any."""
    best: tuple[int, int] | None = None
    for node_id, node in sim.nodes.items():
        raft = node.raft  # type: ignore[attr-defined]
        if raft.is_leader and (best is None or raft.epoch > best[0]):
            best = (raft.epoch, node_id)
    return None if best is None else best[1]
