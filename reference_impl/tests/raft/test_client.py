"""RaftClient driven message by message (Kafka's ``RaftClientTestContext`` style): votes,
BeginQuorumEpoch, fetch validation, truncation, snapshots, resignation, DescribeQuorum."""

from __future__ import annotations

import random
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from reference_impl.core.raft.api import CommittedBatch, LeaderAndEpoch, RaftConfig
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    VoteRequest,
    VoteResponse,
)
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore, RaftLog, RaftSafetyError, Snapshot
from reference_impl.core.raft.states import (
    CandidateState,
    ElectionState,
    FollowerState,
    LeaderState,
    VotedState,
)
from reference_impl.log.memory import MemoryLog

VOTERS = (1, 2, 3)
CONFIG = RaftConfig(append_flush_delay_ms=0, pre_vote=False)  # the Vote path; pre-vote: test_prevote.py


class Context:
    """One replica under test, its disk, and what it sent."""

    def __init__(
        self,
        local_id: int = 1,
        voters: tuple[int, ...] = VOTERS,
        stored: ElectionState | None = None,
        log: RaftLog | None = None,
    ) -> None:
        self.store = MemoryQuorumStateStore()
        self.store.state = stored
        self.log = log or RaftLog(MemoryLog(), MemorySnapshotStore())
        self.now_ms = 0
        self.client = RaftClient(local_id, voters, self.log, self.store, random.Random(1), 0, CONFIG)
        self.committed: list[tuple[int, bytes]] = []
        self.leader_changes: list[LeaderAndEpoch] = []
        self.client.register(self)
        self.sent: list[Envelope] = list(self.client.drain_outbound())

    def handle_commit(self, batch: CommittedBatch) -> None:
        self.committed.extend(batch.records)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.committed = [(-1, snapshot.data)]

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader_changes.append(leader)

    def deliver(self, source: int, body: Any) -> list[Envelope]:
        step = self.client.step(
            Envelope(source_id=source, destination_id=self.client.node_id, body=body), self.now_ms
        )
        self.sent = list(step.outbound)
        return self.sent

    def tick(self, to_ms: int | None = None) -> list[Envelope]:
        if to_ms is not None:
            self.now_ms = to_ms
        step = self.client.step(None, self.now_ms)
        self.sent = list(step.outbound)
        return self.sent

    def sent_of(self, kind: type) -> list[Any]:
        return [e.body for e in self.sent if isinstance(e.body, kind)]

    def elect(self) -> None:
        """Time out, stand, and win with node 2's vote."""
        self.tick(self.client.next_deadline_ms())
        state = self.client.state
        assert isinstance(state, CandidateState)
        self.deliver(
            2,
            VoteResponse(
                correlation_id=1,
                error_code=ErrorCode.none,
                leader_id=-1,
                leader_epoch=state.epoch,
                vote_granted=True,
            ),
        )
        assert self.client.is_leader


def fetch(offset: int, epoch: int, leader_epoch: int, correlation: int = 1, wait: int = 0) -> FetchRequest:
    return FetchRequest(
        correlation_id=correlation,
        replica_id=2,
        current_leader_epoch=leader_epoch,
        fetch_offset=offset,
        last_fetched_epoch=epoch,
        max_wait_ms=wait,
        max_bytes=1 << 20,
    )


def test_a_single_voter_leads_at_once_and_commits_once_flushed() -> None:
    """Kafka's ``KafkaRaftClient.initialize`` (raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java):
    "When there is only a single voter, become candidate immediately"; its own vote is the majority."""
    ctx = Context(voters=(1,))
    assert ctx.client.is_leader and ctx.client.epoch == 1
    assert ctx.sent == []  # nobody to ask for a vote
    ctx.tick()
    assert ctx.client.high_watermark == 1  # the LeaderChange record
    ctx.client.append([b"a", b"b"], ctx.now_ms)
    ctx.tick()
    assert ctx.client.high_watermark == 3
    assert ctx.committed == [(1, b"a"), (2, b"b")]
    assert ctx.leader_changes[-1] == LeaderAndEpoch(1, 1)


def test_a_restarted_single_voter_leads_again_in_a_new_epoch() -> None:
    log = RaftLog(MemoryLog(), MemorySnapshotStore())
    first = Context(voters=(1,), log=log)
    first.tick()
    stored = first.store.state
    again = Context(voters=(1,), stored=stored, log=log)
    assert again.client.is_leader and again.client.epoch == 2


