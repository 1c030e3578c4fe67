"""Random joins, heartbeats, leaves, static restarts, assignor switches, topic growth, session expiries
and coordinator restarts against the consumer-protocol coordinator (KIP-848), on the sans-IO broker.

Each member is modelled as a client does it (``CurrentAssignmentBuilder``'s contract): it takes
what an answer assigns at once, but a partition an answer leaves out it still holds (committing it)
until its next heartbeat, which reports it gone. Claims checked after every step (hypothesis, rule-based):

* **exclusive**: no partition is owned by two live clients, nor held (assigned or pending revocation)
  by two members in the coordinator, in any epoch;
* **monotonic**: the group epoch never decreases, the assignment epoch never passes it, and no client
  sees its member epoch go back while it stays in the group;
* **recovered**: a coordinator restart (the log replayed) keeps every epoch and assignment;
* **converges** (at the end): after rounds of heartbeats from every live client with nothing else
  changing, the group is Stable and every subscribed partition is owned by exactly one client.

Kafka: group-coordinator ``modern/consumer/CurrentAssignmentBuilder.java`` and
``GroupMetadataManager.java`` (consumerGroupHeartbeat); reference: reference_impl/core/group/consumer.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from reference_impl.core.group import consumer
from reference_impl.core.group.consumer import ConsumerGroup
from reference_impl.protocol.errors import ErrorCode

from ..core.harness import BrokerHarness, request
from ..core.test_data_path import create
from .helpers import GROUP_CONFIGS

GROUP = "g"
CLIENTS = 4
STATIC = {3: "static-3"}
SESSION_MS = 6000
CONFIGS = (*GROUP_CONFIGS, f"group.consumer.session.timeout.ms={SESSION_MS}")


@dataclass
class Sim:
    """A modelled client: its member id, epoch and what it owns (topic id, partition)."""

    index: int
    member_id: str = ""
    epoch: int = -1  # -1: not in the group
    owned: set[tuple[uuid.UUID, int]] = field(default_factory=set)
    revoking: set[tuple[uuid.UUID, int]] = field(default_factory=set)
    """Left out of the last answer: still held (the client commits them) until its next heartbeat."""
    last_beat_ms: int = 0


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = BrokerHarness(*CONFIGS)
        self.h.call(request(10, 3, key="any", key_type=0))  # creates __consumer_offsets
        create(self.h, "t1", 3)
        create(self.h, "t2", 2)
        self.clients = [Sim(i) for i in range(CLIENTS)]
        self.group_epoch = 0
        self.topics = {"t1": 3, "t2": 2}

    # -- the wire -------------------------------------------------------------------------------

    def _beat(self, c: Sim, epoch: int, **fields: Any) -> Any:
        c.owned -= c.revoking  # revocation done: this heartbeat reports the partitions gone
        c.revoking = set()
        body: dict[str, Any] = {
            "group_id": GROUP,
            "member_id": c.member_id,
            "member_epoch": epoch,
            "instance_id": STATIC.get(c.index),
            "rebalance_timeout": -1,
            "topic_partitions": [
                {"topic_id": t, "partitions": sorted(p for tt, p in c.owned if tt == t)}
                for t in {t for t, _ in c.owned}
            ],
        }
        body.update(fields)
        answer = self.h.call(request(68, 1, **body))
        c.last_beat_ms = self.h.now_ms
        return answer

    def _learn(self, c: Sim, answer: Any) -> None:
        code = ErrorCode(int(answer.error_code))
        if code in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            c.epoch, c.owned, c.revoking = -1, set(), set()  # fenced: drops everything, must rejoin
            return
        assert code is ErrorCode.none, f"client {c.index}: {code.name} {answer.error_message}"
        epoch = int(answer.member_epoch)
        if c.epoch >= 0 and epoch >= 0:
            assert epoch >= c.epoch, f"client {c.index} saw its epoch go back {c.epoch} -> {epoch}"
        c.epoch = epoch
        if answer.assignment is not None:
            new = {(t.topic_id, int(p)) for t in answer.assignment.topic_partitions for p in t.partitions}
            c.revoking = c.owned - new
            c.owned |= new

    # -- actions --------------------------------------------------------------------------------

    @rule(
        i=st.integers(0, CLIENTS - 1),
        subscription=st.sampled_from(["t1", "t2", "both", "regex"]),
        assignor=st.sampled_from([None, "uniform", "range"]),
    )
    def join(self, i: int, subscription: str, assignor: str | None) -> None:
        c = self.clients[i]
        if c.epoch >= 0:
            return
        c.member_id = str(uuid.uuid4())  # a new incarnation (a static one keeps its instance id)
        names = {"t1": ["t1"], "t2": ["t2"], "both": ["t1", "t2"], "regex": None}[subscription]
        c.owned = set()
        answer = self._beat(
            c,
            0,
            rebalance_timeout=30_000,
            subscribed_topic_names=names,
            subscribed_topic_regex="t[0-9]" if names is None else None,
            server_assignor=assignor,
            topic_partitions=[],
        )
        if ErrorCode(int(answer.error_code)) is ErrorCode.unreleased_instance_id:
            return
        self._learn(c, answer)

    @rule(i=st.integers(0, CLIENTS - 1))
    def heartbeat(self, i: int) -> None:
        c = self.clients[i]
        if c.epoch >= 0:
            self._learn(c, self._beat(c, c.epoch))

    @rule(i=st.integers(0, CLIENTS - 1))
    def leave(self, i: int) -> None:
        c = self.clients[i]
        if c.epoch < 0:
            return
        static = i in STATIC
        answer = self._beat(c, -2 if static else -1, topic_partitions=None)
        if ErrorCode(int(answer.error_code)) is ErrorCode.none:
            c.epoch, c.owned = -1, set()

    @rule(ms=st.sampled_from([500, 2000, SESSION_MS + 1]))
    def time_passes(self, ms: int) -> None:
        self.h.advance(ms)
        for c in self.clients:
            if c.epoch >= 0 and self.h.now_ms - c.last_beat_ms >= SESSION_MS:
                c.epoch, c.owned = -1, set()  # expired: the coordinator fenced it; its next beat learns so

    @precondition(lambda self: self.topics["t2"] < 4)
    @rule()
    def add_partition(self) -> None:
        self.topics["t2"] += 1
        answer = self.h.call(
            request(
                37,
                3,
                topics=[{"name": "t2", "count": self.topics["t2"], "assignments": None}],
                timeout=5000,
                validate_only=False,
            )
        )
        assert int(answer.results[0].error_code) == 0, answer

    @rule()
    def restart_coordinator(self) -> None:
        before = self._snapshot()
        self.h = BrokerHarness(*CONFIGS, store=self.h.store, now_ms=self.h.now_ms + 1)
        for c in self.clients:
            c.last_beat_ms = self.h.now_ms
        assert self._snapshot() == before, "the replayed group differs from the one written"

    # -- claims ---------------------------------------------------------------------------------

    def _group(self) -> ConsumerGroup | None:
        return self.h.broker.group_coordinator.consumer.groups.get(GROUP)

    def _snapshot(self) -> Any:
        g = self._group()
        if g is None:
            return None
        members = {
            m.member_id: (
                m.member_epoch,
                m.previous_epoch,
                m.state,
                m.assigned,
                m.pending_revocation,
                m.subscribed_names,
                m.subscribed_regex,
                m.instance_id,
                m.server_assignor,
            )
            for m in g.members.values()
        }
        return g.group_epoch, g.assignment_epoch, members, dict(g.target)

    @invariant()
    def exclusive(self) -> None:
        seen: dict[tuple[uuid.UUID, int], int] = {}
        for c in self.clients:
            if c.epoch < 0:
                continue
            for tp in c.owned:
                assert tp not in seen, f"{tp} owned by clients {seen[tp]} and {c.index}"
                seen[tp] = c.index
        g = self._group()
        if g is not None:
            held: dict[tuple[uuid.UUID, int], str] = {}
            for m in g.members.values():
                for tp in m.assigned | m.pending_revocation:
                    assert tp not in held, f"{tp} held by members {held[tp]} and {m.member_id}"
                    held[tp] = m.member_id

    @invariant()
    def monotonic(self) -> None:
        g = self._group()
        if g is None:
            return
        assert g.group_epoch >= self.group_epoch, f"group epoch {self.group_epoch} -> {g.group_epoch}"
        assert g.assignment_epoch <= g.group_epoch
        self.group_epoch = g.group_epoch

    def teardown(self) -> None:
        live = [c for c in self.clients if c.epoch >= 0]
        g = self._group()
        if not live or g is None:
            return
        for _ in range(4 * CLIENTS + 4):  # 2 s a round: members that left as static expire meanwhile
            for c in live:
                self.heartbeat(c.index)
                self.exclusive()
            self.h.advance(2000)
            live = [c for c in self.clients if c.epoch >= 0]
        g = self._group()
        assert g is not None
        if not live:
            return
        assert g.state().value == "Stable", f"not Stable after quiet rounds: {g.state()}"
        owned = {tp for c in live for tp in c.owned}
        wanted = {
            (meta.topic_id, p) for meta in g.subscribed_metadata.values() for p in range(meta.partitions)
        }
        assert owned == wanted, f"subscribed but unowned: {sorted(wanted - owned)}"


ConsumerGroupMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=30, deadline=None)
TestConsumerGroupMachine = ConsumerGroupMachine.TestCase


# -- seeded bugs: each must break a claim above -------------------------------------------------------


def _assign_unreleased(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hand out target partitions another member still holds (no UNRELEASED_PARTITIONS wait)."""
    monkeypatch.setattr(consumer.ConsumerGroup, "owner_epochs", lambda self: {})


def _skip_revocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Move a member to the new epoch without waiting for it to revoke (no UNREVOKED_PARTITIONS)."""
    original = consumer._next_assignment

    def eager(group: ConsumerGroup, member: Any, target: Any, epoch: int) -> Any:
        return original(group, replace(member, assigned=member.assigned & target), target, epoch)

    monkeypatch.setattr(consumer, "_next_assignment", eager)


@pytest.mark.parametrize("seed_bug", [_assign_unreleased, _skip_revocation], ids=lambda f: f.__name__[1:])
def test_seeded_reconciliation_bugs_are_caught(
    seed_bug: Callable[[pytest.MonkeyPatch], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine is not vacuous: with revoke-before-assign broken either way, two clients own a
    partition at once (generation only, no shrinking: a failure is all this needs)."""
    seed_bug(monkeypatch)
    quick = settings(
        max_examples=200,
        stateful_step_count=30,
        deadline=None,
        phases=[Phase.generate],
        database=None,
        derandomize=True,
    )
    with pytest.raises(AssertionError, match="owned by clients"):
        run_state_machine_as_test(ConsumerGroupMachine, settings=quick)
