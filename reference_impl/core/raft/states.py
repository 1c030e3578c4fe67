"""One class per election state of a KRaft replica (Kafka's ``EpochState`` family).

Each state holds what only that state needs (a candidate's vote tally, a
leader's view of every replica's progress, a follower's fetch timer) and
answers the questions the client asks of it: may I grant this vote, when
does my timer fire. None of them changes which state the replica is in:
:class:`reference_impl.core.raft.quorum_state.QuorumState` alone does that.

The states, as in Kafka 3.x:

* ``Unattached``: knows the epoch, no leader, has not voted in it;
* ``Voted``: has voted for a candidate in this epoch (persisted, so a restart cannot vote twice);
* ``Candidate``: asking for votes in its own epoch;
* ``Leader``: won; tracks replicas' fetch offsets to advance the high watermark;
* ``Follower``: knows the leader of the epoch and fetches from it;
* ``Resigned``: was leader of this epoch and gave it up (shutdown, lost quorum, or a
  restart found it had been leader); it never leads this epoch again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from .messages import NO_LEADER, DescribeQuorumResponse, ReplicaState

MAX_OBSERVERS = 1024
"""Observers a leader keeps track of (Kafka forgets one after five silent minutes); any replica id
may fetch, so the table must not grow with whatever ids a client sends."""

UNATTACHED = "Unattached"
VOTED = "Voted"
CANDIDATE = "Candidate"
LEADER = "Leader"
FOLLOWER = "Follower"
RESIGNED = "Resigned"


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What is persisted on every transition (Kafka's ``quorum-state`` file)."""

    epoch: int
    voted_id: int | None
    leader_id: int | None
    voters: tuple[int, ...]


class _NoLeaderKnown:
    """Unattached, Voted, Candidate: the epoch has no known leader yet."""

    __slots__ = ()

    @property
    def leader_id(self) -> int:
        return NO_LEADER


class _LeaderKnown:
    """Leader, Follower, Resigned: the epoch has a leader, so no vote is cast in it."""

    __slots__ = ()

    @property
    def voted_id(self) -> int | None:
        return None

    def can_grant_vote(self, candidate_id: int, log_up_to_date: bool) -> bool:
        return False


@dataclass(slots=True)
class UnattachedState(_NoLeaderKnown):
    epoch: int
    election_deadline_ms: int
    name: str = UNATTACHED

    @property
    def voted_id(self) -> int | None:
        return None

    def can_grant_vote(self, candidate_id: int, log_up_to_date: bool) -> bool:
        """No vote cast in this epoch yet: any candidate with an up-to-date log gets it."""
        return log_up_to_date


@dataclass(slots=True)
class VotedState(_NoLeaderKnown):
    epoch: int
    candidate_id: int
    election_deadline_ms: int
    name: str = VOTED

    @property
    def voted_id(self) -> int | None:
        return self.candidate_id

    def can_grant_vote(self, candidate_id: int, log_up_to_date: bool) -> bool:
        """Only the candidate already voted for (a retried request) gets the vote again."""
        return candidate_id == self.candidate_id


@dataclass(slots=True)
class CandidateState(_NoLeaderKnown):
    epoch: int
    local_id: int
    voters: tuple[int, ...]
    election_deadline_ms: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    name: str = CANDIDATE

    def __post_init__(self) -> None:
        self.granted.add(self.local_id)

    @property
    def voted_id(self) -> int | None:
        return self.local_id

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def record_vote(self, voter_id: int, granted: bool) -> None:
        if voter_id not in self.voters or voter_id == self.local_id:
            return
        (self.granted if granted else self.rejected).add(voter_id)

    def is_vote_granted(self) -> bool:
        return len(self.granted) >= self.majority

    def is_vote_rejected(self) -> bool:
        """Enough voters said no that a majority can no longer be reached in this epoch."""
        return len(self.voters) - len(self.rejected) < self.majority

    def unanswered(self) -> list[int]:
        return [v for v in self.voters if v not in self.granted and v not in self.rejected]

    def can_grant_vote(self, candidate_id: int, log_up_to_date: bool) -> bool:
        """A candidate has voted for itself."""
        return False


@dataclass(slots=True)
class ReplicaProgress:
    """A replica's position as the leader learnt it from its fetches."""

    replica_id: int
    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1

    def as_replica_state(self) -> ReplicaState:
        return ReplicaState(
            replica_id=self.replica_id,
            log_end_offset=self.end_offset,
            last_fetch_timestamp=self.last_fetch_ms,
            last_caught_up_timestamp=self.last_caught_up_ms,
        )


