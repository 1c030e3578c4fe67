"""Pre-vote (KIP-996) at one replica (core/raft/voting.py): asked before an epoch is bumped, answered
without any change of state. Kafka: ``KafkaRaftClient.handleVoteRequest`` with PreVote set, and
``FollowerState``/``LeaderState``/``ResignedState.canGrantVote`` for a pre-vote."""

from __future__ import annotations

import random

from kio.schema.errors import ErrorCode

from reference_impl.core.raft.api import RaftConfig, RaftStep
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    Envelope,
    VoteRequest,
    VoteResponse,
)
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore, RaftLog
from reference_impl.core.raft.states import (
    CandidateState,
    ElectionState,
    FollowerState,
    LeaderState,
    UnattachedState,
)
from reference_impl.log.memory import MemoryLog

VOTERS = (1, 2, 3)
CONFIG = RaftConfig(append_flush_delay_ms=0)


def _replica(stored: ElectionState | None = None, voters: tuple[int, ...] = VOTERS) -> RaftClient:
    store = MemoryQuorumStateStore()
    store.state = stored
    log = RaftLog(MemoryLog(), MemorySnapshotStore())
    return RaftClient(1, voters, log, store, random.Random(1), 0, CONFIG)


def _pre_vote(epoch: int, candidate: int = 2, correlation: int = 9) -> Envelope:
    body = VoteRequest(correlation_id=correlation, candidate_epoch=epoch, candidate_id=candidate,
                       last_offset_epoch=0, last_offset=0, pre_vote=True)  # fmt: skip
    return Envelope(source_id=candidate, destination_id=1, body=body)


def _answers(step: RaftStep) -> list[VoteResponse]:
    return [e.body for e in step.outbound if isinstance(e.body, VoteResponse)]


def test_a_lone_voter_still_elects_itself_at_once() -> None:
    client = _replica(voters=(1,))
    deadline = client.next_deadline_ms()
    assert deadline is not None
    step = client.step(None, deadline)
    assert client.is_leader and client.epoch == 1 and not step.outbound


def test_a_voter_stands_only_after_a_majority_of_pre_votes() -> None:
    client = _replica(ElectionState(4, None, None, VOTERS))
    deadline = client.next_deadline_ms()
    assert deadline is not None
    step = client.step(None, deadline)
    asked = [e.body for e in step.outbound if isinstance(e.body, VoteRequest)]
    assert sorted(e.destination_id for e in step.outbound) == [2, 3]
    assert {(v.pre_vote, v.candidate_epoch) for v in asked} == {(True, 4)}  # its own epoch, as Kafka 4
    assert isinstance(client.state, UnattachedState) and client.epoch == 4  # not bumped yet
    yes = VoteResponse(correlation_id=asked[0].correlation_id, error_code=ErrorCode.none, leader_id=-1,
                       leader_epoch=4, vote_granted=True)  # fmt: skip
    step = client.step(Envelope(source_id=2, destination_id=1, body=yes), deadline + 1)
    assert isinstance(client.state, CandidateState) and client.epoch == 5
    votes = [e.body for e in step.outbound if isinstance(e.body, VoteRequest)]
    assert votes and all(not v.pre_vote and v.candidate_epoch == 5 for v in votes)


def test_a_pre_vote_is_granted_without_adopting_its_epoch_or_voting() -> None:
    client = _replica(ElectionState(2, None, None, VOTERS))
    before = client.quorum.store.read()
    assert [(a.vote_granted, a.leader_epoch) for a in _answers(client.step(_pre_vote(2), 10))] == [(True, 2)]
    assert client.epoch == 2 and client.quorum.store.read() == before


def test_a_pre_vote_from_a_voter_in_a_later_epoch_brings_this_one_to_that_epoch_without_a_vote() -> None:
    """Kafka 4 takes the later epoch a PreVote names (the prospective's own). No vote is recorded."""
    client = _replica(ElectionState(2, None, None, VOTERS))
    assert [(a.vote_granted, a.leader_epoch) for a in _answers(client.step(_pre_vote(7), 10))] == [(True, 7)]
    assert isinstance(client.state, UnattachedState) and client.epoch == 7
    stored = client.quorum.store.read()
    assert stored is not None and stored.voted_id is None