def test_a_voter_among_others_still_waits_its_election_timeout() -> None:
    ctx = Context()
    deadline = ctx.client.next_deadline_ms()
    assert not ctx.client.is_leader and deadline is not None and deadline >= 1000


def test_a_candidate_asks_every_voter_with_its_last_epoch_and_offset() -> None:
    log = RaftLog(MemoryLog(), MemorySnapshotStore())
    log.append_as_leader([b"x", b"y"], 4, 0)
    ctx = Context(log=log, stored=ElectionState(4, None, None, VOTERS))
    ctx.tick(ctx.client.next_deadline_ms())
    votes = ctx.sent_of(VoteRequest)
    assert sorted(e.destination_id for e in ctx.sent) == [2, 3]
    assert {(v.candidate_epoch, v.last_offset_epoch, v.last_offset) for v in votes} == {(5, 4, 2)}
    assert ctx.store.read() == ElectionState(5, 1, None, VOTERS)


def test_the_winner_writes_leader_change_and_announces_its_epoch() -> None:
    ctx = Context()
    ctx.elect()
    begins = ctx.sent_of(BeginQuorumEpochRequest)
    assert sorted(e.destination_id for e in ctx.sent) == [2, 3]
    assert {(b.leader_id, b.leader_epoch) for b in begins} == {(1, 1)}
    state = ctx.client.state
    assert isinstance(state, LeaderState) and state.epoch_start_offset == 0
    header = ctx.log.log.batch_headers()[0]
    assert header.is_control and header.partition_leader_epoch == 1


class TestVoteRequests:
    def request(self, epoch: int, candidate: int, last_epoch: int, last_offset: int) -> VoteRequest:
        return VoteRequest(
            correlation_id=7,
            candidate_epoch=epoch,
            candidate_id=candidate,
            last_offset_epoch=last_epoch,
            last_offset=last_offset,
        )

    def test_grants_an_up_to_date_candidate_and_persists_the_vote(self) -> None:
        ctx = Context()
        ctx.deliver(2, self.request(3, 2, 0, 0))
        [answer] = ctx.sent_of(VoteResponse)
        assert answer.vote_granted and answer.leader_epoch == 3
        assert ctx.store.read() == ElectionState(3, 2, None, VOTERS)
        # A restart keeps the vote: the other candidate of epoch 3 is refused.
        again = Context(stored=ctx.store.read())
        assert isinstance(again.client.state, VotedState)
        again.deliver(3, self.request(3, 3, 0, 0))
        assert not again.sent_of(VoteResponse)[0].vote_granted

    def test_refuses_a_candidate_whose_log_is_behind(self) -> None:
        log = RaftLog(MemoryLog(), MemorySnapshotStore())
        log.append_as_leader([b"x"], 2, 0)
        ctx = Context(log=log, stored=ElectionState(2, None, None, VOTERS))
        ctx.deliver(2, self.request(3, 2, 1, 50))  # longer log, older last epoch
        assert not ctx.sent_of(VoteResponse)[0].vote_granted
        ctx.deliver(3, self.request(3, 3, 2, 0))  # same last epoch, shorter log
        assert not ctx.sent_of(VoteResponse)[0].vote_granted
        ctx.deliver(3, self.request(3, 3, 2, 1))
        assert ctx.sent_of(VoteResponse)[0].vote_granted

    def test_an_older_epoch_is_fenced(self) -> None:
        ctx = Context(stored=ElectionState(5, None, None, VOTERS))
        ctx.deliver(2, self.request(4, 2, 0, 0))
        [answer] = ctx.sent_of(VoteResponse)
        assert answer.error_code == ErrorCode.fenced_leader_epoch and not answer.vote_granted
        assert answer.leader_epoch == 5


def test_begin_quorum_epoch_makes_a_follower_that_fetches_from_the_leader() -> None:
    ctx = Context()
    ctx.deliver(2, BeginQuorumEpochRequest(correlation_id=3, leader_id=2, leader_epoch=4))
    assert isinstance(ctx.client.state, FollowerState) and ctx.client.leader_id == 2
    [ack] = ctx.sent_of(BeginQuorumEpochResponse)
    assert ack.error_code == ErrorCode.none
    [request] = ctx.sent_of(FetchRequest)
    assert (request.fetch_offset, request.last_fetched_epoch, request.current_leader_epoch) == (0, 0, 4)
    ctx.deliver(3, BeginQuorumEpochRequest(correlation_id=4, leader_id=3, leader_epoch=3))
    assert ctx.sent_of(BeginQuorumEpochResponse)[0].error_code == ErrorCode.fenced_leader_epoch


