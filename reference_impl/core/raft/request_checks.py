"""What an inbound quorum request must satisfy before it may change a replica's state.

Kafka's ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java`` checks every request
before acting on it: ``handleVoteRequest`` refuses a negative last offset or last epoch, or a last
epoch not below the candidate's (above it for a PreVote, which names the prospective's own epoch)
(INVALID_REQUEST); ``validateVoterOnlyRequest`` fences an older
epoch (FENCED_LEADER_EPOCH), refuses a negative replica id (INVALID_REQUEST) and, in Kafka 3.x
with static voters, a candidate or leader that is not a voter, or a replica that is none
(INCONSISTENT_VOTER_SET); ``handleFetchRequest`` refuses a negative max wait, fetch offset or
last fetched epoch, and a last fetched epoch past the current leader epoch (INVALID_REQUEST).

Two rules go further, because nothing authenticates this quorum's peers yet (issue 18):

* an epoch is int32 on the wire and in ``quorum-state``; a replica that entered the last one could
  never hold another election, so a request naming epoch 2^31-1 (:data:`MAX_EPOCH`) is refused
  (INVALID_REQUEST) and no replica stands for it;
* a voter that heard from a live leader lately refuses a Vote for a later epoch without adopting
  it, as Raft's disruptive-server rule has it (Ongaro's thesis, 4.2.3; Kafka 4's KIP-996 applies it
  to pre-votes, ``FollowerState.canGrantVote``): a follower whose last good fetch is recent, and a
  leader when the named candidate is itself fetching from it. A real candidate has gone a whole
  fetch timeout without a good fetch, so this costs a genuine election nothing; a forged or stale
  Vote cannot unseat a healthy leader.
"""

from __future__ import annotations

from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from .messages import NO_LEADER, FetchRequest, FetchResponse, VoteRequest
from .quorum_state import MAX_EPOCH, QuorumState
from .states import EpochState, FollowerState, LeaderState, ResignedState


def vote_refusal(request: VoteRequest, quorum: QuorumState, now_ms: int, window_ms: int) -> ErrorCode | None:
    """Why ``request`` is refused: an error, NONE (refused without adopting its epoch, because a
    live leader is heard, :func:`hears_live_leader`), or None when it may be considered."""
    error = vote_error(request, quorum.local_id, quorum.epoch, quorum.voters, quorum.dynamic)
    if error is not None or request.candidate_epoch <= quorum.epoch:
        return error
    return (
        ErrorCode.none if hears_live_leader(quorum.state, request.candidate_id, now_ms, window_ms) else None
    )


def vote_error(
    request: VoteRequest, local_id: int, epoch: int, voters: Sequence[int], dynamic: bool = False
) -> ErrorCode | None:
    """Kafka's ``handleVoteRequest`` and ``validateVoterOnlyRequest`` checks, in Kafka's order. With a
    dynamic quorum (kraft.version 1) neither side need be in this replica's voter set: Kafka 3.9+'s
    ``validateVoterOnlyRequest`` checks only the epoch and the id, since a replica's log may not yet
    hold the VotersRecord that made it, or the candidate, a voter."""
    if request.last_offset < 0 or request.last_offset_epoch < 0:
        return ErrorCode.invalid_request
    if request.last_offset_epoch > request.candidate_epoch or (
        request.last_offset_epoch == request.candidate_epoch and not request.pre_vote
    ):  # a PreVote names the prospective's own epoch, which its log may have reached
        return ErrorCode.invalid_request
    if request.candidate_epoch < epoch:
        return ErrorCode.fenced_leader_epoch
    if request.candidate_id < 0 or request.candidate_id == local_id or request.candidate_epoch >= MAX_EPOCH:
        return ErrorCode.invalid_request
    if not dynamic and (local_id not in voters or request.candidate_id not in voters):
        return ErrorCode.inconsistent_voter_set
    return None


def leader_notice_error(leader_id: int, leader_epoch: int, quorum: QuorumState) -> ErrorCode | None:
    """BeginQuorumEpoch and EndQuorumEpoch: ``validateVoterOnlyRequest`` with the leader as the
    remote replica (an older epoch is fenced by the handlers themselves)."""
    if leader_epoch < quorum.epoch:
        return None
    if leader_id < 0 or leader_epoch >= MAX_EPOCH:
        return ErrorCode.invalid_request
    if not quorum.dynamic and (not quorum.is_voter or leader_id not in quorum.voters):
        return ErrorCode.inconsistent_voter_set  # (KIP-853: checked no more, as Vote)
    return None


def leader_only_error(quorum: QuorumState, request_epoch: int) -> ErrorCode | None:
    """Kafka's ``validateLeaderOnlyRequest`` (Fetch, FetchSnapshot): an older epoch is fenced, a
    newer one unknown, and this one needs this replica to lead it."""
    if request_epoch < quorum.epoch:
        return ErrorCode.fenced_leader_epoch
    if request_epoch > quorum.epoch:
        return ErrorCode.unknown_leader_epoch
    if not isinstance(quorum.state, LeaderState):
        return ErrorCode.not_leader_or_follower
    return None


def fetch_error(request: FetchRequest) -> ErrorCode | None:
    """``handleFetchRequest``: offsets, epochs and the wait a follower can have sent."""
    if request.max_wait_ms < 0 or request.fetch_offset < 0 or request.last_fetched_epoch < 0:
        return ErrorCode.invalid_request
    if request.last_fetched_epoch > request.current_leader_epoch:
        return ErrorCode.invalid_request
    return None


def fetch_error_response(
    state: EpochState, log_start_offset: int, request: FetchRequest, error: ErrorCode
) -> FetchResponse:
    """A Fetch refused with ``error``, naming the leader this replica knows (none once resigned)."""
    return FetchResponse(
        correlation_id=request.correlation_id,
        error_code=error,
        leader_id=state.leader_id if not isinstance(state, ResignedState) else NO_LEADER,
        leader_epoch=state.epoch,
        high_watermark=-1,
        log_start_offset=log_start_offset,
        diverging_epoch=None,
        snapshot_id=None,
        records=b"",
    )


def hears_live_leader(state: EpochState, candidate_id: int, now_ms: int, window_ms: int) -> bool:
    """Whether this replica must refuse a Vote for a later epoch from ``candidate_id``: it follows a
    leader whose fetch answered within ``window_ms``, or it leads and the candidate fetched from it
    within ``window_ms``. The window is half the fetch timeout: healthy followers fetch several
    times in it, and a replica becomes a candidate only after a whole fetch timeout without one."""
    if isinstance(state, FollowerState):
        return state.last_fetched_ms is not None and now_ms - state.last_fetched_ms < window_ms
    if isinstance(state, LeaderState):
        progress = state.progress.get(candidate_id)
        fetched = -1 if progress is None else progress.last_fetch_ms
        return fetched >= 0 and now_ms - fetched < window_ms
    return False


def postpone_election(state: EpochState, later_ms: int) -> None:
    """Move the timer that would make this replica stand (used when no epoch is left to stand in:
    it waits, and an operator must act)."""
    if isinstance(state, FollowerState):
        state.fetch_deadline_ms = later_ms
    elif not isinstance(state, LeaderState):
        state.election_deadline_ms = later_ms
