"""The classic group membership protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers.

This module decides every state transition of a group (Kafka's
``GroupMetadataManager`` for classic groups, as Kafka 4 ships it):

* Empty → PreparingRebalance when a member joins; a new group waits
  ``group.initial.rebalance.delay.ms`` (extended while members keep coming,
  up to the rebalance timeout) before the first generation.
* PreparingRebalance → CompletingRebalance as soon as every known member has
  rejoined (and no member handed an id with MEMBER_ID_REQUIRED is still
  out), or at the rebalance timeout; dynamic members that did not rejoin are
  dropped, a leader that did not rejoin is replaced, the generation goes up,
  the protocol every member supports with the most votes is chosen, and the
  leader alone receives the members' metadata.
* CompletingRebalance → Stable when the leader's SyncGroup assignment is
  stored in ``__consumer_offsets``; every parked SyncGroup then gets its
  member's assignment. Members that do not sync within the rebalance timeout
  are removed.
* Stable/CompletingRebalance → PreparingRebalance when a member joins, the
  leader or a member with new metadata rejoins, a member leaves or its
  session expires; PreparingRebalance → Empty when no member is left.
* A static member (``group.instance.id``, KIP-345) that rejoins with an
  unknown member id takes its old place and assignment; a Stable group does
  not rebalance for it. The old member id is fenced (FENCED_INSTANCE_ID).

Time is given, never read: timers go through :class:`MembershipHost`, which
puts them on the broker's timing wheel. Persistence goes through the host
too; the SyncGroup answers wait until the group's record is committed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from typing import Protocol as TypingProtocol

from reference_impl.protocol.errors import ErrorCode

from .state import ClassicGroup, GroupState, JoinReply, Member, Protocol, SyncReply

log = logging.getLogger("reference_impl.group")

_S = GroupState
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class MembershipHost(TypingProtocol):
    """What the membership protocol needs from the coordinator around it."""

    def initial_rebalance_delay_ms(self) -> int: ...

    def max_group_size(self) -> int: ...

    def schedule(self, key: tuple[str, ...], delay_ms: int, fn: Callable[[int], None]) -> None:
        """Run ``fn(now_ms)`` after ``delay_ms``, replacing any timer under ``key``."""

    def cancel(self, key: tuple[str, ...]) -> None: ...

    def store_group(
        self, group: ClassicGroup, assignment: dict[str, bytes], on_done: Callable[[ErrorCode], None]
    ) -> None:
        """Append the group's metadata record; ``on_done`` runs once it is committed (or failed)."""

    def new_member_id(self, prefix: str) -> str: ...


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[Protocol, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    api_version: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SyncRequest:
    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


def join_error(code: ErrorCode, member_id: str = "") -> dict[str, Any]:
    return {
        "error_code": code,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "skip_assignment": False,
        "member_id": member_id,
        "members": [],
    }


def sync_answer(
    code: ErrorCode, group: ClassicGroup | None = None, assignment: bytes = b""
) -> dict[str, Any]:
    ok = code is ErrorCode.none and group is not None
    return {
        "error_code": code,
        "protocol_type": group.protocol_type if ok and group else None,
        "protocol_name": group.protocol_name if ok and group else None,
        "assignment": assignment,
    }


def _heartbeat_key(group_id: str, member_id: str) -> tuple[str, ...]:
    return ("heartbeat", group_id, member_id)


def _join_key(group_id: str) -> tuple[str, ...]:
    return ("join", group_id)


def _sync_key(group_id: str) -> tuple[str, ...]:
    return ("sync", group_id)


class Membership:
    def __init__(self, groups: dict[str, ClassicGroup], host: MembershipHost) -> None:
        self.groups = groups
        self.host = host
        self.now_ms = 0

    # -- JoinGroup ----------------------------------------------------------------------------

    def join(self, req: JoinRequest, reply: JoinReply, now_ms: int) -> None:
        self.now_ms = now_ms
        group = self.groups.get(req.group_id)
        unknown = req.member_id == ""
        new_group = group is None
        if group is None:
            if not unknown:
                reply(join_error(ErrorCode.unknown_member_id, req.member_id))
                return
            group = self.groups[req.group_id] = ClassicGroup(req.group_id, state_timestamp_ms=now_ms)
        if not self._accept_joining_member(group, req.member_id):
            group.remove(req.member_id)
            reply(join_error(ErrorCode.group_max_size_reached))
        elif unknown:
            self._join_new_member(group, req, reply)
        else:
            self._join_existing_member(group, req, reply)
        if new_group and group.is_in(_S.EMPTY, _S.PREPARING_REBALANCE) and not group.members:
            self.host.store_group(group, {}, lambda _code: None)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.host.max_group_size()
        if group.is_in(_S.EMPTY, _S.DEAD):
            return True
        if group.is_in(_S.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or group.num_awaiting_join() < limit
        return member_id in group.members or len(group.members) < limit

    def _join_new_member(self, group: ClassicGroup, req: JoinRequest, reply: JoinReply) -> None:
        if group.is_in(_S.DEAD):
            reply(join_error(ErrorCode.coordinator_not_available))
            return
        if not group.supports_protocols(req.protocol_type, [p.name for p in req.protocols]):
            reply(join_error(ErrorCode.inconsistent_group_protocol))
            return
        new_id = self.host.new_member_id(req.group_instance_id or req.client_id)
        if req.group_instance_id is not None:
            existing = group.static_members.get(req.group_instance_id)
            if existing is not None:
                self._rejoin_static_member(group, req, existing, new_id, reply)
            else:
                self._add_member_then_rebalance(group, req, new_id, reply)
        elif req.api_version >= 4:
            group.pending_members.add(new_id)
            self.host.schedule(
                _heartbeat_key(group.group_id, new_id),
                req.session_timeout_ms,
                functools.partial(self._expire_heartbeat, group.group_id, new_id),
            )
            reply(join_error(ErrorCode.member_id_required, new_id))
        else:
            self._add_member_then_rebalance(group, req, new_id, reply)

    def _join_existing_member(self, group: ClassicGroup, req: JoinRequest, reply: JoinReply) -> None:
        member_id = req.member_id
        if group.is_in(_S.DEAD):
            reply(join_error(ErrorCode.coordinator_not_available, member_id))
            return
        if not group.supports_protocols(req.protocol_type, [p.name for p in req.protocols]):
            reply(join_error(ErrorCode.inconsistent_group_protocol, member_id))
            return
        if member_id in group.pending_members:
            self._add_member_then_rebalance(group, req, member_id, reply)
            return
        error = group.validate_member(member_id, req.group_instance_id)
        if error is not None:
            reply(join_error(error, member_id))
            return
        member = group.members[member_id]
        if group.is_in(_S.PREPARING_REBALANCE):
            self._update_member_then_rebalance(group, member, req, reply)
        elif group.is_in(_S.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                reply(self._current_generation(group, member_id, with_members=group.is_leader(member_id)))
            else:
                self._update_member_then_rebalance(group, member, req, reply)
        elif group.is_in(_S.STABLE):
            if group.is_leader(member_id) or not member.matches(req.protocols):
                self._update_member_then_rebalance(group, member, req, reply)
            else:
                reply(self._current_generation(group, member_id, with_members=False))
        else:
            reply(join_error(ErrorCode.unknown_member_id, member_id))

    def _current_generation(
        self, group: ClassicGroup, member_id: str, *, with_members: bool, leader: str | None = None
    ) -> dict[str, Any]:
        return {
            "error_code": ErrorCode.none,
            "generation_id": group.generation,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": leader if leader is not None else (group.leader_id or ""),
            "skip_assignment": False,
            "member_id": member_id,
            "members": group.join_members() if with_members else [],
        }

    def _add_member_then_rebalance(
        self, group: ClassicGroup, req: JoinRequest, member_id: str, reply: JoinReply
    ) -> None:
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            req.protocols,
            join_reply=reply,
            is_new=True,
        )
        if group.is_in(_S.PREPARING_REBALANCE) and group.previous_state is _S.EMPTY:
            group.new_member_added = True
        group.add(member)
        # A new member cannot heartbeat yet and its socket is muted while it waits: time the wait
        # out instead, so a client that gave up does not hold the rebalance forever.
        self._reschedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance_or_complete_join(
            group, f"new member {member_id} joined (client reason: {req.reason or 'not provided'})"
        )

    def _update_member_then_rebalance(
        self, group: ClassicGroup, member: Member, req: JoinRequest, reply: JoinReply
    ) -> None:
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_reply = reply
        self._maybe_prepare_rebalance_or_complete_join(
            group, f"member {member.member_id} rejoined (client reason: {req.reason or 'not provided'})"
        )

    def _rejoin_static_member(
        self, group: ClassicGroup, req: JoinRequest, old_id: str, new_id: str, reply: JoinReply
    ) -> None:
        assert req.group_instance_id is not None
        current_leader = group.leader_id
        old, new = group.replace_static_member(req.group_instance_id, old_id, new_id)
        if old.join_reply is not None:
            old.join_reply(join_error(ErrorCode.fenced_instance_id, old_id))
        if old.sync_reply is not None:
            old.sync_reply(sync_answer(ErrorCode.fenced_instance_id))
        self.host.cancel(_heartbeat_key(group.group_id, old_id))
        self._reschedule_heartbeat(group, new)
        new.protocols = req.protocols
        new.rebalance_timeout_ms = req.rebalance_timeout_ms
        new.session_timeout_ms = req.session_timeout_ms
        new.join_reply = reply
        log.info(
            "group %s: static member %s rejoined as %s in state %s",
            group.group_id,
            req.group_instance_id,
            new_id,
            group.state.value,
        )
        if group.is_in(_S.STABLE):
            if group.protocol_name != group.select_protocol():
                self._maybe_prepare_rebalance_or_complete_join(group, "static member changed protocol")
                return
            assignment = {m.member_id: m.assignment for m in group.members.values()}

            def stored(code: ErrorCode) -> None:
                if new.join_reply is None:
                    return
                answer, new.join_reply = new.join_reply, None
                if code is not ErrorCode.none:
                    group.replace_static_member(req.group_instance_id or "", new_id, old_id)
                    group.members[old_id].protocols = old.protocols
                    self._reschedule_heartbeat(group, group.members[old_id])
                    answer(join_error(code))
                elif req.api_version >= 9:
                    leader = group.is_leader(new_id)
                    response = self._current_generation(group, new_id, with_members=leader)
                    response["skip_assignment"] = leader
                    answer(response)
                else:
                    answer(
                        self._current_generation(
                            group, new_id, with_members=False, leader=current_leader or ""
                        )
                    )

            self.host.store_group(group, assignment, stored)
        elif group.is_in(_S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"static member {req.group_instance_id} rejoined")
        else:
            self._maybe_complete_join_phase(group)

    # -- rebalancing --------------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if not group.is_in(_S.PREPARING_REBALANCE):
            return
        if group.previous_state is _S.EMPTY and self.host.initial_rebalance_delay_ms() > 0:
            return  # the initial rebalance ends on its timer
        if group.has_all_members_joined():
            self._complete_join(group)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(_S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.rebalance_in_progress)
        self._remove_sync_expiration(group)
        initial = group.is_in(_S.EMPTY)
        group.transition_to(_S.PREPARING_REBALANCE, self.now_ms)
        log.info(
            "group %s preparing to rebalance (generation %d): %s", group.group_id, group.generation, reason
        )
        if not initial:
            self._maybe_complete_join_else_schedule(group)
            return
        delay = self.host.initial_rebalance_delay_ms()
        if delay == 0:
            self._complete_join(group)  # Kafka's zero-delay timer fires at once
            return
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        gid = group.group_id
        self.host.schedule(
            _join_key(gid),
            delay,
            lambda now: self._initial_rebalance_timer(gid, delay, remaining, now),
        )

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self._complete_join(group)
            return
        gid = group.group_id
        self.host.schedule(
            _join_key(gid), group.rebalance_timeout_ms(), lambda now: self._join_timer(gid, now)
        )

    def _join_timer(self, group_id: str, now_ms: int) -> None:
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _initial_rebalance_timer(self, group_id: str, delay: int, remaining: int, now_ms: int) -> None:
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.host.initial_rebalance_delay_ms(), remaining)
            new_remaining = max(remaining - delay, 0)
            self.host.schedule(
                _join_key(group_id),
                new_delay,
                lambda now: self._initial_rebalance_timer(group_id, new_delay, new_remaining, now),
            )
        else:
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        self.host.cancel(_join_key(group.group_id))
        if not group.is_in(_S.PREPARING_REBALANCE):
            return
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:
                group.remove(member.member_id)
                self.host.cancel(_heartbeat_key(group.group_id, member.member_id))
        if group.members and not self._maybe_elect_new_joined_leader(group):
            log.warning("group %s: no member rejoined; waiting another rebalance timeout", group.group_id)
            gid = group.group_id
            self.host.schedule(
                _join_key(gid), group.rebalance_timeout_ms(), lambda now: self._join_timer(gid, now)
            )
            return
        self._init_next_generation(group)
        if group.is_in(_S.EMPTY):
            log.info("group %s is empty at generation %d", group.group_id, group.generation)
            self.host.store_group(group, {}, lambda _code: None)
            return
        log.info(
            "group %s stabilising generation %d with %d members, protocol %s, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol_name,
            group.leader_id,
        )
        for member in list(group.members.values()):
            response = self._current_generation(
                group, member.member_id, with_members=group.is_leader(member.member_id)
            )
            if member.join_reply is not None:
                answer, member.join_reply = member.join_reply, None
                answer(response)
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        gid, generation = group.group_id, group.generation
        self.host.schedule(
            _sync_key(gid),
            group.rebalance_timeout_ms(),
            lambda now: self._expire_pending_sync(gid, generation, now),
        )

    def _maybe_elect_new_joined_leader(self, group: ClassicGroup) -> bool:
        if group.leader_id is None:
            return False
        leader = group.members.get(group.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member in group.members.values():
            if member.awaiting_join:
                group.leader_id = member.member_id
                return True
        return False

    def _init_next_generation(self, group: ClassicGroup) -> None:
        group.generation += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            group.subscribed_topics = group.compute_subscribed_topics()
            group.transition_to(_S.COMPLETING_REBALANCE, self.now_ms)
        else:
            group.protocol_name = None
            group.subscribed_topics = group.compute_subscribed_topics()
            group.transition_to(_S.EMPTY, self.now_ms)
        group.pending_sync_members.clear()

    # -- SyncGroup ----------------------------------------------------------------------------

    def sync(self, req: SyncRequest, reply: SyncReply, now_ms: int) -> None:
        self.now_ms = now_ms
        group = self.groups.get(req.group_id)
        if group is None or group.is_in(_S.EMPTY):
            reply(sync_answer(ErrorCode.unknown_member_id))
            return
        member_id, generation = req.member_id, req.generation
        error = self._validate_sync(
            group, generation, member_id, req.group_instance_id, req.protocol_type, req.protocol_name
        )
        if error is not None:
            reply(sync_answer(error))
        elif group.is_in(_S.PREPARING_REBALANCE):
            reply(sync_answer(ErrorCode.rebalance_in_progress))
        elif group.is_in(_S.COMPLETING_REBALANCE):
            group.members[member_id].sync_reply = reply
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                self._store_assignment(group, generation, req.assignments)
        elif group.is_in(_S.STABLE):
            self._remove_pending_sync_member(group, member_id)
            reply(sync_answer(ErrorCode.none, group, group.members[member_id].assignment))

    def _validate_sync(
        self,
        group: ClassicGroup,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> ErrorCode | None:
        error = self._validate_generation(group, generation, member_id, instance_id)
        if error is not None:
            return error
        for asked, known in ((protocol_type, group.protocol_type), (protocol_name, group.protocol_name)):
            if asked is not None and known is not None and asked != known:
                return ErrorCode.inconsistent_group_protocol
        return None

    @staticmethod
    def _validate_generation(
        group: ClassicGroup, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode | None:
        """A Dead group, an unknown or fenced member, or a stale generation: the error Kafka answers."""
        if group.is_in(_S.DEAD):
            return ErrorCode.coordinator_not_available
        error = group.validate_member(member_id, instance_id)
        if error is not None:
            return error
        if generation != group.generation:
            return ErrorCode.illegal_generation
        return None

    def _store_assignment(self, group: ClassicGroup, generation: int, assignments: dict[str, bytes]) -> None:
        assignment = {mid: assignments.get(mid, b"") for mid in group.members}
        assignment.update({mid: a for mid, a in assignments.items() if mid in group.members})

        def stored(code: ErrorCode) -> None:
            if not group.is_in(_S.COMPLETING_REBALANCE) or group.generation != generation:
                return  # the group moved on while the record was being written
            if code is not ErrorCode.none:
                self._reset_and_propagate_assignment_error(group, code)
                self._maybe_prepare_rebalance_or_complete_join(
                    group, f"storing the assignment failed: {code}"
                )
                return
            for member in group.members.values():
                member.assignment = assignment.get(member.member_id, b"")
            self._propagate_assignment(group, ErrorCode.none)
            group.transition_to(_S.STABLE, self.now_ms)

        self.host.store_group(group, assignment, stored)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, code: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, code)

    def _propagate_assignment(self, group: ClassicGroup, code: ErrorCode) -> None:
        for member in group.members.values():
            if member.sync_reply is not None:
                answer, member.sync_reply = member.sync_reply, None
                answer(sync_answer(code, group, member.assignment))
                self._reschedule_heartbeat(group, member)

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.is_in(_S.DEAD, _S.EMPTY, _S.PREPARING_REBALANCE) or not group.pending_sync_members:
            self.host.cancel(_sync_key(group.group_id))

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.host.cancel(_sync_key(group.group_id))

    def _expire_pending_sync(self, group_id: str, generation: int, now_ms: int) -> None:
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if group is None or group.generation != generation:
            return
        if group.is_in(_S.COMPLETING_REBALANCE, _S.STABLE) and group.pending_sync_members:
            late = sorted(group.pending_sync_members)
            for member_id in late:
                group.remove(member_id)
                self.host.cancel(_heartbeat_key(group_id, member_id))
            self._prepare_rebalance(group, f"members {late} did not sync in time")

    # -- Heartbeat and session expiry ---------------------------------------------------------

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        error = self._validate_generation(group, generation, member_id, instance_id)
        if error is not None:
            return error
        if group.is_in(_S.EMPTY):
            return ErrorCode.unknown_member_id
        self._reschedule_heartbeat(group, group.members[member_id])
        if group.is_in(_S.PREPARING_REBALANCE):
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    def touch(self, group: ClassicGroup, member_id: str) -> None:
        """An offset commit from a member keeps its session alive (Stable or PreparingRebalance)."""
        member = group.members.get(member_id)
        if member is not None and group.is_in(_S.STABLE, _S.PREPARING_REBALANCE):
            self._reschedule_heartbeat(group, member)

    def _reschedule_heartbeat(
        self, group: ClassicGroup, member: Member, timeout_ms: int | None = None
    ) -> None:
        gid, mid = group.group_id, member.member_id
        self.host.schedule(
            _heartbeat_key(gid, mid),
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda now: self._expire_heartbeat(gid, mid, now),
        )

    def _expire_heartbeat(self, group_id: str, member_id: str, now_ms: int) -> None:
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if group is None or group.is_in(_S.DEAD):
            return
        if member_id in group.pending_members:
            log.info("group %s: pending member %s timed out", group_id, member_id)
            group.remove(member_id)
            if group.is_in(_S.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info("group %s: member %s failed its session timeout; removing it", group_id, member_id)
        self._remove_member_and_update(group, member)

    def _remove_member_and_update(self, group: ClassicGroup, member: Member) -> None:
        if member.join_reply is not None:
            answer, member.join_reply = member.join_reply, None
            answer(join_error(ErrorCode.unknown_member_id))
        group.remove(member.member_id)
        if group.is_in(_S.STABLE, _S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, f"member {member.member_id} removed")
        elif group.is_in(_S.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group)

    # -- LeaveGroup ---------------------------------------------------------------------------

    def leave(
        self, group_id: str, identities: Sequence[tuple[str, str | None]], now_ms: int
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """Remove members by (member id, instance id); returns the group error and one code per identity."""
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.none, [ErrorCode.unknown_member_id] * len(identities)
        if group.is_in(_S.DEAD):
            return ErrorCode.coordinator_not_available, []
        codes: list[ErrorCode] = []
        for member_id, instance_id in identities:
            if member_id == "":
                existing = group.static_members.get(instance_id) if instance_id is not None else None
                if existing is None:
                    codes.append(ErrorCode.unknown_member_id)
                else:
                    self._remove_current_member(group, existing)
                    codes.append(ErrorCode.none)
            elif member_id in group.pending_members:
                group.remove(member_id)
                self.host.cancel(_heartbeat_key(group_id, member_id))
                codes.append(ErrorCode.none)
            else:
                error = group.validate_member(member_id, instance_id)
                if error is None:
                    self._remove_current_member(group, member_id)
                codes.append(error or ErrorCode.none)
        if any(c is ErrorCode.none for c in codes):
            if group.is_in(_S.STABLE, _S.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group, "members left")
            elif group.is_in(_S.PREPARING_REBALANCE):
                self._maybe_complete_join_phase(group)
        return ErrorCode.none, codes

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        log.info("group %s: member %s left", group.group_id, member_id)
        self.host.cancel(_heartbeat_key(group.group_id, member_id))
        member = group.members[member_id]
        if member.join_reply is not None:
            answer, member.join_reply = member.join_reply, None
            answer(join_error(ErrorCode.unknown_member_id))
        group.remove(member_id)

    # -- offsets, deletion, unloading ---------------------------------------------------------

    def validate_offset_commit(
        self,
        group: ClassicGroup,
        member_id: str,
        instance_id: str | None,
        generation: int,
        transactional: bool,
    ) -> ErrorCode | None:
        """Kafka's ``validateOffsetCommit`` for a classic group; None when the commit may proceed."""
        if group.is_in(_S.DEAD):
            return ErrorCode.coordinator_not_available
        if generation < 0 and group.is_in(_S.EMPTY):
            return None  # an admin client or a consumer without group management
        if generation >= 0 or member_id or instance_id is not None:
            error = group.validate_member(member_id, instance_id)
            if error is not None:
                return error
            if generation != group.generation:
                return ErrorCode.illegal_generation
        elif not transactional and not group.is_in(_S.EMPTY):
            return ErrorCode.unknown_member_id
        if not transactional and group.is_in(_S.COMPLETING_REBALANCE):
            return ErrorCode.rebalance_in_progress
        return None

    def kill(self, group: ClassicGroup, code: ErrorCode) -> None:
        """The group is deleted or moves away: answer whoever waits with ``code`` and forget it."""
        for member in group.members.values():
            if member.join_reply is not None:
                answer, member.join_reply = member.join_reply, None
                answer(join_error(code, member.member_id))
            if member.sync_reply is not None:
                answer_sync, member.sync_reply = member.sync_reply, None
                answer_sync(sync_answer(code))
            self.host.cancel(_heartbeat_key(group.group_id, member.member_id))
        for member_id in group.pending_members:
            self.host.cancel(_heartbeat_key(group.group_id, member_id))
        self.host.cancel(_join_key(group.group_id))
        self.host.cancel(_sync_key(group.group_id))
        group.transition_to(_S.DEAD, self.now_ms)
        self.groups.pop(group.group_id, None)

    def loaded(self, group: ClassicGroup) -> None:
        """A group replayed from the log: its members must heartbeat within their session timeouts."""
        for member in group.members.values():
            self._reschedule_heartbeat(group, member)