class TestLeaderFetchValidation:
    def leader_with_history(self) -> Context:
        """Leader of epoch 3 whose log holds epoch 1 at 0-2, then its LeaderChange at 3."""
        log = RaftLog(MemoryLog(), MemorySnapshotStore())
        log.append_as_leader([b"a", b"b", b"c"], 1, 0)
        ctx = Context(log=log, stored=ElectionState(2, None, None, VOTERS))
        ctx.elect()
        assert ctx.client.epoch == 3
        return ctx

    def test_a_fetch_past_the_end_of_its_epoch_diverges(self) -> None:
        ctx = self.leader_with_history()
        ctx.deliver(2, fetch(offset=5, epoch=1, leader_epoch=3))
        [answer] = ctx.sent_of(FetchResponse)
        assert answer.diverging_epoch == OffsetAndEpoch(3, 1) and answer.records == b""

    def test_an_epoch_the_leader_never_had_diverges_to_the_older_one(self) -> None:
        ctx = self.leader_with_history()
        ctx.deliver(2, fetch(offset=4, epoch=2, leader_epoch=3))
        [answer] = ctx.sent_of(FetchResponse)
        assert answer.diverging_epoch == OffsetAndEpoch(3, 1)

    def test_a_matching_fetch_gets_records_and_moves_the_high_watermark(self) -> None:
        ctx = self.leader_with_history()
        ctx.deliver(2, fetch(offset=3, epoch=1, leader_epoch=3))
        [answer] = ctx.sent_of(FetchResponse)
        assert answer.diverging_epoch is None and answer.records and answer.high_watermark == -1
        ctx.deliver(2, fetch(offset=4, epoch=3, leader_epoch=3, correlation=2))
        assert ctx.client.high_watermark == 4
        assert ctx.committed == [(0, b"a"), (1, b"b"), (2, b"c")]

    def test_stale_and_future_epochs_are_refused(self) -> None:
        ctx = self.leader_with_history()
        ctx.deliver(2, fetch(offset=3, epoch=1, leader_epoch=2))
        assert ctx.sent_of(FetchResponse)[0].error_code == ErrorCode.fenced_leader_epoch
        ctx.deliver(2, fetch(offset=3, epoch=1, leader_epoch=9))
        assert ctx.sent_of(FetchResponse)[0].error_code == ErrorCode.unknown_leader_epoch

    def test_an_empty_long_poll_waits_until_data_arrives(self) -> None:
        ctx = self.leader_with_history()
        ctx.deliver(
            3,
            FetchRequest(
                correlation_id=1,
                replica_id=3,
                current_leader_epoch=3,
                fetch_offset=4,
                last_fetched_epoch=3,
                max_wait_ms=500,
                max_bytes=1 << 20,
            ),
        )
        [answer] = ctx.sent_of(FetchResponse)  # it moved the high watermark: answered at once
        assert answer.high_watermark == 4
        ctx.deliver(2, fetch(offset=4, epoch=3, leader_epoch=3, correlation=2, wait=500))
        assert not ctx.sent_of(FetchResponse)  # nothing new: parked
        ctx.client.append([b"d"], ctx.now_ms)
        ctx.tick()
        answered = [e for e in ctx.sent if isinstance(e.body, FetchResponse)]
        assert [e.destination_id for e in answered] == [2] and answered[0].body.records


def test_a_follower_truncates_to_the_diverging_epoch_and_ignores_stale_answers() -> None:
    log = RaftLog(MemoryLog(), MemorySnapshotStore())
    log.append_as_leader([b"a", b"b"], 1, 0)
    log.append_as_leader([b"stale-1", b"stale-2"], 2, 0)
    ctx = Context(log=log, stored=ElectionState(3, None, 2, VOTERS))
    ctx.tick(1)
    [request] = ctx.sent_of(FetchRequest)
    assert (request.fetch_offset, request.last_fetched_epoch) == (4, 2)

    def answer(correlation: int, diverging: OffsetAndEpoch | None) -> FetchResponse:
        return FetchResponse(
            correlation_id=correlation,
            error_code=ErrorCode.none,
            leader_id=2,
            leader_epoch=3,
            high_watermark=-1,
            log_start_offset=0,
            diverging_epoch=diverging,
            snapshot_id=None,
            records=b"",
        )

    ctx.deliver(2, answer(request.correlation_id + 100, OffsetAndEpoch(0, 0)))  # not the awaited answer
    assert ctx.log.end_offset == 4
    ctx.deliver(2, answer(request.correlation_id, OffsetAndEpoch(2, 1)))
    assert ctx.log.end_offset == 2
    [again] = ctx.sent_of(FetchRequest)
    assert (again.fetch_offset, again.last_fetched_epoch) == (2, 1)


