"""A classic group's state, its members, and the table of legal state transitions.

States, their names on the wire (DescribeGroups, ListGroups) and the legal
previous states are Kafka's ``ClassicGroupState``. :meth:`ClassicGroup.transition_to`
refuses anything the table does not allow and leaves the group unchanged;
:mod:`.membership` is the only module that calls it, so every transition of
the state machine is decided in one place.

The bookkeeping here (members awaiting a join, pending members who were
handed an id with MEMBER_ID_REQUIRED, static members by instance id, the
protocol votes) keeps the counts Kafka keeps, so "all members have rejoined"
and "a protocol every member supports" are answered the same way.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.errors import ErrorCode

JoinReply = Callable[[dict[str, Any]], None]
"""Answers a parked JoinGroup with the fields of its response."""
SyncReply = Callable[[dict[str, Any]], None]
"""Answers a parked SyncGroup with the fields of its response."""


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState
VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset({_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
}


class IllegalTransitionError(RuntimeError):
    """A transition the table does not allow: a bug in the coordinator, never the client's fault."""


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    metadata: bytes


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    assignment: bytes = b""
    join_reply: JoinReply | None = None
    sync_reply: SyncReply | None = None
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_reply is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_reply is not None

    def metadata_for(self, protocol: str | None) -> bytes:
        for p in self.protocols:
            if p.name == protocol:
                return p.metadata
        return b""

    def matches(self, protocols: Sequence[Protocol]) -> bool:
        return tuple(protocols) == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for p in self.protocols:
            if p.name in candidates:
                return p.name
        raise IllegalTransitionError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """A member waiting in a rebalance is alive by definition, unless it is new (Kafka's rule)."""
        return not self.is_new and (self.awaiting_join or self.awaiting_sync)


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    new_member_added: bool = False
    subscribed_topics: frozenset[str] | None = None
    """Topics the members subscribe to (consumer protocol only; None when unknown)."""

    # -- state --------------------------------------------------------------------------------

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, to: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[to]:
            raise IllegalTransitionError(f"group {self.group_id}: {self.state.value} -> {to.value}")
        self.previous_state = self.state
        self.state = to
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # -- members ------------------------------------------------------------------------------

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise IllegalTransitionError(f"static member {member.group_instance_id} is already a member")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> tuple[Member, Member]:
        """The restarted static member takes over the old member's place (and assignment) under ``new_id``."""
        old = self.members.pop(old_id)
        new = Member(
            new_id,
            old.group_instance_id,
            old.client_id,
            old.client_host,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocol_type,
            old.protocols,
            assignment=old.assignment,
        )
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return old, new

    def validate_member(self, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """Kafka's ``validateMember``: UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID, else None."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                return ErrorCode.unknown_member_id
            if existing != member_id:
                return ErrorCode.fenced_instance_id
        if member_id not in self.members:
            return ErrorCode.unknown_member_id
        return None

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols ----------------------------------------------------------------------------

    def _candidates(self) -> set[str]:
        counts: dict[str, int] = {}
        for m in self.members.values():
            for p in m.protocols:
                counts[p.name] = counts.get(p.name, 0) + 1
        return {name for name, n in counts.items() if n == len(self.members)}

    def supports_protocols(self, protocol_type: str, names: Sequence[str]) -> bool:
        """Could a member with these protocols join? (Kafka's ``supportsProtocols``.)"""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        candidates = self._candidates()
        return self.protocol_type == protocol_type and any(n in candidates for n in names)

    def select_protocol(self) -> str:
        """Each member votes for its preferred common protocol; the most votes win (ties: first named)."""
        candidates = self._candidates()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != "consumer":
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_subscription_topics(m.metadata_for(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.protocol_type == "consumer"

    def join_members(self) -> list[dict[str, Any]]:
        """The members as the leader's JoinGroup response lists them (metadata of the chosen protocol)."""
        return [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": m.metadata_for(self.protocol_name),
            }
            for m in self.members.values()
        ]


def parse_subscription_topics(data: bytes) -> list[str] | None:
    """Topics of a ConsumerProtocolSubscription (the v0 prefix every version shares), None if unreadable."""
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        if version < 0:
            return None
        (count,) = struct.unpack_from(">i", data, 2)
        pos, topics = 6, []
        for _ in range(count):
            (length,) = struct.unpack_from(">h", data, pos)
            pos += 2
            if length < 0 or pos + length > len(data):
                return None
            topics.append(data[pos : pos + length].decode())
            pos += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
