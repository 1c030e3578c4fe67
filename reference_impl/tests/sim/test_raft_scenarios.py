"""Scripted quorum scenarios in the simulator (issue 4's Raft acceptance, in virtual time).

Every invariant of :mod:`reference_impl.sim.raft.invariants` runs after every
event of every scenario; the assertions here add what each scenario is
about. Times are virtual milliseconds, so the bounds are deterministic.
"""

from __future__ import annotations

import pytest

from reference_impl.core.raft.api import RaftConfig
from reference_impl.core.raft.states import FollowerState
from reference_impl.sim.engine.network import LinkFaults
from reference_impl.sim.engine.simulation import Simulation
from reference_impl.sim.raft.fuzz import run_schedule, settle_and_validate
from reference_impl.sim.raft.invariants import consistent_committed_data
from reference_impl.sim.raft.nodes import build_raft_simulation, current_leader

ELECTION_TIMEOUT_MS = RaftConfig().election_timeout_ms


def elect(sim: Simulation, timeout_ms: int = 10_000) -> int:
    assert sim.run_until_true(lambda: current_leader(sim) is not None, timeout_ms), (
        f"seed {sim.seed}: no leader"
    )
    leader = current_leader(sim)
    assert leader is not None
    return int(leader)


def commit(sim: Simulation, values: list[bytes], timeout_ms: int = 5_000) -> int:
    """Append at the current leader and wait until every live replica has committed it."""
    leader = elect(sim)
    last: int = sim.node(leader).raft.append(values, sim.now_ms)

    def everywhere() -> bool:
        return all((n.raft.high_watermark or 0) > last for n in map(sim.node, sim.nodes))

    assert sim.run_until_true(everywhere, timeout_ms), f"seed {sim.seed}: {values!r} not committed everywhere"
    return last


def committed_values(sim: Simulation, node_id: int) -> list[bytes]:
    return [value for _offset, value in sim.node(node_id).committed]


@pytest.mark.parametrize("voters", [3, 5])
@pytest.mark.parametrize("seed", range(5))
def test_a_quorum_elects_exactly_one_leader_that_all_follow(voters: int, seed: int) -> None:
    sim, _disks = build_raft_simulation(seed, voters)
    leader = elect(sim)
    assert sim.now_ms < 2 * ELECTION_TIMEOUT_MS + 100  # the first timer fires within [T, 2T)
    epoch = sim.node(leader).raft.epoch
    sim.run_until(sim.now_ms + 500)
    for node_id in sim.nodes:
        node = sim.node(node_id)
        if node_id != leader:
            assert isinstance(node.raft.state, FollowerState)
            assert (node.raft.state.leader, node.raft.epoch) == (leader, epoch)


@pytest.mark.parametrize("seed", range(10))
def test_killing_the_leader_elects_another_within_two_election_timeouts(seed: int) -> None:
    sim, _disks = build_raft_simulation(seed, 3)
    commit(sim, [b"before-1", b"before-2"])
    old = elect(sim)
    old_epoch = sim.node(old).raft.epoch
    killed_at = sim.now_ms
    sim.crash(old)
    assert sim.run_until_true(lambda: current_leader(sim) not in (None, old), 10 * ELECTION_TIMEOUT_MS)
    took_ms = sim.now_ms - killed_at
    new = current_leader(sim)
    assert new is not None and sim.node(new).raft.epoch > old_epoch
    assert took_ms <= 2 * ELECTION_TIMEOUT_MS, f"seed {seed}: new leader after {took_ms} ms"
    commit(sim, [b"after"])
    assert committed_values(sim, new) == [b"before-1", b"before-2", b"after"]


def test_no_committed_record_is_lost_across_leader_crashes_with_unflushed_data() -> None:
    """Leaders crash right after appending (their unflushed suffix is lost) while earlier
    records are committed; every committed record survives every crash, in order."""
    config = RaftConfig(append_flush_delay_ms=40)
    sim, disks = build_raft_simulation(11, 3, config=config)
    expected: list[bytes] = []
    for round_ in range(6):
        batch = [f"committed-{round_}-{i}".encode() for i in range(3)]
        commit(sim, batch)
        expected += batch
        leader = elect(sim)
        doomed_offset = sim.node(leader).raft.append([f"doomed-{round_}".encode()], sim.now_ms)
        sim.crash(leader)  # before its flush timer: the append is not durable
        assert disks[leader].log.log_end_offset <= doomed_offset  # lost with the page cache
        elect(sim)
        sim.run_until(sim.now_ms + 300)
        sim.restart(leader)
    settle_and_validate(sim, disks)
    for node_id in sim.nodes:
        values = [v for v in committed_values(sim, node_id) if not v.startswith(b"doomed")]
        assert values[: len(expected)] == expected