def test_a_follower_that_hears_its_leader_refuses_a_pre_vote_then_grants_once_it_went_silent() -> None:
    client = _replica(ElectionState(3, None, 2, VOTERS))
    assert isinstance(client.state, FollowerState)
    client.state.last_fetched_ms = 100
    assert [a.vote_granted for a in _answers(client.step(_pre_vote(3, candidate=3), 150))] == [False]
    later = client.step(_pre_vote(3, candidate=3), 100 + CONFIG.fetch_timeout_ms)
    assert [a.vote_granted for a in _answers(later)] == [True]
    assert isinstance(client.state, FollowerState) and client.epoch == 3


def test_a_pre_vote_may_name_the_epoch_its_log_reached_and_a_vote_may_not() -> None:
    """Kafka's ``handleVoteRequest``: a last epoch above the named one is INVALID_REQUEST, and for a
    Vote one equal to it too (a candidate stands in an epoch its log has not reached; a prospective
    names the epoch it is in)."""
    client = _replica(ElectionState(2, None, None, VOTERS))
    pre = VoteRequest(correlation_id=1, candidate_epoch=2, candidate_id=2, last_offset_epoch=2,
                      last_offset=5, pre_vote=True)  # fmt: skip
    vote = VoteRequest(correlation_id=2, candidate_epoch=2, candidate_id=2, last_offset_epoch=2,
                       last_offset=5)  # fmt: skip
    beyond = VoteRequest(correlation_id=3, candidate_epoch=2, candidate_id=2, last_offset_epoch=3,
                         last_offset=5, pre_vote=True)  # fmt: skip
    sent = [Envelope(source_id=2, destination_id=1, body=body) for body in (pre, vote, beyond)]
    codes = [[(a.error_code, a.vote_granted) for a in _answers(client.step(e, 10))] for e in sent]
    assert codes == [[(ErrorCode.none, True)], [(ErrorCode.invalid_request, False)],
                     [(ErrorCode.invalid_request, False)]]  # fmt: skip
    assert client.epoch == 2 and client.quorum.store.read() == ElectionState(2, None, None, VOTERS)


def _leader_of_epoch_1() -> tuple[RaftClient, int]:
    client = _replica(voters=(1, 2, 3))
    deadline = client.next_deadline_ms()
    assert deadline is not None
    step = client.step(None, deadline)
    asked = [e.body for e in step.outbound if isinstance(e.body, VoteRequest)]
    yes = VoteResponse(correlation_id=asked[0].correlation_id, error_code=ErrorCode.none, leader_id=-1,
                       leader_epoch=0, vote_granted=True)  # fmt: skip
    step = client.step(Envelope(source_id=2, destination_id=1, body=yes), deadline)
    vote = next(e.body for e in step.outbound if isinstance(e.body, VoteRequest))
    won = VoteResponse(correlation_id=vote.correlation_id, error_code=ErrorCode.none, leader_id=-1,
                       leader_epoch=1, vote_granted=True)  # fmt: skip
    client.step(Envelope(source_id=2, destination_id=1, body=won), deadline)
    assert isinstance(client.state, LeaderState)
    return client, deadline


def test_a_leader_refuses_a_pre_vote_and_keeps_its_epoch() -> None:
    client, now = _leader_of_epoch_1()
    answers = _answers(client.step(_pre_vote(1, candidate=3), now + 1))
    assert [(a.vote_granted, a.leader_id, a.leader_epoch) for a in answers] == [(False, 1, 1)]
    assert client.is_leader and client.epoch == 1


def test_a_leader_gives_way_to_a_voter_stuck_in_a_later_epoch_it_does_not_hear() -> None:
    """The CI deadlock: voter 3's candidacy in epoch 2 was refused (the others heard a live leader
    of epoch 1), so it stayed in epoch 2, ignoring the leader's older epoch, and its pre-votes
    (naming epoch 2) moved nobody: out of the quorum for good. A leader that does not hear voter 3 (no fetch
    within half the fetch timeout) takes its epoch and stops leading, so the quorum elects again."""
    client, now = _leader_of_epoch_1()
    state = client.state
    assert isinstance(state, LeaderState)
    state.progress[3].last_fetch_ms = now  # voter 3 fetches from this leader: it is not stuck
    client.step(_pre_vote(2, candidate=3), now + 1)
    assert client.is_leader and client.epoch == 1
    later = now + CONFIG.fetch_timeout_ms  # silent for a whole fetch timeout: voter 3 is elsewhere
    answers = _answers(client.step(_pre_vote(2, candidate=3), later))
    assert [(a.vote_granted, a.leader_id, a.leader_epoch) for a in answers] == [(False, -1, 2)]
    assert isinstance(client.state, UnattachedState) and client.epoch == 2


