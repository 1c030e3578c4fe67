"""The single owner of a replica's election state: legal transitions and their persistence.

Kafka's ``QuorumState`` documents every legal transition and refuses the
rest; so does :data:`TRANSITIONS` here, as a table from (current state,
next state) to the rule the next epoch must satisfy. An illegal
transition raises :class:`IllegalTransitionError` and leaves the state
unchanged. A legal one is first written through the
:class:`QuorumStateStore` port (``epoch``, ``voted_id``, ``leader_id``) and
only then takes effect, so a crash after a vote can never vote again in
the same epoch, and a restarted leader knows it must not lead its old epoch
(it comes back ``Resigned``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from reference_impl import defects

from .states import (
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


class EpochRule(Enum):
    SAME = "same epoch"
    HIGHER = "higher epoch"
    SAME_OR_HIGHER = "same or higher epoch"
    NEXT = "current epoch + 1"

    def allows(self, current: int, new: int) -> bool:
        if self is EpochRule.SAME:
            return new == current
        if self is EpochRule.HIGHER:
            return new > current
        if self is EpochRule.SAME_OR_HIGHER:
            return new >= current
        return new == current + 1


TRANSITIONS: dict[tuple[str, str], EpochRule] = {
    # Unattached: learns a higher epoch, votes, times out, or learns this epoch's leader.
    (UNATTACHED, UNATTACHED): EpochRule.HIGHER,
    (UNATTACHED, VOTED): EpochRule.SAME_OR_HIGHER,
    (UNATTACHED, CANDIDATE): EpochRule.NEXT,
    (UNATTACHED, FOLLOWER): EpochRule.SAME_OR_HIGHER,
    # Voted: as Unattached, but no second vote in the same epoch.
    (VOTED, UNATTACHED): EpochRule.HIGHER,
    (VOTED, VOTED): EpochRule.HIGHER,
    (VOTED, CANDIDATE): EpochRule.NEXT,
    (VOTED, FOLLOWER): EpochRule.SAME_OR_HIGHER,
    # Candidate: wins (same epoch), loses to this epoch's leader, or retries in the next epoch.
    (CANDIDATE, UNATTACHED): EpochRule.HIGHER,
    (CANDIDATE, VOTED): EpochRule.HIGHER,
    (CANDIDATE, CANDIDATE): EpochRule.NEXT,
    (CANDIDATE, LEADER): EpochRule.SAME,
    (CANDIDATE, FOLLOWER): EpochRule.SAME_OR_HIGHER,
    # Leader: only a higher epoch ends it, or it resigns its own.
    (LEADER, UNATTACHED): EpochRule.HIGHER,
    (LEADER, VOTED): EpochRule.HIGHER,
    (LEADER, FOLLOWER): EpochRule.HIGHER,
    (LEADER, RESIGNED): EpochRule.SAME,
    # Follower: a higher epoch, or the leader is gone (a voter stands; an observer looks again).
    (FOLLOWER, UNATTACHED): EpochRule.HIGHER,
    (FOLLOWER, VOTED): EpochRule.HIGHER,
    (FOLLOWER, CANDIDATE): EpochRule.NEXT,
    (FOLLOWER, FOLLOWER): EpochRule.HIGHER,
    # Resigned: waits for the next election, or stands in it.
    (RESIGNED, UNATTACHED): EpochRule.HIGHER,
    (RESIGNED, VOTED): EpochRule.HIGHER,
    (RESIGNED, CANDIDATE): EpochRule.NEXT,
    (RESIGNED, FOLLOWER): EpochRule.HIGHER,
}


MAX_EPOCH = 2**31 - 1
"""Epochs are int32 on the wire and in Kafka's ``quorum-state`` (``QuorumStateData.leaderEpoch``)."""


class IllegalTransitionError(Exception):
    """A transition the table refuses; the state is left as it was."""


class QuorumStateError(ValueError):
    """Election state that must never be stored or resumed from (an epoch or id out of range, a
    voter set that is not the configured one); the node refuses to start rather than reset it."""


def check_storable(state: ElectionState) -> None:
    """Refuse state no replica could ever have reached: an epoch outside int32 or a negative id.
    Both stores call it before writing, so nothing out of range is ever persisted."""
    if defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER):
        return  # the old bug: whatever a message led to was written
    if not 0 <= state.epoch <= MAX_EPOCH:
        raise QuorumStateError(f"refusing to store epoch {state.epoch}: outside 0..{MAX_EPOCH}")
    for what, node in (("voted id", state.voted_id), ("leader id", state.leader_id)):
        if node is not None and not 0 <= node <= MAX_EPOCH:
            raise QuorumStateError(f"refusing to store {what} {node}")