def test_truncating_below_what_was_committed_is_refused() -> None:
    log = RaftLog(MemoryLog(), MemorySnapshotStore())
    log.append_as_leader([b"a", b"b", b"c"], 1, 0)
    with pytest.raises(RaftSafetyError):
        log.truncate_to_diverging(OffsetAndEpoch(1, 1), high_watermark=3)
    assert log.end_offset == 3


def test_a_replica_below_the_log_start_fetches_the_snapshot_in_chunks() -> None:
    leader = Context(voters=(1,), log=RaftLog(MemoryLog(), MemorySnapshotStore()))
    leader.client.config = RaftConfig(append_flush_delay_ms=0, snapshot_chunk_bytes=4)
    leader.tick(leader.client.next_deadline_ms())
    leader.client.append([b"a", b"b"], leader.now_ms)
    leader.tick()
    snapshot = leader.client.create_snapshot(3, b"state-at-3")
    assert snapshot.snapshot_id == OffsetAndEpoch(3, 1) and leader.log.start_offset == 3
    leader.deliver(2, fetch(offset=0, epoch=0, leader_epoch=1))
    assert leader.sent_of(FetchResponse)[0].snapshot_id == OffsetAndEpoch(3, 1)
    data = b""
    for correlation in range(1, 10):
        leader.deliver(
            2,
            FetchSnapshotRequest(
                correlation_id=correlation,
                replica_id=2,
                current_leader_epoch=1,
                snapshot_id=snapshot.snapshot_id,
                position=len(data),
                max_bytes=100,
            ),
        )
        [chunk] = leader.sent_of(FetchSnapshotResponse)
        data += chunk.unaligned_records
        if len(data) == chunk.size:
            break
    assert data == b"state-at-3"
    leader.deliver(
        2,
        FetchSnapshotRequest(
            correlation_id=20,
            replica_id=2,
            current_leader_epoch=1,
            snapshot_id=OffsetAndEpoch(2, 1),
            position=0,
            max_bytes=100,
        ),
    )
    assert leader.sent_of(FetchSnapshotResponse)[0].error_code == ErrorCode.snapshot_not_found


def test_describe_quorum_is_answered_by_the_leader_only() -> None:
    ctx = Context()
    ctx.deliver(9, DescribeQuorumRequest(correlation_id=5))
    assert ctx.sent_of(DescribeQuorumResponse)[0].error_code == ErrorCode.not_leader_or_follower
    ctx.elect()
    ctx.deliver(2, fetch(offset=1, epoch=1, leader_epoch=1))
    ctx.deliver(9, DescribeQuorumRequest(correlation_id=6))
    [answer] = ctx.sent_of(DescribeQuorumResponse)
    assert (answer.leader_id, answer.leader_epoch, answer.high_watermark) == (1, 1, 1)
    assert [(v.replica_id, v.log_end_offset) for v in answer.current_voters] == [(1, 1), (2, 1), (3, -1)]


def test_resigning_names_successors_most_caught_up_first() -> None:
    ctx = Context()
    ctx.elect()
    ctx.deliver(3, fetch(offset=1, epoch=1, leader_epoch=1))
    ctx.client.resign(ctx.now_ms)
    ends = [e.body for e in ctx.client.drain_outbound() if isinstance(e.body, EndQuorumEpochRequest)]
    assert {e.preferred_successors for e in ends} == {(3, 2)}
    assert ctx.client.state.name == "Resigned"
    assert ctx.leader_changes[-1] == LeaderAndEpoch(-1, 1)


def test_the_first_successor_stands_at_once() -> None:
    ctx = Context(stored=ElectionState(4, None, 2, VOTERS))
    ctx.deliver(
        2, EndQuorumEpochRequest(correlation_id=1, leader_id=2, leader_epoch=4, preferred_successors=(1, 3))
    )
    assert isinstance(ctx.client.state, CandidateState) and ctx.client.epoch == 5


def test_a_leader_without_fetches_from_a_majority_resigns() -> None:
    ctx = Context()
    ctx.elect()
    state = ctx.client.state
    assert isinstance(state, LeaderState)
    ctx.tick(state.check_quorum_deadline_ms)
    assert ctx.client.state.name == "Resigned"
