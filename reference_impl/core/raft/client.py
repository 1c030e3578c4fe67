"""A KRaft replica as a sans-IO state machine: ``step(message_or_none, now_ms) -> RaftStep``.

Kafka's ``KafkaRaftClient`` in Python, without threads, sockets or clocks:

* time arrives only as ``now_ms``; randomness (election jitter) comes from the
  injected ``random.Random``; the log and the election state are ports;
* each call handles at most one inbound :class:`Envelope`, then fires the
  timers that are due (``poll``), then hands committed batches to listeners
  (the ``MetadataPublisher`` hook), and returns the messages to send and the
  time it wants to be called again at the latest;
* elections follow KIP-595: Vote with last (epoch, offset) comparison,
  BeginQuorumEpoch from a new leader, EndQuorumEpoch when it resigns;
* replication is pull-based: followers and observers Fetch from the leader,
  which answers records, a diverging epoch (the follower truncates) or a
  snapshot id (the follower fetches the snapshot with FetchSnapshot); a fetch
  at offset N acknowledges N, and the high watermark is the largest offset a
  majority of voters hold durably, advancing only past the leader's epoch start;
* the leader's own records count towards the majority only once flushed
  (``append_flush_delay_ms`` models the window in which a crash loses them);
  voters flush what they fetch before acknowledging it, as Kafka's voters do.

Method names follow Kafka's: ``handle_x_request`` / ``handle_x_response``,
``maybe_send_x``, ``transition_to_x`` (in :class:`QuorumState`), ``poll_x``.
"""

from __future__ import annotations

import itertools
import json
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from reference_impl import defects

from . import request_checks as checks
from . import voting
from .api import (
    LEADER_CHANGE_KEY,
    LeaderAndEpoch,
    NotLeaderError,
    RaftConfig,
    RaftListener,
    RaftStep,
)
from .membership import Membership
from .messages import (
    NO_LEADER,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)
from .publisher import Publisher
from .quorum_state import QuorumState, QuorumStateStore, Timeouts
from .raft_log import Diverging, RaftLog, Snapshot, SnapshotNeeded
from .snapshot_fetch import SnapshotDownload, answer_fetch_snapshot
from .states import (
    CandidateState,
    EpochState,
    FollowerState,
    LeaderState,
    ResignedState,
    UnattachedState,
    VotedState,
    describe_quorum,
)
from .voter_changes import VoterChange
from .voter_set import NO_DIRECTORY, Voter, VoterSet


@dataclass(slots=True)
class _Inflight:
    correlation_id: int
    destination_id: int
    sent_ms: int


@dataclass(slots=True)
class _ParkedFetch:
    source_id: int
    request: FetchRequest
    deadline_ms: int