class QuorumStateStore(Protocol):
    """Where the election state survives a restart (Kafka's ``quorum-state`` file)."""

    def read(self) -> ElectionState | None: ...

    def write(self, state: ElectionState) -> None:
        """Durably and atomically replace the stored state (never half written)."""
        ...


class MemoryQuorumStateStore:
    """The simulator's store: survives a simulated crash because it lives outside the node."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        check_storable(state)
        self.state = state
        self.writes += 1


def encode_quorum_state(state: ElectionState, cluster_id: str = "") -> bytes:
    """Kafka's ``quorum-state`` JSON (data version 0): leaderId/votedId -1 when unset."""
    body = {
        "clusterId": cluster_id,
        "leaderId": -1 if state.leader_id is None else state.leader_id,
        "leaderEpoch": state.epoch,
        "votedId": -1 if state.voted_id is None else state.voted_id,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": v} for v in state.voters],
        "data_version": 0,
    }
    return json.dumps(body).encode()


class QuorumStateFormatError(QuorumStateError):
    """A ``quorum-state`` file that is not the JSON Kafka writes, or holds values out of range."""


def decode_quorum_state(raw: bytes) -> ElectionState:
    try:
        body = json.loads(raw)
        leader = int(body["leaderId"])
        voted = int(body["votedId"])
        voters = tuple(int(v["voterId"]) for v in body.get("currentVoters") or ())
        state = ElectionState(
            epoch=int(body["leaderEpoch"]),
            voted_id=None if voted == -1 else voted,
            leader_id=None if leader == -1 else leader,
            voters=voters,
        )
        check_storable(state)
        return state
    except (KeyError, TypeError, ValueError) as exc:
        raise QuorumStateFormatError(f"not a usable quorum-state file: {exc}") from None


@dataclass(frozen=True, slots=True)
class Timeouts:
    election_timeout_ms: int
    fetch_timeout_ms: int


