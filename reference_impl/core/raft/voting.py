"""Elections of a KRaft replica: standing (with KIP-996's pre-vote first), Vote and its answers.

Split out of :mod:`.client` (functions over the :class:`~.client.RaftClient` they serve; the
client's ``handle_vote_*`` methods call them). Kafka's
``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java`` (``handleVoteRequest``,
``handleVoteResponse``, ``maybeSendVoteRequests``) and, for pre-vote, Kafka 4's
``ProspectiveState`` and KIP-996 ("Pre-Vote"):

* a voter whose election or fetch timer fires does not bump its epoch at once: it first asks the
  other voters a PreVote (Vote v2 with ``PreVote`` set, naming its current epoch, as Kafka 4's
  ``ProspectiveState``; a Vote names the epoch the candidate stands in). A voter answers whether it
  would grant its vote and persists no vote; a follower that fetched from its leader within the
  fetch timeout says no, and a leader always says no. It changes its epoch only for a prospective
  already in a later epoch than its own, unless a live leader is heard
  (:func:`_catch_up_with_prospective`; Kafka 4 takes any later epoch a PreVote names);
* with a majority of pre-votes (its own included) the replica becomes a candidate in the next
  epoch and asks real votes; rejected by a majority, or when the round's time runs out, it waits
  for its timer again. A follower keeps fetching from its leader meanwhile: a leader heard again
  ends the round (Kafka's prospective replica goes back to following the leader it knew).

So a voter cut off from the quorum cannot disrupt a healthy leader when it comes back: it never
bumped its epoch, and the leader's epoch reaches it with the first answer. One difference: Kafka
models the round as an election state of its own (Prospective, with a quorum-state entry); here
the replica stays in the state it was in and the round is held beside it (:class:`PreVoteRound`),
which keeps the persisted states and their transition table as they were. A lone voter grants
itself the pre-vote and the vote at once, so it elects itself without a message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from reference_impl import defects

from . import request_checks as checks
from .messages import VoteRequest, VoteResponse
from .quorum_state import MAX_EPOCH
from .states import CandidateState, FollowerState, LeaderState, ResignedState, UnattachedState

if TYPE_CHECKING:
    from .client import RaftClient
    from .states import EpochState


@dataclass(slots=True)
class PreVoteRound:
    """One round of pre-votes, asked in ``epoch`` (named in them) for ``epoch + 1`` (Kafka's
    ProspectiveState)."""

    epoch: int
    local_id: int
    voters: tuple[int, ...]
    started_ms: int
    deadline_ms: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    asked: set[int] = field(default_factory=set)
    """The correlation ids of this round's PreVotes (a candidate's own Votes share its epoch)."""

    def __post_init__(self) -> None:
        self.granted.add(self.local_id)

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def record(self, voter_id: int, granted: bool) -> None:
        if voter_id in self.voters and voter_id != self.local_id:
            (self.granted if granted else self.rejected).add(voter_id)

    def is_granted(self) -> bool:
        return len(self.granted) >= self.majority

    def is_rejected(self) -> bool:
        return len(self.voters) - len(self.rejected) < self.majority

    def unanswered(self) -> list[int]:
        return [v for v in self.voters if v not in self.granted and v not in self.rejected]


def stand(client: RaftClient, now_ms: int) -> None:
    """The election or fetch timer of a voter fired: a pre-vote round first (KIP-996), or, with
    ``RaftConfig.pre_vote`` off, a candidate at once (Kafka 3.x)."""
    if not client.config.pre_vote:
        become_candidate(client, now_ms)
        return
    state = client.quorum.state
    round_ = PreVoteRound(
        state.epoch,
        client.node_id,
        client.quorum.voters,
        now_ms,
        now_ms + client.quorum.randomized_election_timeout_ms(),
    )
    client.prevote = round_
    if round_.is_granted():  # a lone voter: no one else to ask
        client.prevote = None
        become_candidate(client, now_ms)
        return
    # The next round no sooner than this one's end; a follower keeps fetching meanwhile.
    if isinstance(state, FollowerState):
        state.fetch_deadline_ms = round_.deadline_ms
    elif not isinstance(state, LeaderState):
        state.election_deadline_ms = round_.deadline_ms
    round_.asked.update(_send_vote_requests(client, round_.unanswered(), state.epoch, pre_vote=True))


def become_candidate(client: RaftClient, now_ms: int) -> None:
    client.prevote = None
    if client.quorum.epoch + 1 >= MAX_EPOCH and not defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER):
        later = now_ms + client.quorum.randomized_election_timeout_ms()
        checks.postpone_election(client.quorum.state, later)  # no epoch left to stand in
        return
    client.quorum.transition_to_candidate(now_ms)
    state = client.quorum.state
    assert isinstance(state, CandidateState)
    if state.is_vote_granted():
        client.become_leader(now_ms)
    else:
        ask_votes(client, state)


def ask_votes(client: RaftClient, state: CandidateState) -> None:
    """Vote requests in the candidate's epoch to the voters that have not answered."""
    client.vote_asked.update(_send_vote_requests(client, state.unanswered(), state.epoch, pre_vote=False))


def _send_vote_requests(client: RaftClient, voters: list[int], epoch: int, *, pre_vote: bool) -> list[int]:
    """Vote (or PreVote) requests to ``voters``; their correlation ids."""
    last = client.log.end_offset_and_epoch()
    sent = []
    for voter in voters:
        sent.append(client.next_correlation_id())
        client.send(
            voter,
            VoteRequest(
                correlation_id=sent[-1],
                candidate_epoch=epoch,
                candidate_id=client.node_id,
                last_offset_epoch=last.epoch,
                last_offset=last.offset,
                voter_directory_id=client.membership.directory_of(voter),
                voter_id=voter,
                candidate_directory_id=client.membership.own_directory_id(),
                pre_vote=pre_vote,
            ),
        )
    return sent