@dataclass(slots=True)
class LeaderState(_LeaderKnown):
    epoch: int
    local_id: int
    voters: tuple[int, ...]
    epoch_start_offset: int
    """The log end when this replica won: the high watermark moves only past it (Raft's
    "commit only entries of the current term" rule, KIP-595)."""
    check_quorum_deadline_ms: int
    high_watermark: int | None = None
    progress: dict[int, ReplicaProgress] = field(default_factory=dict)
    observers: dict[int, ReplicaProgress] = field(default_factory=dict)
    begin_epoch_acked: set[int] = field(default_factory=set)
    fetched_since_check: set[int] = field(default_factory=set)
    hw_voters: tuple[int, ...] | None = None
    """The seeded bug mode ``voters-old-majority`` only: the old set whose majority the high
    watermark counts while a voter change is uncommitted (None: the current ``voters``)."""
    name: str = LEADER

    def __post_init__(self) -> None:
        for voter in self.voters:
            self.progress.setdefault(voter, ReplicaProgress(voter))
        self.begin_epoch_acked.add(self.local_id)
        self.fetched_since_check.add(self.local_id)

    @property
    def leader_id(self) -> int:
        return self.local_id

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def set_voters(self, voters: tuple[int, ...]) -> bool:
        """A VotersRecord took effect (KIP-853, uncommitted): an added voter's progress moves from
        the observers, a removed one's back to them; True if the high watermark moved."""
        for gone in set(self.voters) - set(voters) - {self.local_id}:
            progress = self.progress.pop(gone, None)
            if progress is not None:
                self.observers[gone] = progress
        for new in voters:
            if new not in self.progress:
                known = self.observers.pop(new, None)
                self.progress[new] = known if known is not None else ReplicaProgress(new)
        self.voters = voters
        return self._maybe_advance_high_watermark()

    def update_local_end_offset(self, flushed_end_offset: int, now_ms: int) -> bool:
        """The leader's own durable end; True if the high watermark moved."""
        own = self.progress[self.local_id]
        own.end_offset = flushed_end_offset
        own.last_fetch_ms = own.last_caught_up_ms = now_ms
        return self._maybe_advance_high_watermark()

    def update_replica(self, replica_id: int, fetch_offset: int, leader_end_offset: int, now_ms: int) -> bool:
        """A fetch from ``replica_id`` at ``fetch_offset``; True if the high watermark moved. A
        negative id is no replica (a consumer: Kafka's ``LeaderState.updateReplicaState`` ignores
        it); at most :data:`MAX_OBSERVERS` observers are tracked, the longest silent dropped."""
        if replica_id < 0:
            return False
        table = self.progress if replica_id in self.voters else self.observers
        if replica_id not in table and table is self.observers and len(table) >= MAX_OBSERVERS:
            del table[min(table, key=lambda r: table[r].last_fetch_ms)]
        replica = table.setdefault(replica_id, ReplicaProgress(replica_id))
        replica.end_offset = fetch_offset
        replica.last_fetch_ms = now_ms
        if fetch_offset >= leader_end_offset:
            replica.last_caught_up_ms = now_ms
        if replica_id not in self.voters:
            return False
        self.fetched_since_check.add(replica_id)
        self.begin_epoch_acked.add(replica_id)
        return self._maybe_advance_high_watermark()

    def _maybe_advance_high_watermark(self) -> bool:
        """HW = the largest offset a majority of voters hold durably, once past the epoch start."""
        counted = self.voters if self.hw_voters is None else self.hw_voters
        offsets = sorted((self._end_offset(v) for v in counted), reverse=True)
        candidate = offsets[len(counted) // 2]
        if candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def _end_offset(self, replica_id: int) -> int:
        progress = self.progress.get(replica_id) or self.observers.get(replica_id)
        return -1 if progress is None else progress.end_offset

    def has_quorum_contact(self) -> bool:
        """A majority of voters (itself included) fetched since the last check-quorum period."""
        return len(self.fetched_since_check & set(self.voters)) >= self.majority

    def describe(self) -> tuple[tuple[ReplicaState, ...], tuple[ReplicaState, ...]]:
        voters = tuple(self.progress[v].as_replica_state() for v in self.voters)
        observers = tuple(p.as_replica_state() for _id, p in sorted(self.observers.items()))
        return voters, observers


@dataclass(slots=True)
class FollowerState(_LeaderKnown):
    epoch: int
    leader: int
    fetch_deadline_ms: int
    """No successful fetch by then: the leader is presumed gone (a voter stands for election)."""
    high_watermark: int | None = None
    last_fetched_ms: int | None = None
    """When a fetch from the leader last succeeded (None: not in this state, or the leader resigned):
    a follower that heard from its leader lately refuses to be drawn into an election."""
    name: str = FOLLOWER

    @property
    def leader_id(self) -> int:
        return self.leader

    def update_high_watermark(self, leader_high_watermark: int, log_end_offset: int) -> bool:
        """HW = min(leader's HW, own log end), never moving back within the epoch."""
        if leader_high_watermark < 0:
            return False
        new = min(leader_high_watermark, log_end_offset)
        if self.high_watermark is not None and new <= self.high_watermark:
            return False
        self.high_watermark = new
        return True


@dataclass(slots=True)
class ResignedState(_LeaderKnown):
    epoch: int
    local_id: int
    election_deadline_ms: int
    preferred_successors: tuple[int, ...] = ()
    name: str = RESIGNED

    @property
    def leader_id(self) -> int:
        return self.local_id


EpochState = UnattachedState | VotedState | CandidateState | LeaderState | FollowerState | ResignedState


def describe_quorum(state: EpochState, correlation_id: int = 0) -> DescribeQuorumResponse:
    """DescribeQuorum as this replica answers it: the voters' and observers' progress when it
    leads, NOT_LEADER_OR_FOLLOWER (with the leader it knows) otherwise."""
    if not isinstance(state, LeaderState):
        return DescribeQuorumResponse(
            correlation_id=correlation_id,
            error_code=ErrorCode.not_leader_or_follower,
            leader_id=state.leader_id,
            leader_epoch=state.epoch,
            high_watermark=-1,
            current_voters=(),
            observers=(),
        )
    voters, observers = state.describe()
    return DescribeQuorumResponse(
        correlation_id=correlation_id,
        error_code=ErrorCode.none,
        leader_id=state.local_id,
        leader_epoch=state.epoch,
        high_watermark=-1 if state.high_watermark is None else state.high_watermark,
        current_voters=voters,
        observers=observers,
    )
