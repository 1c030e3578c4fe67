"""Pre-vote (KIP-996) in the simulator: a voter cut off from the quorum and back does not unseat
a healthy leader with pre-vote, and does without it (Kafka 3.x: it bumps its epoch while alone,
and the leader adopts the higher epoch from its Vote). Seeded schedules; every invariant of
:mod:`reference_impl.sim.raft.invariants` runs after every event, and the runs end validated."""

from __future__ import annotations

import pytest

from reference_impl.core.raft.api import RaftConfig
from reference_impl.core.raft.states import FollowerState
from reference_impl.sim.raft.fuzz import settle_and_validate
from reference_impl.sim.raft.nodes import build_raft_simulation, current_leader

ELECTION_TIMEOUT_MS = RaftConfig().election_timeout_ms


def _isolate_and_rejoin(seed: int, pre_vote: bool) -> tuple[int, int, int, int, int]:
    """(leader before, epoch before, leader after, epoch after, the isolated voter's epoch while
    alone, negated when it did not end as a follower of the leader after) for a follower
    partitioned away for five election timeouts and healed."""
    sim, disks = build_raft_simulation(seed, 3, config=RaftConfig(pre_vote=pre_vote))
    assert sim.run_until_true(lambda: current_leader(sim) is not None, 10_000), f"seed {seed}: no leader"
    sim.run_until(sim.now_ms + 500)
    leader = current_leader(sim)
    assert leader is not None
    epoch = sim.node(leader).raft.epoch
    isolated = next(n for n in sorted(sim.nodes) if n != leader)
    sim.partition({isolated}, set(sim.nodes) - {isolated})
    sim.run_until(sim.now_ms + 5 * ELECTION_TIMEOUT_MS)
    alone_epoch = sim.node(isolated).raft.epoch
    sim.heal()
    sim.run_until(sim.now_ms + 4 * ELECTION_TIMEOUT_MS)
    after = current_leader(sim)
    assert after is not None, f"seed {seed}: no leader after the heal"
    after_epoch = sim.node(after).raft.epoch
    state = sim.node(isolated).raft.state
    rejoined = isinstance(state, FollowerState) and state.leader == after
    settle_and_validate(sim, disks)
    return leader, epoch, after, after_epoch, alone_epoch if rejoined else -alone_epoch


@pytest.mark.parametrize("seed", range(4))
def test_with_pre_vote_a_rejoining_voter_does_not_disrupt_the_leader(seed: int) -> None:
    leader, epoch, after, after_epoch, alone_epoch = _isolate_and_rejoin(seed, pre_vote=True)
    assert alone_epoch == epoch  # it asked PreVotes, never bumped its epoch, and follows again
    assert (after, after_epoch) == (leader, epoch)


@pytest.mark.parametrize("seed", range(4))
def test_without_pre_vote_a_rejoining_voter_forces_a_new_epoch(seed: int) -> None:
    _leader, epoch, _after, after_epoch, alone_epoch = _isolate_and_rejoin(seed, pre_vote=False)
    assert abs(alone_epoch) > epoch + 1  # alone, it stood again and again
    assert after_epoch > epoch  # the quorum had to move past the epoch it brought back
