"""QuorumState: the transition table, persistence before effect, and restoring from the store."""

from __future__ import annotations

import json
import random

import pytest

from reference_impl.core.raft.quorum_state import (
    TRANSITIONS,
    IllegalTransitionError,
    MemoryQuorumStateStore,
    QuorumState,
    QuorumStateFormatError,
    Timeouts,
)
from reference_impl.core.raft.states import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    RESIGNED,
    UNATTACHED,
    VOTED,
    CandidateState,
    ElectionState,
    EpochState,
    FollowerState,
    LeaderState,
    ResignedState,
    UnattachedState,
    VotedState,
)
from reference_impl.server.raft_files import QUORUM_STATE_FILE, FileQuorumStateStore

VOTERS = (1, 2, 3)
TIMEOUTS = Timeouts(election_timeout_ms=1000, fetch_timeout_ms=1000)
STATES = (UNATTACHED, VOTED, CANDIDATE, LEADER, FOLLOWER, RESIGNED)

# Kafka's QuorumState documentation, transition by transition (KIP-595 without pre-vote).
KAFKA_DOCUMENTED = {
    (UNATTACHED, UNATTACHED),  # a higher epoch is learnt
    (UNATTACHED, VOTED),  # a vote is granted
    (UNATTACHED, CANDIDATE),  # the election timer fires
    (UNATTACHED, FOLLOWER),  # the epoch's leader is learnt
    (VOTED, UNATTACHED),
    (VOTED, VOTED),  # a vote in a higher epoch
    (VOTED, CANDIDATE),
    (VOTED, FOLLOWER),
    (CANDIDATE, UNATTACHED),
    (CANDIDATE, VOTED),
    (CANDIDATE, CANDIDATE),  # the election is lost or split: retry in the next epoch
    (CANDIDATE, LEADER),
    (CANDIDATE, FOLLOWER),
    (LEADER, UNATTACHED),
    (LEADER, VOTED),
    (LEADER, FOLLOWER),
    (LEADER, RESIGNED),  # graceful shutdown or lost quorum
    (FOLLOWER, UNATTACHED),
    (FOLLOWER, VOTED),
    (FOLLOWER, CANDIDATE),  # the fetch timer fires
    (FOLLOWER, FOLLOWER),  # a newer leader
    (RESIGNED, UNATTACHED),
    (RESIGNED, VOTED),
    (RESIGNED, CANDIDATE),
    (RESIGNED, FOLLOWER),
}


def quorum(state: EpochState | None = None, local_id: int = 1) -> tuple[QuorumState, MemoryQuorumStateStore]:
    store = MemoryQuorumStateStore()
    q = QuorumState(local_id, VOTERS, store, TIMEOUTS, random.Random(0), now_ms=0)
    if state is not None:
        q.state = state  # placed directly: the test is about what follows
    return q, store


def make_state(name: str, epoch: int) -> EpochState:
    if name == UNATTACHED:
        return UnattachedState(epoch, 1000)
    if name == VOTED:
        return VotedState(epoch, 2, 1000)
    if name == CANDIDATE:
        candidate = CandidateState(epoch, 1, VOTERS, 1000)
        candidate.record_vote(2, True)
        return candidate
    if name == LEADER:
        return LeaderState(epoch, 1, VOTERS, 0, 5000)
    if name == FOLLOWER:
        return FollowerState(epoch, 2, 1000)
    return ResignedState(epoch, 1, 1000)


def attempt(q: QuorumState, target: str, epoch: int) -> None:
    if target == UNATTACHED:
        q.transition_to_unattached(epoch, 0)
    elif target == VOTED:
        q.transition_to_voted(epoch, 3, 0)
    elif target == CANDIDATE:
        q.transition_to_candidate(0)
    elif target == LEADER:
        q.transition_to_leader(0, 0)
    elif target == FOLLOWER:
        q.transition_to_follower(epoch, 3, 0)
    else:
        q.transition_to_resigned((), 0)


def test_the_table_is_kafkas_documented_set() -> None:
    assert set(TRANSITIONS) == KAFKA_DOCUMENTED


@pytest.mark.parametrize("source", STATES)
@pytest.mark.parametrize("target", STATES)
def test_every_pair_is_legal_exactly_when_the_table_says(source: str, target: str) -> None:
    """Try each pair at a higher epoch, the same epoch and the next: a refusal changes nothing."""
    for delta in (0, 1, 2):
        q, store = quorum(make_state(source, 5))
        before = q.state
        epoch = 5 + delta
        rule = TRANSITIONS.get((source, target))
        expected_epoch = 6 if target == CANDIDATE else epoch
        legal = rule is not None and rule.allows(5, expected_epoch)
        if target == CANDIDATE and delta != 1:
            continue  # a candidacy always takes the next epoch; nothing to vary
        if target in (LEADER, RESIGNED) and delta != 0:
            continue  # winning and resigning happen in the current epoch
        if target == FOLLOWER and source in (FOLLOWER, LEADER, RESIGNED) and delta == 0:
            legal = False  # this epoch already has a leader
        if target == VOTED and source == VOTED and delta == 0:
            legal = False
        if legal:
            attempt(q, target, epoch)
            assert q.state.name == target
            assert q.state.epoch == expected_epoch
            assert store.read() == ElectionState(q.state.epoch, q.state.voted_id, _leader(q.state), VOTERS)
        else:
            with pytest.raises(IllegalTransitionError):
                attempt(q, target, epoch)
            assert q.state is before
            assert store.writes == 0