def test_a_leader_heard_again_during_the_round_keeps_the_replica_following() -> None:
    client = _replica(ElectionState(3, None, 2, VOTERS))
    state = client.state
    assert isinstance(state, FollowerState)
    start = state.fetch_deadline_ms
    step = client.step(None, start)
    asked = [e.body for e in step.outbound if isinstance(e.body, VoteRequest) and e.body.pre_vote]
    assert asked and client.prevote is not None
    state.last_fetched_ms = start + 10  # a fetch the leader answered after the round began
    yes = VoteResponse(correlation_id=asked[-1].correlation_id, error_code=ErrorCode.none, leader_id=2,
                       leader_epoch=3, vote_granted=True)  # fmt: skip
    client.step(Envelope(source_id=3, destination_id=1, body=yes), start + 20)
    assert isinstance(client.state, FollowerState) and client.epoch == 3 and client.prevote is None


def test_a_vote_or_begin_epoch_meant_for_another_voter_is_invalid_voter_key() -> None:
    """KIP-853 (Vote v1+, BeginQuorumEpoch v1+): the request names the voter it is for; a replica
    that is not that voter refuses with INVALID_VOTER_KEY and changes nothing."""
    client = _replica(ElectionState(2, None, None, VOTERS))
    vote = VoteRequest(correlation_id=3, candidate_epoch=3, candidate_id=2, last_offset_epoch=0,
                       last_offset=0, voter_id=99)  # fmt: skip
    answers = _answers(client.step(Envelope(source_id=2, destination_id=1, body=vote), 10))
    assert [(a.error_code, a.vote_granted) for a in answers] == [(ErrorCode.invalid_voter_key, False)]
    begin = BeginQuorumEpochRequest(correlation_id=4, leader_id=2, leader_epoch=3, voter_id=99)
    step = client.step(Envelope(source_id=2, destination_id=1, body=begin), 11)
    [answer] = [e.body for e in step.outbound if isinstance(e.body, BeginQuorumEpochResponse)]
    assert answer.error_code == ErrorCode.invalid_voter_key
    assert isinstance(client.state, UnattachedState) and client.epoch == 2


def test_a_pre_vote_answered_after_its_round_is_no_vote() -> None:
    """Replica 1 stands on 2's pre-vote; 3's pre-vote answer comes after, from epoch 5, where 3 voted
    for another candidate (a voter that voted still grants a pre-vote). Counted as a vote, it made 1
    a leader of epoch 5 beside the candidate 3 voted for: two leaders in one epoch (seen in CI)."""
    client = _replica(ElectionState(4, None, None, VOTERS))
    deadline = client.next_deadline_ms()
    assert deadline is not None
    asked = {e.destination_id: e.body for e in client.step(None, deadline).outbound}
    yes_2 = VoteResponse(correlation_id=asked[2].correlation_id, error_code=ErrorCode.none, leader_id=-1,
                         leader_epoch=4, vote_granted=True)  # fmt: skip
    step = client.step(Envelope(source_id=2, destination_id=1, body=yes_2), deadline + 1)
    assert isinstance(client.state, CandidateState) and client.epoch == 5
    votes = {e.destination_id: e.body for e in step.outbound if isinstance(e.body, VoteRequest)}
    late_3 = VoteResponse(correlation_id=asked[3].correlation_id, error_code=ErrorCode.none, leader_id=-1,
                          leader_epoch=5, vote_granted=True)  # fmt: skip
    client.step(Envelope(source_id=3, destination_id=1, body=late_3), deadline + 2)
    assert isinstance(client.state, CandidateState), "a late pre-vote answer was counted as a vote"
    real_2 = VoteResponse(correlation_id=votes[2].correlation_id, error_code=ErrorCode.none, leader_id=-1,
                          leader_epoch=5, vote_granted=True)  # fmt: skip
    client.step(Envelope(source_id=2, destination_id=1, body=real_2), deadline + 3)
    assert isinstance(client.state, LeaderState) and client.epoch == 5