def test_a_partitioned_minority_cannot_commit() -> None:
    sim, disks = build_raft_simulation(3, 5)
    commit(sim, [b"shared"])
    old = elect(sim)
    minority = {old, next(n for n in sorted(sim.nodes) if n != old)}
    majority = set(sim.nodes) - minority
    sim.partition(minority, majority)
    old_hw = sim.node(old).raft.high_watermark
    sim.node(old).raft.append([b"minority-write"], sim.now_ms)
    sim.run_until(sim.now_ms + 3 * ELECTION_TIMEOUT_MS)
    assert sim.node(old).raft.high_watermark in (old_hw, None)  # never moved past the write
    new = current_leader(sim)
    assert new in majority
    last = sim.node(new).raft.append([b"majority-write"], sim.now_ms)
    assert sim.run_until_true(lambda: (sim.node(new).raft.high_watermark or 0) > last, 2_000)
    sim.heal()
    settle_and_validate(sim, disks)
    for node_id in sim.nodes:
        values = committed_values(sim, node_id)
        assert b"minority-write" not in values
        assert values[:2] == [b"shared", b"majority-write"]


def test_a_divergent_suffix_is_truncated_after_failures() -> None:
    """An isolated leader writes durably (flush delay 0) what nobody fetches, crashes; the others
    elect and write at the same offsets; back, it must drop its suffix for theirs."""
    sim, disks = build_raft_simulation(5, 3, config=RaftConfig(append_flush_delay_ms=0))
    commit(sim, [b"base"])
    old = elect(sim)
    others = set(sim.nodes) - {old}
    sim.partition({old}, others)
    sim.node(old).raft.append([b"divergent-1", b"divergent-2"], sim.now_ms)
    sim.run_until(sim.now_ms + 50)
    diverged_end = disks[old].log.log_end_offset
    sim.crash(old)
    commit(sim, [b"winner-1", b"winner-2", b"winner-3"])
    sim.heal()
    sim.restart(old)
    assert disks[old].log.log_end_offset == diverged_end  # it kept its durable suffix so far
    settle_and_validate(sim, disks)
    assert b"divergent-1" not in committed_values(sim, old)
    assert committed_values(sim, old)[:4] == [b"base", b"winner-1", b"winner-2", b"winner-3"]
    assert consistent_committed_data(sim) is None


def test_a_replica_far_behind_catches_up_from_a_snapshot() -> None:
    sim, disks = build_raft_simulation(8, 3, snapshot_every=5)
    commit(sim, [b"first"])
    leader = elect(sim)
    laggard = next(n for n in sorted(sim.nodes) if n != leader)
    sim.partition({laggard}, set(sim.nodes) - {laggard})
    for i in range(20):
        last = sim.node(leader).raft.append([f"v{i}".encode()], sim.now_ms)
        sim.run_until(sim.now_ms + 20)
    assert sim.run_until_true(lambda: (sim.node(leader).raft.high_watermark or 0) > last, 2_000)
    assert disks[leader].log.log_start_offset > disks[laggard].log.log_end_offset  # the gap is snapshotted
    sim.heal()
    assert sim.run_until_true(lambda: sim.node(laggard).loaded_snapshot is not None, 5_000)
    settle_and_validate(sim, disks)
    assert committed_values(sim, laggard) == committed_values(sim, leader)


def test_messages_dropped_duplicated_and_reordered_change_nothing_committed() -> None:
    faults = LinkFaults(drop_probability=0.1, duplicate_probability=0.2, min_delay_ms=1, max_delay_ms=40)
    sim, disks = build_raft_simulation(21, 3, faults=faults)
    for i in range(10):
        leader = elect(sim)
        sim.node(leader).raft.append([f"r{i}".encode()], sim.now_ms)
        sim.run_until(sim.now_ms + 200)
    settle_and_validate(sim, disks)
    assert consistent_committed_data(sim) is None


def test_a_seed_replays_to_the_identical_trace() -> None:
    first, _ = run_schedule(17, trace=True)
    second, _ = run_schedule(17, trace=True)
    other, _ = run_schedule(18, trace=True)
    assert len(first.trace) > 100
    assert first.trace == second.trace
    assert first.trace != other.trace