class RaftClient:
    def __init__(
        self,
        node_id: int,
        voters: Sequence[int],
        log: RaftLog,
        store: QuorumStateStore,
        rng: random.Random,
        now_ms: int,
        config: RaftConfig | None = None,
        kraft_version: int = 0,
        directory_id: uuid.UUID = NO_DIRECTORY,
    ) -> None:
        """``voters``: controller.quorum.voters at kraft.version 0; at 1 the initial controllers
        (a node among them formats its empty log with them, :mod:`.membership`)."""
        self.node_id = node_id
        self.config = config or RaftConfig()
        self.log = log
        self.rng = rng
        self.publisher = Publisher()
        self._outbound: list[Envelope] = []
        self._correlation = itertools.count(1)
        self._inflight: _Inflight | None = None
        self._backoff_until_ms = 0
        self._snapshot_fetch: SnapshotDownload | None = None
        self._parked: list[_ParkedFetch] = []
        self._flush_deadline_ms: int | None = None
        self._begin_epoch_next_ms = 0
        self._leader = LeaderAndEpoch(NO_LEADER, -1)
        self.prevote: voting.PreVoteRound | None = None
        """A pre-vote round under way (KIP-996, voting.py)."""
        self.vote_asked: set[int] = set()
        """Correlation ids of this candidacy's Vote requests: only their answers are votes."""
        self.membership = Membership(log, VoterSet.of_ids(voters), kraft_version, node_id, directory_id)
        self.quorum = QuorumState(
            node_id,
            self.membership.voter_ids,
            store,
            Timeouts(self.config.election_timeout_ms, self.config.fetch_timeout_ms),
            rng,
            now_ms,
            self._on_transition,
            self.membership.dynamic,
        )
        if isinstance(self.quorum.state, FollowerState):
            self.quorum.state.fetch_deadline_ms = now_ms + self._fetch_timeout_ms()
        self._leader = self._leader_of(self.quorum.state)
        if self.quorum.voters == (node_id,):  # KafkaRaftClient.initialize: "When there is only a
            self._stand_alone(now_ms)  # single voter, become candidate immediately"
        elif isinstance(self.quorum.state, CandidateState):
            voting.ask_votes(self, self.quorum.state)  # a candidate restarted: asks again

    # -- what the outside sees -----------------------------------------------------------------

    @property
    def state(self) -> EpochState:
        return self.quorum.state

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def leader_id(self) -> int:
        return self.quorum.leader_id

    @property
    def is_leader(self) -> bool:
        return isinstance(self.quorum.state, LeaderState)

    @property
    def high_watermark(self) -> int | None:
        state = self.quorum.state
        if isinstance(state, (LeaderState, FollowerState)):
            return state.high_watermark
        return None

    @property
    def published_offset(self) -> int:
        """Everything below this offset has been handed to the listeners."""
        return self.publisher.offset

    def register(self, listener: RaftListener) -> None:
        self.publisher.listeners.append(listener)
        if self._leader.leader_id != NO_LEADER:  # told the leader at once, as Kafka's ListenerContext
            listener.handle_leader_change(self._leader)

    # -- the entry point -----------------------------------------------------------------------

    def step(self, message: Envelope | None, now_ms: int) -> RaftStep:
        if message is not None:
            self.handle(message, now_ms)
        self.poll(now_ms)
        return RaftStep(self.drain_outbound(), self.next_deadline_ms())

    def drain_outbound(self) -> tuple[Envelope, ...]:
        out, self._outbound = tuple(self._outbound), []
        return out

    def handle(self, message: Envelope, now_ms: int) -> None:
        body: Any = message.body
        source = message.source_id
        match body:
            case VoteRequest():
                self.handle_vote_request(source, body, now_ms)
            case VoteResponse():
                self.handle_vote_response(source, body, now_ms)
            case BeginQuorumEpochRequest():
                self.handle_begin_quorum_epoch_request(source, body, now_ms)
            case BeginQuorumEpochResponse():
                self.handle_begin_quorum_epoch_response(source, body, now_ms)
            case EndQuorumEpochRequest():
                self.handle_end_quorum_epoch_request(source, body, now_ms)
            case EndQuorumEpochResponse():
                self.maybe_handle_common_response(body.leader_epoch, body.leader_id, now_ms)
            case FetchRequest():
                self.handle_fetch_request(source, body, now_ms)
            case FetchResponse():
                self.handle_fetch_response(source, body, now_ms)
            case FetchSnapshotRequest():
                self.handle_fetch_snapshot_request(source, body, now_ms)
            case FetchSnapshotResponse():
                self.handle_fetch_snapshot_response(source, body, now_ms)
            case DescribeQuorumRequest():
                self.send(source, self.describe_quorum(body.correlation_id))
            case _:
                raise TypeError(f"not a Raft message: {type(body).__name__}")
        self.publisher.publish(self.log, self.high_watermark)

    def poll(self, now_ms: int) -> None:
        state = self.quorum.state
        if isinstance(state, LeaderState):
            self.poll_leader(state, now_ms)
        elif isinstance(state, FollowerState):
            self.poll_follower(state, now_ms)
        elif isinstance(state, (CandidateState, UnattachedState, VotedState, ResignedState)):
            self.poll_waiting(state, now_ms)
        self.publisher.publish(self.log, self.high_watermark)

    def next_deadline_ms(self) -> int | None:
        state = self.quorum.state
        deadlines: list[int] = []
        if isinstance(state, LeaderState):
            deadlines.append(state.check_quorum_deadline_ms)
            if self._flush_deadline_ms is not None:
                deadlines.append(self._flush_deadline_ms)
            if set(state.voters) - state.begin_epoch_acked:
                deadlines.append(self._begin_epoch_next_ms)
            deadlines.extend(p.deadline_ms for p in self._parked)
            change_deadline = self.membership.next_deadline_ms()
            if change_deadline is not None:
                deadlines.append(change_deadline)
        elif isinstance(state, FollowerState):
            deadlines.append(state.fetch_deadline_ms)
            if self._inflight is not None:
                deadlines.append(self._inflight.sent_ms + self.config.request_timeout_ms)
            else:
                deadlines.append(self._backoff_until_ms)
        elif self.quorum.is_voter:
            deadlines.append(state.election_deadline_ms)
        elif self._inflight is not None:
            deadlines.append(self._inflight.sent_ms + self.config.request_timeout_ms)
        else:
            deadlines.append(self._backoff_until_ms)
        return min(deadlines) if deadlines else None

    # -- appends and snapshots by the state machine ---------------------------------------------

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Append ``values`` as one batch of the leader's epoch; the offset of the last one."""
        state = self.quorum.state
        if not isinstance(state, LeaderState):
            raise NotLeaderError(f"replica {self.node_id} is {state.name}, not leader")
        _first, last = self.log.append_as_leader(values, state.epoch, now_ms)
        self._schedule_flush(state, now_ms)
        self._complete_parked_fetches(state, now_ms)
        return last

    def create_snapshot(self, end_offset: int, data: bytes) -> Snapshot:
        """Keep the state machine's image up to ``end_offset`` (exclusive); the log may then start there."""
        if end_offset > self.publisher.offset:
            raise ValueError(f"snapshot at {end_offset} is past what was committed ({self.publisher.offset})")
        return self.log.create_snapshot(end_offset, self.membership.wrap(end_offset, data))

    def resign(self, now_ms: int) -> None:
        """Give up leadership (a controlled shutdown): EndQuorumEpoch to the other voters."""
        state = self.quorum.state
        if not isinstance(state, LeaderState):
            return
        successors = tuple(
            sorted(
                (v for v in state.voters if v != self.node_id),
                key=lambda v: (-state.progress[v].end_offset, v),
            )
        )
        self.quorum.transition_to_resigned(successors, now_ms)
        for voter in successors:
            self.send(
                voter,
                EndQuorumEpochRequest(
                    correlation_id=next(self._correlation),
                    leader_id=self.node_id,
                    leader_epoch=state.epoch,
                    preferred_successors=successors,
                    successor_directory_ids=tuple(self.membership.directory_of(v) for v in successors),
                ),
            )

    def append_control(self, key: bytes, value: bytes, now_ms: int) -> int:
        """Append one control record as leader (a VotersRecord); its offset."""
        state = self.quorum.state
        if not isinstance(state, LeaderState):
            raise NotLeaderError(f"replica {self.node_id} is {state.name}, not leader")
        first, _last = self.log.append_as_leader([value], state.epoch, now_ms, control_key=key)
        self._schedule_flush(state, now_ms)
        if self.membership.scan(self.log, first):
            self._apply_voters(now_ms)
        return first

    def change_voters(self, kind: str, voter: Voter, now_ms: int, timeout_ms: int) -> VoterChange:
        """Add/Remove/UpdateRaftVoter (``kind``: voter_changes.ADD...); answered once ``done``."""
        change = self.membership.request(self, kind, voter, now_ms, timeout_ms)
        if isinstance(state := self.quorum.state, LeaderState):
            self._complete_parked_fetches(state, now_ms)  # the followers learn the new set
        return change

    def _apply_voters(self, now_ms: int) -> None:
        """The latest VotersRecord in the log took effect (appended, fetched or truncated away)."""
        self.quorum.set_voters(ids := self.membership.voter_ids)
        if isinstance(state := self.quorum.state, LeaderState) and state.set_voters(ids):
            self._complete_parked_fetches(state, now_ms)

    def describe_quorum(self, correlation_id: int = 0) -> DescribeQuorumResponse:
        return describe_quorum(self.quorum.state, correlation_id)

    # -- transitions and their side effects ------------------------------------------------------

    def _on_transition(self, old: EpochState, new: EpochState) -> None:
        self.prevote = None  # a round is asked in one epoch and state
        self.vote_asked = set()  # and a candidacy's votes in its own
        self.membership.leadership_lost()
        self._inflight = None
        self._snapshot_fetch = None
        self._backoff_until_ms = 0
        self._flush_deadline_ms = None
        parked, self._parked = self._parked, []
        for fetch in parked:
            self.send(fetch.source_id, self._fetch_error(fetch.request, ErrorCode.not_leader_or_follower))
        leader = self._leader_of(new)
        if leader != self._leader:
            self._leader = leader
            for listener in self.publisher.listeners:
                listener.handle_leader_change(leader)

    @staticmethod
    def _leader_of(state: EpochState) -> LeaderAndEpoch:
        """The leader listeners are told of: a resigned leader no longer counts as one."""
        return LeaderAndEpoch(NO_LEADER if isinstance(state, ResignedState) else state.leader_id, state.epoch)

    def _fetch_timeout_ms(self) -> int:
        base = self.config.fetch_timeout_ms
        return base + self.rng.randrange(max(1, base // 2))

    def _transition_to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        self.quorum.transition_to_follower(epoch, leader_id, now_ms)
        state = self.quorum.state
        assert isinstance(state, FollowerState)
        state.fetch_deadline_ms = now_ms + self._fetch_timeout_ms()

    def maybe_handle_common_response(self, remote_epoch: int, remote_leader: int, now_ms: int) -> bool:
        """Learn a newer epoch (and its leader) from any answer; True if the state changed."""
        state = self.quorum.state
        if remote_epoch > state.epoch:
            known = remote_leader in self.quorum.voters or self.quorum.dynamic
            if remote_leader >= 0 and remote_leader != self.node_id and known:
                self._transition_to_follower(remote_epoch, remote_leader, now_ms)
            elif self.quorum.dynamic and not self.quorum.is_voter:
                return False  # an observer takes a new epoch with its leader (membership.py)
            else:
                self.quorum.transition_to_unattached(remote_epoch, now_ms)
            return True
        if (
            remote_epoch == state.epoch
            and remote_leader >= 0
            and remote_leader != self.node_id
            and isinstance(state, (UnattachedState, VotedState, CandidateState))
        ):
            self._transition_to_follower(remote_epoch, remote_leader, now_ms)
            return True
        return False

    def _stand_alone(self, now_ms: int) -> None:  # the only voter leads at once: its vote is a majority
        if isinstance(self.quorum.state, CandidateState):  # resumed: Kafka's onBecomeCandidate
            self.become_leader(now_ms)
        elif not isinstance(self.quorum.state, LeaderState):
            voting.become_candidate(self, now_ms)

    def become_leader(self, now_ms: int) -> None:
        state = self.quorum.transition_to_leader(self.log.end_offset, now_ms)
        change = json.dumps({"leaderId": self.node_id, "voters": list(state.voters)}).encode()
        self.log.append_as_leader([change], state.epoch, now_ms, control_key=LEADER_CHANGE_KEY)
        self._schedule_flush(state, now_ms)
        self._begin_epoch_next_ms = now_ms
        self.maybe_send_begin_quorum_epoch(state, now_ms)

    # -- timers --------------------------------------------------------------------------------

    def poll_leader(self, state: LeaderState, now_ms: int) -> None:
        if self._flush_deadline_ms is not None and now_ms >= self._flush_deadline_ms:
            self._flush_leader(state, now_ms)
        if now_ms >= state.check_quorum_deadline_ms:
            if not state.has_quorum_contact():
                self.resign(now_ms)
                return
            state.fetched_since_check = {self.node_id}
            state.check_quorum_deadline_ms = now_ms + self.quorum.check_quorum_timeout_ms()
        self.membership.poll_leader(self, state, now_ms)
        if not isinstance(self.quorum.state, LeaderState):
            return  # the committed voter set removed this leader: it resigned
        self.maybe_send_begin_quorum_epoch(state, now_ms)
        expired = [p for p in self._parked if p.deadline_ms <= now_ms]
        if expired:
            self._parked = [p for p in self._parked if p.deadline_ms > now_ms]
            for fetch in expired:
                self._answer_fetch(state, fetch.source_id, fetch.request)

    def poll_follower(self, state: FollowerState, now_ms: int) -> None:
        if now_ms >= state.fetch_deadline_ms:
            if self.quorum.is_voter:
                voting.stand(self, now_ms)
                return
            # An observer cannot stand: it asks a random voter who leads now.
            state.fetch_deadline_ms = now_ms + self._fetch_timeout_ms()
            self._snapshot_fetch = None
            self._send_fetch(self.quorum.voters[self.rng.randrange(len(self.quorum.voters))], now_ms)
            return
        if self._inflight is not None and now_ms >= self._inflight.sent_ms + self.config.request_timeout_ms:
            self._inflight = None
        if self._inflight is None and now_ms >= self._backoff_until_ms:
            self.maybe_send_fetch(state, now_ms)

    def poll_waiting(
        self, state: CandidateState | UnattachedState | VotedState | ResignedState, now_ms: int
    ) -> None:
        """Unattached, Voted, Candidate, Resigned: a voter stands when its election timer fires; an
        observer asks a random voter who leads."""
        if self.quorum.is_voter:
            if now_ms >= state.election_deadline_ms:
                voting.stand(self, now_ms)
            return
        if self._inflight is not None and now_ms >= self._inflight.sent_ms + self.config.request_timeout_ms:
            self._inflight = None
        if self._inflight is None and now_ms >= self._backoff_until_ms:
            voter = self.quorum.voters[self.rng.randrange(len(self.quorum.voters))]
            self._send_fetch(voter, now_ms)
            self._backoff_until_ms = now_ms + self.config.retry_backoff_ms

    def _schedule_flush(self, state: LeaderState, now_ms: int) -> None:
        if self.config.append_flush_delay_ms <= 0:
            self._flush_leader(state, now_ms)
        elif self._flush_deadline_ms is None:
            self._flush_deadline_ms = now_ms + self.config.append_flush_delay_ms

    def _flush_leader(self, state: LeaderState, now_ms: int) -> None:
        self.log.flush()
        self._flush_deadline_ms = None
        if state.update_local_end_offset(self.log.flushed_end_offset, now_ms):
            self._complete_parked_fetches(state, now_ms)

    def maybe_send_begin_quorum_epoch(self, state: LeaderState, now_ms: int) -> None:
        if now_ms < self._begin_epoch_next_ms:
            return
        for voter in state.voters:
            if voter not in state.begin_epoch_acked:
                self.send(
                    voter,
                    BeginQuorumEpochRequest(
                        correlation_id=next(self._correlation),
                        leader_id=self.node_id,
                        leader_epoch=state.epoch,
                        voter_id=voter,
                        voter_directory_id=self.membership.directory_of(voter),
                    ),
                )
        self._begin_epoch_next_ms = now_ms + self.config.begin_quorum_epoch_retry_ms

    # -- Vote (voting.py) -----------------------------------------------------------------------

    def handle_vote_request(self, source: int, request: VoteRequest, now_ms: int) -> None:
        voting.handle_vote_request(self, source, request, now_ms)

    def handle_vote_response(self, source: int, response: VoteResponse, now_ms: int) -> None:
        voting.handle_vote_response(self, source, response, now_ms)

    # -- BeginQuorumEpoch / EndQuorumEpoch -----------------------------------------------------

    def handle_begin_quorum_epoch_request(
        self, source: int, request: BeginQuorumEpochRequest, now_ms: int
    ) -> None:
        state = self.quorum.state
        error = self._notice_error(request.leader_id, request.leader_epoch)
        wrong_voter = request.voter_id >= 0 and request.voter_id != self.node_id
        if error != ErrorCode.none:
            pass
        elif request.leader_epoch >= state.epoch and (
            wrong_voter or self.membership.wrong_key(request.voter_directory_id)
        ):
            error = ErrorCode.invalid_voter_key  # KafkaRaftClient.handleBeginQuorumEpochRequest
        elif request.leader_epoch < state.epoch:
            error = ErrorCode.fenced_leader_epoch
        elif isinstance(state, FollowerState) and state.epoch == request.leader_epoch:
            if state.leader != request.leader_id:
                error = ErrorCode.invalid_request
        elif request.leader_epoch == state.epoch and isinstance(state, (LeaderState, ResignedState)):
            error = ErrorCode.invalid_request
        elif request.leader_id == self.node_id or (
            request.leader_id not in self.quorum.voters and not self.quorum.dynamic
        ):
            error = ErrorCode.inconsistent_voter_set
        else:
            self._transition_to_follower(request.leader_epoch, request.leader_id, now_ms)
        self.send(
            source,
            BeginQuorumEpochResponse(
                correlation_id=request.correlation_id,
                error_code=error,
                leader_id=self.quorum.leader_id,
                leader_epoch=self.quorum.epoch,
            ),
        )

    def handle_begin_quorum_epoch_response(
        self, source: int, response: BeginQuorumEpochResponse, now_ms: int
    ) -> None:
        if self.maybe_handle_common_response(response.leader_epoch, response.leader_id, now_ms):
            return
        state = self.quorum.state
        if (
            isinstance(state, LeaderState)
            and response.leader_epoch == state.epoch
            and response.error_code == ErrorCode.none
        ):
            state.begin_epoch_acked.add(source)

    def handle_end_quorum_epoch_request(
        self, source: int, request: EndQuorumEpochRequest, now_ms: int
    ) -> None:
        """The leader resigned: stand soon, sooner the higher this replica is in its successor list."""
        error = self._notice_error(request.leader_id, request.leader_epoch)
        if error != ErrorCode.none:
            pass
        elif request.leader_epoch < self.quorum.epoch:
            error = ErrorCode.fenced_leader_epoch
        else:
            if request.leader_epoch > self.quorum.epoch:
                self.quorum.transition_to_unattached(request.leader_epoch, now_ms)
            state = self.quorum.state
            successors = request.preferred_successors
            rank = successors.index(self.node_id) if self.node_id in successors else len(self.quorum.voters)
            deadline = now_ms + rank * self.config.election_timeout_ms // 2
            if isinstance(state, FollowerState) and state.leader == request.leader_id:
                state.fetch_deadline_ms = min(state.fetch_deadline_ms, deadline)
                state.last_fetched_ms = None  # it resigned: its successor's Vote is welcome
            elif isinstance(state, (UnattachedState, VotedState)):
                state.election_deadline_ms = min(state.election_deadline_ms, deadline)
        self.send(
            source,
            EndQuorumEpochResponse(
                correlation_id=request.correlation_id,
                error_code=error,
                leader_id=self.quorum.leader_id,
                leader_epoch=self.quorum.epoch,
            ),
        )

    def _notice_error(self, leader_id: int, leader_epoch: int) -> ErrorCode:
        """A BeginQuorumEpoch or EndQuorumEpoch naming a leader or an epoch no voter could send."""
        if defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER):
            return ErrorCode.none
        return checks.leader_notice_error(leader_id, leader_epoch, self.quorum) or ErrorCode.none

    # -- Fetch: the leader's side --------------------------------------------------------------

    def _fetch_error(self, request: FetchRequest, error: ErrorCode) -> FetchResponse:
        return checks.fetch_error_response(self.quorum.state, self.log.start_offset, request, error)

    def handle_fetch_request(self, source: int, request: FetchRequest, now_ms: int) -> None:
        state = self.quorum.state
        invalid = None if defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER) else checks.fetch_error(request)
        if invalid is not None:
            self.send(source, self._fetch_error(request, invalid))
            return
        error = checks.leader_only_error(self.quorum, request.current_leader_epoch)
        if not isinstance(state, LeaderState):
            self.send(source, self._fetch_error(request, error or ErrorCode.not_leader_or_follower))
            return
        if error is not None:
            self.send(source, self._fetch_error(request, error))
            return
        validation = self.log.validate_offset_and_epoch(request.fetch_offset, request.last_fetched_epoch)
        if isinstance(validation, (Diverging, SnapshotNeeded)):
            self._answer_fetch(state, source, request, validation)
            return
        hw_moved = state.update_replica(source, request.fetch_offset, self.log.end_offset, now_ms)
        if hw_moved:
            self._complete_parked_fetches(state, now_ms)
        if request.fetch_offset >= self.log.end_offset and request.max_wait_ms > 0 and not hw_moved:
            self._parked.append(_ParkedFetch(source, request, now_ms + request.max_wait_ms))
            return
        self._answer_fetch(state, source, request)

    def _answer_fetch(
        self,
        state: LeaderState,
        source: int,
        request: FetchRequest,
        validation: Diverging | SnapshotNeeded | None = None,
    ) -> None:
        records = b""
        if validation is None and request.fetch_offset < self.log.end_offset:
            records = self.log.read(request.fetch_offset, request.max_bytes)
        self.send(
            source,
            FetchResponse(
                correlation_id=request.correlation_id,
                error_code=ErrorCode.none,
                leader_id=self.node_id,
                leader_epoch=state.epoch,
                high_watermark=-1 if state.high_watermark is None else state.high_watermark,
                log_start_offset=self.log.start_offset,
                diverging_epoch=validation.end if isinstance(validation, Diverging) else None,
                snapshot_id=validation.snapshot_id if isinstance(validation, SnapshotNeeded) else None,
                records=records,
            ),
        )

    def _complete_parked_fetches(self, state: LeaderState, now_ms: int) -> None:
        parked, self._parked = self._parked, []
        for fetch in parked:
            self._answer_fetch(state, fetch.source_id, fetch.request)

    def handle_fetch_snapshot_request(self, source: int, request: FetchSnapshotRequest, now_ms: int) -> None:
        chunk_bytes = self.config.snapshot_chunk_bytes
        self.send(source, answer_fetch_snapshot(self.quorum, self.log, source, request, chunk_bytes))

    # -- Fetch: the follower's side ------------------------------------------------------------

    def maybe_send_fetch(self, state: FollowerState, now_ms: int) -> None:
        if self._snapshot_fetch is not None:
            correlation = next(self._correlation)
            self._inflight = _Inflight(correlation, state.leader, now_ms)
            chunk_bytes = self.config.snapshot_chunk_bytes
            self.send(
                state.leader,
                self._snapshot_fetch.request(
                    correlation, self.node_id, state.epoch, chunk_bytes, self.membership.own_directory_id()
                ),
            )
            return
        self._send_fetch(state.leader, now_ms)

    def _send_fetch(self, destination: int, now_ms: int) -> None:
        correlation = next(self._correlation)
        self._inflight = _Inflight(correlation, destination, now_ms)
        self.send(
            destination,
            FetchRequest(
                correlation_id=correlation,
                replica_id=self.node_id,
                current_leader_epoch=self.quorum.epoch,
                fetch_offset=self.log.end_offset,
                last_fetched_epoch=self.log.last_fetched_epoch,
                max_wait_ms=self.config.fetch_max_wait_ms,
                max_bytes=self.config.fetch_max_bytes,
                replica_directory_id=self.membership.own_directory_id(),
            ),
        )

    def _take_inflight(self, source: int, correlation_id: int) -> bool:
        """True if this is the answer to the request still awaited (else it is stale: ignore it)."""
        inflight = self._inflight
        if inflight is None or inflight.correlation_id != correlation_id or inflight.destination_id != source:
            return False
        self._inflight = None
        return True

    def handle_fetch_response(self, source: int, response: FetchResponse, now_ms: int) -> None:
        if not self._take_inflight(source, response.correlation_id):
            return
        if self.maybe_handle_common_response(response.leader_epoch, response.leader_id, now_ms):
            return
        state = self.quorum.state
        if (
            response.error_code != ErrorCode.none
            or not isinstance(state, FollowerState)
            or state.leader != source
            or response.leader_epoch != state.epoch
        ):
            self._backoff_until_ms = now_ms + self.config.retry_backoff_ms
            return
        state.fetch_deadline_ms = now_ms + self._fetch_timeout_ms()
        state.last_fetched_ms = now_ms
        if response.diverging_epoch is not None:
            self.log.truncate_to_diverging(response.diverging_epoch, self.publisher.offset)
            if self.membership.truncated(self.log.end_offset):
                self._apply_voters(now_ms)
            return
        if response.snapshot_id is not None:
            self._snapshot_fetch = SnapshotDownload(response.snapshot_id)
            return
        if response.records:
            self.log.append_as_follower(response.records)
            if self.membership.read_fetched(response.records, self.log.end_offset):
                self._apply_voters(now_ms)
            if self.quorum.is_voter or self.membership.dynamic:  # Kafka's followersAlwaysFlush
                self.log.flush()
        state.update_high_watermark(response.high_watermark, self.log.end_offset)

    def handle_fetch_snapshot_response(
        self, source: int, response: FetchSnapshotResponse, now_ms: int
    ) -> None:
        if not self._take_inflight(source, response.correlation_id):
            return
        if self.maybe_handle_common_response(response.leader_epoch, response.leader_id, now_ms):
            return
        state = self.quorum.state
        partial = self._snapshot_fetch
        if not isinstance(state, FollowerState) or partial is None:
            return
        if response.error_code != ErrorCode.none or response.snapshot_id != partial.snapshot_id:
            self._snapshot_fetch = None  # fetch the log again: the leader says what is needed now
            self._backoff_until_ms = now_ms + self.config.retry_backoff_ms
            return
        if not partial.is_next_chunk(response):
            return
        state.fetch_deadline_ms = now_ms + self._fetch_timeout_ms()
        state.last_fetched_ms = now_ms
        snapshot = partial.add(response)
        if snapshot is not None:
            self._snapshot_fetch = None
            self.log.install_snapshot(snapshot)
            if self.membership.installed(snapshot):
                self._apply_voters(now_ms)
            state.update_high_watermark(snapshot.snapshot_id.offset, self.log.end_offset)

    def next_correlation_id(self) -> int:
        return next(self._correlation)

    def send(self, destination: int, body: Any) -> None:
        self._outbound.append(Envelope(source_id=self.node_id, destination_id=destination, body=body))