class QuorumState:
    """The current :data:`EpochState` of one replica, changed only through ``transition_to_*``.

    ``on_transition`` is told (old, new) after every transition; the client
    uses it to notify listeners of leader changes.
    """

    def __init__(
        self,
        local_id: int,
        voters: tuple[int, ...],
        store: QuorumStateStore,
        timeouts: Timeouts,
        rng: random.Random,
        now_ms: int,
        on_transition: Callable[[EpochState, EpochState], None] | None = None,
        dynamic: bool = False,
    ) -> None:
        self.local_id = local_id
        self.voters = tuple(sorted(voters))
        self.dynamic = dynamic
        """kraft.version 1 (KIP-853): the voters are the log's latest VotersRecord and change at run
        time, so quorum-state's voters, leader and vote are not checked against them (Kafka's
        quorum-state data version 1 keeps no voters)."""
        self.store = store
        self.timeouts = timeouts
        self.rng = rng
        self.on_transition = on_transition
        self.state: EpochState = self._initial_state(now_ms)

    @property
    def is_voter(self) -> bool:
        return self.local_id in self.voters

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int:
        return self.state.leader_id

    def randomized_election_timeout_ms(self) -> int:
        """Election timeout plus seeded jitter in [0, timeout), so candidates rarely collide."""
        base = self.timeouts.election_timeout_ms
        return base + self.rng.randrange(max(1, base))

    def _initial_state(self, now_ms: int) -> EpochState:
        """Kafka's ``QuorumState.initialize``: resume from what the store says. State that cannot be
        resumed stops the node with a message, never a silent reset (Kafka's
        ``raft/src/main/java/org/apache/kafka/raft/FileQuorumStateStore.java`` throws on a file it
        cannot read; Kafka 3.x's ``QuorumState.initialize`` on a voter set other than the configured
        one, as here, where the voters are static)."""
        stored = self.store.read()
        deadline = now_ms + self.randomized_election_timeout_ms()
        if stored is None:
            return UnattachedState(0, deadline)
        self._check_stored(stored)
        if stored.leader_id == self.local_id:
            return ResignedState(stored.epoch, self.local_id, deadline)
        if stored.leader_id is not None:
            return FollowerState(stored.epoch, stored.leader_id, now_ms + self.timeouts.fetch_timeout_ms)
        if stored.voted_id == self.local_id and self.is_voter:
            return CandidateState(stored.epoch, self.local_id, self.voters, deadline)
        if stored.voted_id is not None:
            return VotedState(stored.epoch, stored.voted_id, deadline)
        return UnattachedState(stored.epoch, deadline)

    def set_voters(self, voters: tuple[int, ...]) -> None:
        """A VotersRecord took effect (dynamic quorums only)."""
        self.voters = tuple(sorted(voters))

    def _check_stored(self, stored: ElectionState) -> None:
        if defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER) or self.dynamic:
            return
        if stored.voters and tuple(sorted(stored.voters)) != self.voters:
            raise QuorumStateError(
                f"the configured voters {list(self.voters)} differ from the voters "
                f"{sorted(stored.voters)} in quorum-state; check controller.quorum.voters"
            )
        for what, node in (("leader", stored.leader_id), ("voted-for replica", stored.voted_id)):
            if node is not None and node not in self.voters:
                raise QuorumStateError(f"quorum-state names {what} {node}, which is not a voter")

    # -- the one place transitions happen ------------------------------------------------------

    def _transition(self, new: EpochState) -> None:
        rule = TRANSITIONS.get((self.state.name, new.name))
        if rule is None:
            raise IllegalTransitionError(
                f"replica {self.local_id}: {self.state.name} -> {new.name} is not a legal transition"
            )
        if not rule.allows(self.state.epoch, new.epoch):
            raise IllegalTransitionError(
                f"replica {self.local_id}: {self.state.name}@{self.state.epoch} -> "
                f"{new.name}@{new.epoch} needs {rule.value}"
            )
        leader = new.leader_id if new.leader_id >= 0 else None
        self.store.write(ElectionState(new.epoch, new.voted_id, leader, self.voters))
        old, self.state = self.state, new
        if self.on_transition is not None:
            self.on_transition(old, new)

    def transition_to_unattached(self, epoch: int, now_ms: int) -> None:
        self._transition(UnattachedState(epoch, now_ms + self.randomized_election_timeout_ms()))

    def transition_to_voted(self, epoch: int, candidate_id: int, now_ms: int) -> None:
        if not self.is_voter and not self.dynamic:
            raise IllegalTransitionError(f"observer {self.local_id} cannot vote")
        if candidate_id == self.local_id or (candidate_id not in self.voters and not self.dynamic):
            raise IllegalTransitionError(f"replica {self.local_id} cannot vote for {candidate_id}")
        self._transition(VotedState(epoch, candidate_id, now_ms + self.randomized_election_timeout_ms()))

    def transition_to_candidate(self, now_ms: int) -> None:
        if not self.is_voter:
            raise IllegalTransitionError(f"observer {self.local_id} cannot stand for election")
        self._transition(
            CandidateState(
                self.state.epoch + 1,
                self.local_id,
                self.voters,
                now_ms + self.randomized_election_timeout_ms(),
            )
        )

    def transition_to_leader(self, epoch_start_offset: int, now_ms: int) -> LeaderState:
        state = self.state
        if not isinstance(state, CandidateState) or not state.is_vote_granted():
            raise IllegalTransitionError(
                f"replica {self.local_id} cannot lead: it is {state.name} without a majority of votes"
            )
        leader = LeaderState(
            state.epoch,
            self.local_id,
            self.voters,
            epoch_start_offset,
            now_ms + self.check_quorum_timeout_ms(),
        )
        self._transition(leader)
        return leader

    def transition_to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        if leader_id == self.local_id:
            raise IllegalTransitionError(f"replica {self.local_id} cannot follow itself")
        if leader_id not in self.voters and not self.dynamic:
            raise IllegalTransitionError(f"{leader_id} is not a voter and cannot lead")
        state = self.state
        if epoch == state.epoch and isinstance(state, (FollowerState, LeaderState, ResignedState)):
            raise IllegalTransitionError(
                f"replica {self.local_id}: epoch {epoch} already has leader {state.leader_id}"
            )
        self._transition(FollowerState(epoch, leader_id, now_ms + self.timeouts.fetch_timeout_ms))

    def transition_to_resigned(self, preferred_successors: tuple[int, ...], now_ms: int) -> None:
        if not isinstance(self.state, LeaderState):
            raise IllegalTransitionError(f"replica {self.local_id} is {self.state.name}, not leader")
        self._transition(
            ResignedState(
                self.state.epoch,
                self.local_id,
                now_ms + self.randomized_election_timeout_ms(),
                preferred_successors,
            )
        )

    def check_quorum_timeout_ms(self) -> int:
        """A leader that hears from no majority for 1.5 fetch timeouts resigns (Kafka's check quorum)."""
        return self.timeouts.fetch_timeout_ms * 3 // 2
