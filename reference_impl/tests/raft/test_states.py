"""One test group per election state: votes they may grant, tallies, high-watermark rules."""

from __future__ import annotations

from reference_impl.core.raft.states import (
    CandidateState,
    FollowerState,
    LeaderState,
    ResignedState,
    UnattachedState,
    VotedState,
)

VOTERS = (1, 2, 3)


class TestUnattached:
    def test_grants_to_any_up_to_date_candidate(self) -> None:
        state = UnattachedState(3, 1000)
        assert state.can_grant_vote(2, log_up_to_date=True)
        assert not state.can_grant_vote(2, log_up_to_date=False)
        assert state.leader_id == -1 and state.voted_id is None


class TestVoted:
    def test_grants_only_to_the_candidate_it_voted_for(self) -> None:
        state = VotedState(3, 2, 1000)
        assert state.can_grant_vote(2, log_up_to_date=True)
        assert not state.can_grant_vote(3, log_up_to_date=True)
        assert state.voted_id == 2


class TestCandidate:
    def test_votes_for_itself_and_wins_with_a_majority(self) -> None:
        state = CandidateState(4, 1, VOTERS, 1000)
        assert state.granted == {1}
        assert not state.is_vote_granted()
        state.record_vote(2, granted=True)
        assert state.is_vote_granted()
        assert not state.can_grant_vote(3, log_up_to_date=True)

    def test_loses_once_a_majority_is_out_of_reach(self) -> None:
        state = CandidateState(4, 1, (1, 2, 3, 4, 5), 1000)
        state.record_vote(2, granted=False)
        state.record_vote(3, granted=False)
        assert not state.is_vote_rejected()
        state.record_vote(4, granted=False)
        assert state.is_vote_rejected()
        assert state.unanswered() == [5]

    def test_ignores_non_voters_and_its_own_id(self) -> None:
        state = CandidateState(4, 1, VOTERS, 1000)
        state.record_vote(9, granted=True)
        state.record_vote(1, granted=False)
        assert state.granted == {1} and state.rejected == set()


class TestLeader:
    def test_high_watermark_needs_a_majority_past_the_epoch_start(self) -> None:
        state = LeaderState(2, 1, VOTERS, epoch_start_offset=10, check_quorum_deadline_ms=5000)
        assert not state.update_local_end_offset(11, now_ms=0)  # alone: no majority
        assert state.high_watermark is None
        assert not state.update_replica(2, 10, leader_end_offset=11, now_ms=1)  # only the epoch start
        assert state.high_watermark is None
        assert state.update_replica(2, 11, leader_end_offset=11, now_ms=2)
        assert state.high_watermark == 11

    def test_high_watermark_is_the_majoritys_offset_and_never_moves_back(self) -> None:
        state = LeaderState(2, 1, (1, 2, 3, 4, 5), epoch_start_offset=0, check_quorum_deadline_ms=5000)
        state.update_local_end_offset(20, 0)
        state.update_replica(2, 15, 20, 0)
        state.update_replica(3, 5, 20, 0)
        assert state.high_watermark == 5
        state.update_replica(4, 12, 20, 0)
        assert state.high_watermark == 12
        assert not state.update_replica(4, 3, 20, 0)  # a restarted replica fetches from lower down
        assert state.high_watermark == 12

    def test_observers_never_count(self) -> None:
        state = LeaderState(2, 1, VOTERS, epoch_start_offset=0, check_quorum_deadline_ms=5000)
        state.update_local_end_offset(10, 0)
        assert not state.update_replica(9, 10, 10, 0)
        assert state.high_watermark is None
        voters, observers = state.describe()
        assert [o.replica_id for o in observers] == [9]
        assert [v.replica_id for v in voters] == [1, 2, 3]

    def test_check_quorum_counts_voters_that_fetched(self) -> None:
        state = LeaderState(2, 1, VOTERS, epoch_start_offset=0, check_quorum_deadline_ms=5000)
        assert not state.has_quorum_contact()
        state.update_replica(9, 0, 0, 0)
        assert not state.has_quorum_contact()
        state.update_replica(3, 0, 0, 0)
        assert state.has_quorum_contact()

    def test_describe_reports_end_offsets_and_fetch_times(self) -> None:
        state = LeaderState(2, 1, VOTERS, epoch_start_offset=0, check_quorum_deadline_ms=5000)
        state.update_local_end_offset(8, 100)
        state.update_replica(2, 8, 8, 150)
        state.update_replica(3, 4, 8, 160)
        voters, _ = state.describe()
        by_id = {v.replica_id: v for v in voters}
        assert by_id[2].log_end_offset == 8 and by_id[2].last_caught_up_timestamp == 150
        assert by_id[3].log_end_offset == 4 and by_id[3].last_fetch_timestamp == 160
        assert by_id[3].last_caught_up_timestamp == -1


class TestFollower:
    def test_high_watermark_is_bounded_by_its_log_and_monotonic(self) -> None:
        state = FollowerState(3, 2, 1000)
        assert not state.update_high_watermark(-1, 10)
        assert state.update_high_watermark(15, 10)
        assert state.high_watermark == 10
        assert not state.update_high_watermark(8, 10)
        assert state.high_watermark == 10
        assert not state.can_grant_vote(1, log_up_to_date=True)
        assert state.leader_id == 2


class TestResigned:
    def test_names_itself_leader_and_grants_nothing(self) -> None:
        state = ResignedState(5, 1, 1000, (2, 3))
        assert state.leader_id == 1
        assert not state.can_grant_vote(2, log_up_to_date=True)
