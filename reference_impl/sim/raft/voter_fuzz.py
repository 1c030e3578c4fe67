"""The voter change property (KIP-853): no two leaders in one epoch, and no committed record lost,
while voters are added and removed one at a time amid crashes, partitions and lossy links.

A quorum formatted at kraft.version 1 with voters 1..``voters`` and ``spares`` more nodes started
as observers (formatted empty, as Kafka's ``--no-initial-controllers``). Every
``action_interval_ms`` the seeded schedule draws: append at the leader, add an observer as a voter
(AddRaftVoter), remove a voter (RemoveRaftVoter, the leader included), crash, restart, partition,
heal, or change the links. Every invariant of :mod:`.invariants` runs after every event (the
leader's high watermark durable on a majority of *its* voter set, one leader per epoch, committed
records never changed); at the end the network heals, everything restarts, one more record must
commit everywhere and the committed logs must agree (:func:`.fuzz.settle_and_validate`).

Removals stop at two voters. Removing one of two (the leader removing itself, say) leaves a set
whose only voter may lack the record: if the leader dies before the change commits, the remaining
voter still counts the old pair and needs the removed replica's vote, which a longer log refuses,
while the replicas holding the record are not voters in their own view and never stand. Kafka's
rules (KafkaRaftClient: only a voter of its latest set stands) have the same corner; operators remove
voters from larger quorums.

``mutant`` runs the same schedules with a seeded Raft bug mode (``RaftConfig.mutant``,
:data:`reference_impl.core.mutants.RAFT_MODES`); :func:`outcome` says whether it was caught.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from reference_impl.core.raft.api import NotLeaderError, RaftConfig
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.membership import format_log
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore
from reference_impl.core.raft.voter_changes import ADD, REMOVE, VoterChange
from reference_impl.core.raft.voter_set import Voter, VoterSet
from reference_impl.log.memory import MemoryLog

from ..engine.network import LinkFaults
from ..engine.simulation import InvariantViolation, Simulation
from .fuzz import links_at_random, partition_at_random, settle_and_validate
from .invariants import raft_invariants
from .nodes import RaftDisk, RaftSimNode, current_leader

CHANGE_TIMEOUT_MS = 5_000


@dataclass(frozen=True, slots=True)
class VoterRunResult:
    seed: int
    added: int
    removed: int
    refused: dict[str, int]
    committed: int
    final_voters: tuple[int, ...]
    virtual_ms: int


class Directories:
    """Each node's log directory id (Kafka's meta.properties ``directory.id``); formatting a node
    again gives it a new one. Deterministic, so a seed replays exactly."""

    def __init__(self) -> None:
        self.generation: dict[int, int] = {}
        self.bootstrap: dict[int, tuple[int, ...]] = {}
        """A node formatted again finds the quorum through the other nodes (Kafka's
        ``controller.quorum.bootstrap.servers``): any of them names the leader it knows."""

    def of(self, node_id: int) -> uuid.UUID:
        return uuid.UUID(int=(node_id << 32) | self.generation.get(node_id, 0))

    def voter(self, node_id: int) -> Voter:
        return Voter(node_id, self.of(node_id))

    def reformat(self, node_id: int) -> None:
        self.generation[node_id] = self.generation.get(node_id, 0) + 1


def build(
    seed: int,
    voters: int,
    spares: int,
    config: RaftConfig,
    *,
    faults: LinkFaults | None = None,
    dirs: Directories | None = None,
    trace: bool = False,
    snapshot_every: int | None = None,
) -> tuple[Simulation, dict[int, RaftDisk]]:
    """A kraft.version 1 quorum: 1..``voters`` formatted as the initial controllers (with their
    directory ids), ``spares`` more formatted empty (observers until added)."""
    dirs = dirs or Directories()
    initial = tuple(range(1, voters + 1))
    ids = tuple(range(1, voters + spares + 1))
    disks = {n: RaftDisk() for n in ids}
    for n in initial:
        format_log(disks[n].log, VoterSet(tuple(dirs.voter(i) for i in initial)))
    sim = Simulation(seed, faults=faults, trace=trace)
    sim.invariants.extend(raft_invariants())

    def factory(node_id: int, rng: random.Random, now_ms: int) -> RaftSimNode:
        disk = disks[node_id]
        log = disk.raft_log()
        bootstrap = dirs.bootstrap.get(node_id, initial)
        client = RaftClient(
            node_id, bootstrap, log, disk.quorum_store, rng, now_ms, config, 1, dirs.of(node_id)
        )
        return RaftSimNode(client, snapshot_every)

    for n in ids:
        sim.add_node(n, factory, disks[n])
    return sim, disks


class Operator:
    """What an operator does around voter changes (Kafka's guidance for kafka-metadata-quorum):
    asks the leader to add or remove one voter; retries a removal that was not answered NONE
    (the leader changed, or it timed out) until the leader answers NONE or VOTER_NOT_FOUND (the
    removal committed under a later leader); then stops the removed controller and formats it
    again without initial controllers, so it comes back as an observer, with a new directory id
    and an empty log and quorum-state, that may be added again. The new directory id is what keeps
    it from voting as the voter it was (Vote's voter key)."""

    def __init__(self, sim: Simulation, disks: dict[int, RaftDisk], dirs: Directories) -> None:
        self.sim = sim
        self.disks = disks
        self.dirs = dirs
        self.pending: list[VoterChange] = []
        self.removing: set[int] = set()
        self.counts: dict[str, int] = {}

    def change(self, rng: random.Random, kind: str) -> None:
        leader = current_leader(self.sim)
        if leader is None:
            return
        voters = self.sim.node(leader).raft.quorum.voters
        busy = self.removing | {c.voter_id for c in self.pending}
        if kind == ADD:
            choices = [n for n in self.sim.nodes if n not in voters and n not in busy]
        else:
            choices = [n for n in voters if n not in busy] if len(voters) > 2 else []  # see below
        if choices:
            self._ask(leader, kind, rng.choice(sorted(choices)))

    def _ask(self, leader: int, kind: str, target: int) -> None:
        raft = self.sim.node(leader).raft
        change = raft.change_voters(kind, self.dirs.voter(target), self.sim.now_ms, CHANGE_TIMEOUT_MS)
        label = f"{kind}:{'pending' if not change.done else ErrorCode(change.error).name}"
        self.counts[label] = self.counts.get(label, 0) + 1
        if kind == REMOVE:
            self.removing.add(target)
        self.pending.append(change)

    def tick(self) -> None:
        for change in [c for c in self.pending if c.done]:
            self.pending.remove(change)
            if change.kind != REMOVE:
                continue
            if change.error in (ErrorCode.none, ErrorCode.voter_not_found):
                self._decommission(change.voter_id)
        leader = current_leader(self.sim)
        if leader is None:
            return
        voters = self.sim.node(leader).raft.quorum.voters
        for node in sorted(self.removing - {c.voter_id for c in self.pending}):
            if node in voters and len(voters) <= 2:
                self.removing.discard(node)  # the removal was lost with its leader: it stays
            else:
                self._ask(leader, REMOVE, node)
                return  # one change at a time

    def _decommission(self, node: int) -> None:
        self.removing.discard(node)
        if self.sim.is_up(node):
            self.sim.crash(node)
        disk = self.disks[node]
        disk.log = MemoryLog()
        disk.snapshots = MemorySnapshotStore()
        disk.quorum_store = MemoryQuorumStateStore()
        self.dirs.reformat(node)
        self.dirs.bootstrap[node] = tuple(n for n in sorted(self.disks) if n != node)

    def finish(self, timeout_ms: int = 30_000) -> None:
        """Before the end: heal, and see every requested removal through."""
        self.sim.heal()
        self.sim.network.default = LinkFaults()
        for node in sorted(self.disks):
            if not self.sim.is_up(node):
                self.sim.restart(node)
        deadline = self.sim.now_ms + timeout_ms
        while (self.removing or self.pending) and self.sim.now_ms < deadline:
            self.sim.run_until(self.sim.now_ms + 200)
            self.tick()


def run(
    seed: int,
    *,
    voters: int = 3,
    spares: int = 2,
    actions: int = 40,
    action_interval_ms: int = 400,
    mutant: str | None = None,
    trace: bool = False,
    change_rate: float = 0.0,
    snapshot_every: int | None = 12,
) -> VoterRunResult:
    """One seeded schedule; raises InvariantViolation or AssertionError (naming the seed) on a failure.
    ``change_rate`` turns that share of the fault actions into voter changes (busier schedules);
    every replica snapshots its committed records every ``snapshot_every`` records (the snapshot then
    carries the voter set, and a replica behind the leader's log start installs it)."""
    rng = random.Random(f"voters/{seed}")
    config = RaftConfig(mutant=mutant)
    dirs = Directories()
    faults = LinkFaults(min_delay_ms=1, max_delay_ms=8)
    sim, disks = build(
        seed, voters, spares, config, faults=faults, dirs=dirs, trace=trace, snapshot_every=snapshot_every
    )
    ids = sorted(disks)
    operator = Operator(sim, disks, dirs)
    appended = 0
    for _ in range(actions):
        sim.run_until(sim.now_ms + action_interval_ms)
        operator.tick()
        roll = rng.random()
        if roll >= 0.30 and rng.random() < change_rate:
            operator.change(rng, ADD if rng.random() < 0.55 else REMOVE)
            continue
        down = [n for n in ids if not sim.is_up(n)]
        if roll < 0.30:
            leader = current_leader(sim)
            if leader is not None:
                try:
                    sim.node(leader).raft.append([f"r{appended + i}".encode() for i in range(3)], sim.now_ms)
                    appended += 3
                except NotLeaderError:
                    pass
        elif roll < 0.45:
            operator.change(rng, ADD)
        elif roll < 0.58:
            operator.change(rng, REMOVE)
        elif roll < 0.68 and len(down) < 2:
            sim.crash(rng.choice([n for n in ids if sim.is_up(n)]))
        elif roll < 0.78 and down:
            sim.restart(rng.choice(down))
        elif roll < 0.86:
            partition_at_random(sim, rng, ids)
        elif roll < 0.95:
            sim.heal()
        else:
            sim.network.default = links_at_random(rng, [0.0, 0.05])
    operator.finish()
    settle_and_validate(sim, disks)
    leader = current_leader(sim)
    final = tuple(sim.node(leader).raft.quorum.voters) if leader is not None else ()
    return VoterRunResult(
        seed,
            operator.counts.get(f"{ADD}:pending", 0),
        operator.counts.get(f"{REMOVE}:pending", 0),
        {k: v for k, v in operator.counts.items() if not k.endswith(":pending")},
        appended,
        final,
        sim.now_ms,
    )


@dataclass(frozen=True, slots=True)
class Caught:
    seed: int
    problem: str


def search(
    mutant: str | None, seeds: range = range(12), actions: int = 40, change_rate: float = 0.0
) -> Caught | None:
    """The first seed whose run breaks a property, or None when every run holds."""
    for seed in seeds:
        try:
            run(seed, mutant=mutant, actions=actions, change_rate=change_rate)
        except (InvariantViolation, AssertionError) as exc:
            return Caught(seed, str(exc).splitlines()[0][:300])
    return None