def _leader(state: EpochState) -> int | None:
    return state.leader_id if state.leader_id >= 0 else None


def test_leader_needs_a_majority_of_votes() -> None:
    q, store = quorum(CandidateState(3, 1, VOTERS, 1000))
    with pytest.raises(IllegalTransitionError):
        q.transition_to_leader(0, 0)
    assert isinstance(q.state, CandidateState) and store.writes == 0


def test_an_observer_neither_votes_nor_stands() -> None:
    q, _store = quorum(local_id=9)
    with pytest.raises(IllegalTransitionError):
        q.transition_to_candidate(0)
    with pytest.raises(IllegalTransitionError):
        q.transition_to_voted(1, 2, 0)
    q.transition_to_follower(1, 2, 0)
    assert q.state == FollowerState(1, 2, TIMEOUTS.fetch_timeout_ms)


def test_no_vote_for_self_or_a_non_voter_and_no_following_self() -> None:
    q, _store = quorum()
    for candidate in (1, 7):
        with pytest.raises(IllegalTransitionError):
            q.transition_to_voted(1, candidate, 0)
    for leader in (1, 7):
        with pytest.raises(IllegalTransitionError):
            q.transition_to_follower(1, leader, 0)
    assert isinstance(q.state, UnattachedState) and q.state.epoch == 0


def test_a_failed_write_leaves_the_state_unchanged() -> None:
    class BrokenStore(MemoryQuorumStateStore):
        def write(self, state: ElectionState) -> None:
            raise OSError("disk full")

    q = QuorumState(1, VOTERS, BrokenStore(), TIMEOUTS, random.Random(0), now_ms=0)
    with pytest.raises(OSError):
        q.transition_to_candidate(0)
    assert isinstance(q.state, UnattachedState) and q.state.epoch == 0


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (None, UNATTACHED),
        (ElectionState(4, None, 1, VOTERS), RESIGNED),  # it led epoch 4: never again
        (ElectionState(4, None, 2, VOTERS), FOLLOWER),
        (ElectionState(4, 1, None, VOTERS), CANDIDATE),
        (ElectionState(4, 3, None, VOTERS), VOTED),
        (ElectionState(4, None, None, VOTERS), UNATTACHED),
    ],
)
def test_restart_resumes_from_the_store(stored: ElectionState | None, expected: str) -> None:
    store = MemoryQuorumStateStore()
    store.state = stored
    q = QuorumState(1, VOTERS, store, TIMEOUTS, random.Random(0), now_ms=100)
    assert q.state.name == expected
    assert q.state.epoch == (0 if stored is None else stored.epoch)
    if stored is not None and stored.voted_id is not None:
        assert q.state.voted_id == stored.voted_id


def test_election_timeouts_are_jittered_from_the_seed() -> None:
    a = [
        QuorumState(
            1, VOTERS, MemoryQuorumStateStore(), TIMEOUTS, random.Random(s), 0
        ).randomized_election_timeout_ms()
        for s in range(20)
    ]
    assert all(1000 <= t < 2000 for t in a)
    assert len(set(a)) > 1
    again = [
        QuorumState(
            1, VOTERS, MemoryQuorumStateStore(), TIMEOUTS, random.Random(s), 0
        ).randomized_election_timeout_ms()
        for s in range(20)
    ]
    assert a == again


def test_file_store_writes_kafkas_json_atomically(tmp_path: object) -> None:
    directory = str(tmp_path)
    store = FileQuorumStateStore(directory, cluster_id="abc")
    assert store.read() is None
    state = ElectionState(7, None, 2, VOTERS)
    store.write(state)
    with open(f"{directory}/{QUORUM_STATE_FILE}", "rb") as handle:
        body = json.loads(handle.read())
    assert body == {
        "clusterId": "abc",
        "leaderId": 2,
        "leaderEpoch": 7,
        "votedId": -1,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
        "data_version": 0,
    }
    assert store.read() == state
    store.write(ElectionState(8, 3, None, VOTERS))
    assert store.read() == ElectionState(8, 3, None, VOTERS)
    import os

    assert sorted(os.listdir(directory)) == [QUORUM_STATE_FILE]  # no temporary file left behind


def test_file_store_refuses_a_damaged_file(tmp_path: object) -> None:
    directory = str(tmp_path)
    with open(f"{directory}/{QUORUM_STATE_FILE}", "wb") as handle:
        handle.write(b'{"leaderId": 1')
    with pytest.raises(QuorumStateFormatError):
        FileQuorumStateStore(directory).read()
