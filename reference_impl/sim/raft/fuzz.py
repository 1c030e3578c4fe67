"""A seeded random schedule of faults and client writes against a Raft quorum.

Every ``action_interval_ms`` of virtual time the schedule draws one action:
append records at the leader, crash a node (losing its unflushed suffix),
restart a crashed one, partition the voters at random, heal, or change
the links' drop and duplication rates. Invariants run after every event.
At the end the network heals, every node restarts, the quorum must settle
on one leader, and a final write must commit everywhere, with every record
ever committed still in place (:func:`settle_and_validate`). A failure
names its seed; ``run_schedule(seed)`` replays it exactly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from reference_impl.core.raft.api import NotLeaderError, RaftConfig

from ..engine.network import LinkFaults
from ..engine.simulation import Simulation
from .invariants import consistent_committed_data
from .nodes import RaftDisk, build_raft_simulation, current_leader


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    seed: int
    actions: int
    events: int
    steps: int
    virtual_ms: int
    committed: int
    leaders: int


def _append(sim: Simulation, counter: list[int]) -> None:
    leader = current_leader(sim)
    if leader is None:
        return
    values = [f"record-{counter[0] + i}".encode() for i in range(3)]
    try:
        sim.node(leader).raft.append(values, sim.now_ms)
    except NotLeaderError:
        return
    counter[0] += len(values)


def run_schedule(
    seed: int,
    *,
    voters: int = 3,
    actions: int = 40,
    action_interval_ms: int = 400,
    snapshot_every: int | None = 30,
    trace: bool = False,
    config: RaftConfig | None = None,
) -> tuple[Simulation, ScheduleResult]:
    """Run one random schedule; raises :class:`InvariantViolation` (naming the seed) on a failure.
    ``config`` sets the replicas' timeouts (default ``RaftConfig()``; :mod:`.election_race` shortens them),
    and changes no draw of the schedule."""
    rng = random.Random(f"schedule/{seed}")
    sim, disks = build_raft_simulation(
        seed,
        voters,
        config=config or RaftConfig(),
        faults=LinkFaults(min_delay_ms=1, max_delay_ms=8),
        snapshot_every=snapshot_every,
        trace=trace,
    )
    ids = sorted(disks)
    counter = [0]
    for _ in range(actions):
        sim.run_until(sim.now_ms + action_interval_ms)
        roll = rng.random()
        down = [n for n in ids if not sim.is_up(n)]
        if roll < 0.45:
            _append(sim, counter)
        elif roll < 0.60 and len(down) < (voters - 1) // 2 + 1:
            sim.crash(rng.choice([n for n in ids if sim.is_up(n)]))
        elif roll < 0.72 and down:
            sim.restart(rng.choice(down))
        elif roll < 0.82 and len(ids) > 1:
            partition_at_random(sim, rng, ids)
        elif roll < 0.92:
            sim.heal()
        else:
            sim.network.default = links_at_random(rng, [0.0, 0.05, 0.2])
    settle_and_validate(sim, disks)
    leaders = len({(e.epoch, e.leader_id) for n in sim.nodes for e in sim.node(n).leader_changes})
    result = ScheduleResult(seed, actions, sim.events, sim.steps, sim.now_ms, counter[0], leaders)
    return sim, result


def partition_at_random(sim: Simulation, rng: random.Random, ids: list[int]) -> None:
    """Cut the nodes in two random non-empty groups."""
    shuffled = ids[:]
    rng.shuffle(shuffled)
    cut = rng.randint(1, len(ids) - 1)
    sim.partition(set(shuffled[:cut]), set(shuffled[cut:]))


def links_at_random(rng: random.Random, duplicates: list[float]) -> LinkFaults:
    """Links that drop, duplicate and delay at drawn rates."""
    return LinkFaults(
        drop_probability=rng.choice([0.0, 0.05, 0.2]),
        duplicate_probability=rng.choice(duplicates),
        min_delay_ms=1,
        max_delay_ms=rng.choice([5, 20, 60]),
    )


def settle_and_validate(sim: Simulation, disks: dict[int, RaftDisk], timeout_ms: int = 30_000) -> None:
    """Heal, restart everything, elect, commit one more record everywhere, check nothing committed
    was lost (Kafka raft's end-of-run ``ConsistentCommittedData``)."""
    sim.heal()
    sim.network.default = LinkFaults()
    for node_id in sorted(disks):
        if not sim.is_up(node_id):
            sim.restart(node_id)
    final = b"final"

    def everyone_has_it() -> bool:
        return all(any(value == final for _o, value in sim.node(n).committed) for n in sim.nodes)

    # An append to a leader that is deposed before it commits may be lost (it was never
    # committed); the client then writes again, as a real client retries.
    deadline = sim.now_ms + timeout_ms
    while not everyone_has_it() and sim.now_ms < deadline:
        if not sim.run_until_true(lambda: current_leader(sim) is not None, deadline - sim.now_ms):
            break
        leader = current_leader(sim)
        assert leader is not None
        sim.node(leader).raft.append([final], sim.now_ms)
        sim.run_until_true(everyone_has_it, min(5_000, max(0, deadline - sim.now_ms)))
    if not everyone_has_it():
        raise AssertionError(f"seed {sim.seed}: a final record did not commit everywhere in {timeout_ms} ms")
    problem = consistent_committed_data(sim)
    if problem is not None:
        raise AssertionError(f"seed {sim.seed}: {problem}")