def would_grant_pre_vote(client: RaftClient, state: EpochState, up_to_date: bool, now_ms: int) -> bool:
    """KIP-996: a leader and a resigned leader never grant; a follower only once its leader has been
    silent for a fetch timeout; the other states whenever the candidate's log is up to date."""
    if not up_to_date or isinstance(state, (LeaderState, ResignedState)):
        return False
    if isinstance(state, FollowerState):
        heard = state.last_fetched_ms
        return heard is None or now_ms - heard >= client.config.fetch_timeout_ms
    return True


def _catch_up_with_prospective(client: RaftClient, request: VoteRequest, now_ms: int) -> None:
    """A pre-vote from a voter already in a later epoch than this replica's (a PreVote names the
    prospective's epoch): take that epoch, unless a live leader is heard (the same stickiness as a Vote's,
    :func:`~.request_checks.hears_live_leader`). Kafka 4's ``handleVoteRequest`` moves to any later
    epoch a Vote or PreVote names. Without it a voter whose candidacy was refused while a leader
    was live stayed in its later epoch for good: its pre-votes never moved the quorum, and it
    ignores the leader's older epoch (a restarted node, its two peers paused for 2 s, was left out
    of the quorum until the leader stopped: ``test_restart_probe_mutant`` in CI)."""
    quorum = client.quorum
    window_ms = client.config.fetch_timeout_ms // 2
    if request.candidate_epoch > quorum.epoch and not checks.hears_live_leader(
        quorum.state, request.candidate_id, now_ms, window_ms
    ):
        quorum.transition_to_unattached(request.candidate_epoch, now_ms)


def handle_vote_request(client: RaftClient, source: int, request: VoteRequest, now_ms: int) -> None:
    quorum = client.quorum

    def answer(error: ErrorCode, granted: bool) -> None:
        client.send(
            source,
            VoteResponse(
                correlation_id=request.correlation_id,
                error_code=error,
                leader_id=quorum.leader_id if not isinstance(quorum.state, ResignedState) else -1,
                leader_epoch=quorum.epoch,
                vote_granted=granted,
            ),
        )

    wrong_voter = request.voter_id >= 0 and request.voter_id != client.node_id
    if request.pre_vote:
        error = checks.vote_error(request, quorum.local_id, quorum.epoch, quorum.voters, quorum.dynamic)
        if error is not None:
            answer(error, False)
        elif wrong_voter or client.membership.wrong_key(request.voter_directory_id):
            answer(ErrorCode.invalid_voter_key, False)
        else:
            _catch_up_with_prospective(client, request, now_ms)
            ours = client.log.end_offset_and_epoch()
            up_to_date = (request.last_offset_epoch, request.last_offset) >= (ours.epoch, ours.offset)
            answer(ErrorCode.none, would_grant_pre_vote(client, quorum.state, up_to_date, now_ms))
        return
    if not defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER):
        window_ms = client.config.fetch_timeout_ms // 2
        refusal = checks.vote_refusal(request, quorum, now_ms, window_ms)
        if refusal is not None:  # NONE: refused without adopting the epoch (a live leader is heard)
            answer(refusal, False)
            return
    if request.candidate_epoch < quorum.epoch:
        answer(ErrorCode.fenced_leader_epoch, False)
        return
    if wrong_voter or client.membership.wrong_key(request.voter_directory_id):  # isValidVoterKey
        answer(ErrorCode.invalid_voter_key, False)
        return
    static = not quorum.dynamic
    if static and (not quorum.is_voter or request.candidate_id not in quorum.voters):
        answer(ErrorCode.inconsistent_voter_set, False)
        return
    if request.candidate_epoch > quorum.epoch:
        quorum.transition_to_unattached(request.candidate_epoch, now_ms)
    state = quorum.state
    ours = client.log.end_offset_and_epoch()
    up_to_date = (request.last_offset_epoch, request.last_offset) >= (ours.epoch, ours.offset)
    granted = state.can_grant_vote(request.candidate_id, up_to_date)
    if granted and isinstance(state, UnattachedState):
        quorum.transition_to_voted(state.epoch, request.candidate_id, now_ms)
    answer(ErrorCode.none, granted)


def handle_vote_response(client: RaftClient, source: int, response: VoteResponse, now_ms: int) -> None:
    round_ = client.prevote
    is_pre_vote = round_ is not None and response.correlation_id in round_.asked
    if client.maybe_handle_common_response(response.leader_epoch, response.leader_id, now_ms):
        return
    state = client.quorum.state
    granted = response.vote_granted and response.error_code == ErrorCode.none
    if is_pre_vote:
        assert round_ is not None
        if state.epoch != round_.epoch:
            return
        round_.record(source, granted)
        if round_.is_granted():
            if isinstance(state, FollowerState) and (state.last_fetched_ms or -1) >= round_.started_ms:
                client.prevote = None  # the leader was heard again since the round began
                return
            become_candidate(client, now_ms)
        elif round_.is_rejected():
            client.prevote = None  # wait for the timer again (Kafka: back to follower / unattached)
        return
    if not isinstance(state, CandidateState) or response.leader_epoch != state.epoch:
        return
    if response.correlation_id not in client.vote_asked:
        # Not an answer to this candidacy's Vote: a pre-vote answered after its round ended (the
        # round is gone once the replica stands). A voter that already voted for another candidate
        # in this epoch still grants a pre-vote for it, so counting that answer as a vote elected
        # two leaders in one epoch (a 4-node cluster in CI: nodes 1 and 2 both led epoch 1).
        return
    state.record_vote(source, granted)
    if state.is_vote_granted():
        client.become_leader(now_ms)
