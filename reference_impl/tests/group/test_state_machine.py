"""Random joins, syncs, heartbeats, leaves, restarts of static members and timeouts against the coordinator.

Claims checked after every step (hypothesis, rule-based):

* at most one leader per generation, and only the leader receives the member list (a static leader
  that restarts within a Stable generation keeps the leadership under its new member id, as Kafka's
  ``GroupMetadata.replaceStaticMember`` (core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala)
  hands it over: one leader is one member or one instance);
* every member of a Stable group holds the assignment the leader made for it (a restarted static
  member: the one made for its instance) in the current generation;
* a group's generation never decreases, and no member sees it go back;
* every state the group passes through is reachable by the state table (an illegal transition raises).
"""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from reference_impl.core.group.state import GroupState
from reference_impl.protocol.errors import ErrorCode

from .helpers import Client, harness

GROUP = "g"
CLIENTS = 4
STATIC = {2: "static-2", 3: "static-3"}


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = harness("group.initial.rebalance.delay.ms=50")
        self.clients = [self._client(i) for i in range(CLIENTS)]
        self.waiting: dict[int, str] = {}  # client → "join" | "sync"
        self.leaders: dict[int, set[str]] = {}
        self.identity: dict[str, str] = {}
        """Member id -> who it is: the instance id of a static member, else the member id itself."""
        self.member_lists: dict[int, set[str]] = {}
        self.plans: dict[int, dict[str, bytes]] = {}
        self.seen_generation = [-1] * CLIENTS
        self.last_generation = 0

    def _client(self, i: int) -> Client:
        return Client(self.h, GROUP, instance_id=STATIC.get(i), session_ms=3000, rebalance_ms=4000)

    # -- actions ------------------------------------------------------------------------------

    @rule(i=st.integers(0, CLIENTS - 1))
    def join(self, i: int) -> None:
        if i not in self.waiting:
            self.clients[i].send_join()
            self.waiting[i] = "join"
            self._drain()

    @rule(i=st.integers(0, CLIENTS - 1))
    def sync(self, i: int) -> None:
        c = self.clients[i]
        if i in self.waiting or c.generation < 0 or not c.member_id:
            return
        plan = self.plans.get(c.generation) if i in self._leading() else None
        c.send_sync(plan)
        self.waiting[i] = "sync"
        self._drain()

    @rule(i=st.integers(0, CLIENTS - 1))
    def heartbeat(self, i: int) -> None:
        c = self.clients[i]
        if c.member_id:
            code = c.heartbeat(new_connection=True)
            assert code in (
                ErrorCode.none,
                ErrorCode.rebalance_in_progress,
                ErrorCode.illegal_generation,
                ErrorCode.unknown_member_id,
                ErrorCode.fenced_instance_id,
            ), code

    @rule(i=st.integers(0, CLIENTS - 1))
    def leave(self, i: int) -> None:
        c = self.clients[i]
        if c.member_id and i not in self.waiting:
            c.leave()
            c.member_id, c.generation = "", -1

    @rule(i=st.sampled_from(sorted(STATIC)))
    def restart_static(self, i: int) -> None:
        """The static member's process restarts: a new connection, no member id (KIP-345)."""
        self.clients[i] = self._client(i)
        self.waiting.pop(i, None)

    @rule(ms=st.sampled_from([10, 60, 500, 2000, 3500, 5000]))
    def advance(self, ms: int) -> None:
        self.h.advance(ms)
        self._drain()

    # -- observing ----------------------------------------------------------------------------

    def _leading(self) -> set[int]:
        group = self.h.broker.group_coordinator.groups.get(GROUP)
        if group is None:
            return set()
        return {i for i, c in enumerate(self.clients) if c.member_id and c.member_id == group.leader_id}

    def _drain(self) -> None:
        for i, kind in list(self.waiting.items()):
            c = self.clients[i]
            if not c.has_answer():
                continue
            del self.waiting[i]
            if kind == "join":
                self._on_join(i, c.read_join())
            else:
                self._on_sync(i, c.read_sync())

    def _on_join(self, i: int, r: Any) -> None:
        c = self.clients[i]
        if r.error_code == ErrorCode.member_id_required:
            c.send_join()
            self.waiting[i] = "join"
            self._drain()
            return
        if r.error_code != ErrorCode.none:
            c.generation = -1
            if r.error_code in (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id):
                c.member_id = ""
            return
        generation = int(r.generation_id)
        assert generation >= self.seen_generation[i], "a member saw its generation go back"
        self.seen_generation[i] = generation
        self.identity[str(r.member_id)] = c.instance_id or str(r.member_id)
        self.leaders.setdefault(generation, set()).add(r.leader)
        if r.members:
            self.member_lists.setdefault(generation, set()).add(r.member_id)
            self.plans[generation] = {
                m.member_id: f"{m.group_instance_id or m.member_id}@{generation}".encode() for m in r.members
            }

    def _on_sync(self, i: int, r: Any) -> None:
        c = self.clients[i]
        if r.error_code != ErrorCode.none:
            if r.error_code in (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id):
                c.member_id, c.generation = "", -1
            return
        owner = (c.instance_id or c.member_id).encode()
        assert bytes(r.assignment).split(b"@")[0] in (owner, b""), (r.assignment, owner)

    # -- claims -------------------------------------------------------------------------------

    @invariant()
    def one_leader_per_generation(self) -> None:
        for generation, leaders in self.leaders.items():
            who = {self.identity.get(leader, leader) for leader in leaders}
            assert len(who) == 1, f"generation {generation} had leaders {leaders} ({who})"
        for generation, receivers in self.member_lists.items():
            assert receivers <= self.leaders[generation], (generation, receivers)

    @invariant()
    def stable_members_hold_the_leaders_assignment(self) -> None:
        group = self.h.broker.group_coordinator.groups.get(GROUP)
        if group is None or not group.is_in(GroupState.STABLE):
            return
        for member in group.members.values():
            owner = (member.group_instance_id or member.member_id).encode()
            expected = owner + b"@" + str(group.generation).encode()
            assert member.assignment == expected, (member.member_id, member.assignment, group.generation)

    @invariant()
    def generations_only_increase(self) -> None:
        group = self.h.broker.group_coordinator.groups.get(GROUP)
        if group is not None:
            assert group.generation >= self.last_generation
            self.last_generation = group.generation


GroupMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestGroupMachine = GroupMachine.TestCase
