"""The hypothesis state machine over :class:`ReplicationModel`: random faults, invariants after every step.

Rules draw their targets from what is valid *now* (a live follower to fetch,
a dead node to restart, an ISR member to elect), so the search spends its
steps on interleavings that matter instead of no-ops; compound rules
(a leader writes and fails; two fast failovers) are the nemesis packages that
make the KIP-101/279/320 windows likely.

``ReplicationMachine.mutant`` selects a seeded bug mode; the mutation check
(``kafka-harness mutants``) makes one subclass per mode and expects a failure.
"""

from __future__ import annotations

from typing import ClassVar

from hypothesis import strategies as st
from hypothesis import target
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from .replication import NODES, ReplicationModel


class ReplicationMachine(RuleBasedStateMachine):
    mutant: ClassVar[str | None] = None
    examples: ClassVar[int] = 0
    checks: ClassVar[int] = 0
    """Invariant checks so far in this process: one after each example's setup, one after each rule."""
    first_failure_at: ClassVar[int] = 0
    """The example (counted from 1) in which an invariant first failed, 0 if none has."""

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.model = ReplicationModel(mutant=self.mutant, on_violation=self._record_failure)

    @classmethod
    def steps(cls) -> int:
        """Rule executions so far (the deep run's budget is stated in steps)."""
        return cls.checks - cls.examples

    def _record_failure(self) -> None:
        cls = type(self)
        cls.first_failure_at = cls.first_failure_at or cls.examples

    # -- what is valid now -----------------------------------------------------------------------

    def _followers(self) -> list[int]:
        return sorted(n for n in self.model.reachable if n != self.model.controller.leader)

    def _dead(self) -> list[int]:
        return sorted(set(NODES) - self.model.alive)

    def _has_leader(self) -> bool:
        return self.model.leader is not None

    def _draw(self, data: st.DataObject, options: list[int]) -> int:
        return data.draw(st.sampled_from(options))

    def _successor(self, data: st.DataObject) -> int:
        """Whom the controller should prefer if the leader goes: the most lagging ISR member (the
        adversarial pick) or any node (it falls back to a valid one)."""
        if data.draw(st.booleans()):
            return self.model.lagging_isr_member()
        return data.draw(st.sampled_from(NODES))

    # -- rules ---------------------------------------------------------------------------------

    @precondition(_has_leader)
    @rule(count=st.integers(1, 3), acks=st.sampled_from([1, -1, -1]))
    def produce(self, count: int, acks: int) -> None:
        self.model.produce(count, acks)

    @precondition(_has_leader)
    @rule(retry=st.booleans())
    def produce_idempotent(self, retry: bool) -> None:
        self.model.produce_idempotent(retry)

    @precondition(lambda self: self._has_leader() and bool(self._followers()))
    @rule(data=st.data(), drop=st.booleans())
    def fetch(self, data: st.DataObject, drop: bool) -> None:
        self.model.fetch(self._draw(data, self._followers()), drop)

    @precondition(lambda self: self._has_leader() and bool(self._followers()))
    @rule(data=st.data())
    def fetch_round(self, data: st.DataObject) -> None:
        """Every live follower fetches once (replication making progress)."""
        for follower in self._followers():
            self.model.fetch(follower, False)

    @precondition(lambda self: self._has_leader() and bool(self._followers()))
    @rule(data=st.data())
    def stale_fetch(self, data: st.DataObject) -> None:
        self.model.stale_fetch(self._draw(data, self._followers()))

    @rule(ms=st.sampled_from([100, 600, 1_200]))
    def tick(self, ms: int) -> None:
        self.model.tick(ms)

    @precondition(lambda self: self._has_leader() and len(self.model.alive) > 1)
    @rule(data=st.data())
    def crash_leader(self, data: st.DataObject) -> None:
        leader = self.model.controller.leader
        self.model.crash(leader, self._successor(data))

    @precondition(lambda self: bool(self._followers()) and len(self.model.alive) > 1)
    @rule(data=st.data())
    def crash_follower(self, data: st.DataObject) -> None:
        self.model.crash(self._draw(data, self._followers()), self._successor(data))

    @precondition(lambda self: len(self.model.alive) > 1)
    @rule(data=st.data())
    def power_loss(self, data: st.DataObject) -> None:
        self.model.crash(self._draw(data, sorted(self.model.alive)), self._successor(data), power_loss=True)

    @precondition(lambda self: bool(self._dead()))
    @rule(data=st.data())
    def restart(self, data: st.DataObject) -> None:
        self.model.restart(self._draw(data, self._dead()))

    @rule(data=st.data())
    def flush(self, data: st.DataObject) -> None:
        self.model.flush(self._draw(data, sorted(self.model.alive)))

    @precondition(lambda self: self._has_leader() and len(self.model.controller.isr) > 1)
    @rule(data=st.data())
    def move_leadership(self, data: st.DataObject) -> None:
        self.model.move_leadership(self._draw(data, list(self.model.controller.isr)))

    @precondition(_has_leader)
    @rule()
    def consume(self) -> None:
        self.model.consume()

    @precondition(lambda self: self._has_leader() and len(self.model.alive) > 1)
    @rule(data=st.data())
    def write_then_fail(self, data: st.DataObject) -> None:
        self.model.write_then_fail(self._successor(data))

    @precondition(lambda self: self._has_leader() and bool(self._followers()) and len(self.model.alive) > 1)
    @rule(data=st.data())
    def replicate_partially_then_fail(self, data: st.DataObject) -> None:
        self.model.replicate_partially_then_fail(self._draw(data, self._followers()), self._successor(data))

    @precondition(lambda self: self._has_leader() and len(self.model.alive) > 1)
    @rule()
    def fast_failover(self) -> None:
        self.model.fast_failover()

    @precondition(lambda self: self._has_leader() and len(self._followers()) > 1)
    @rule()
    def restart_during_failover(self) -> None:
        self.model.restart_during_failover()

    @precondition(lambda self: bool(self._followers()) and len(self.model.alive) > 1)
    @rule(data=st.data())
    def follower_falls_behind(self, data: st.DataObject) -> None:
        self.model.follower_falls_behind(self._draw(data, self._followers()))

    @precondition(lambda self: self._has_leader() and len(self._followers()) > 1)
    @rule()
    def replicate_then_republish(self) -> None:
        self.model.replicate_then_republish()

    @precondition(lambda self: len(self.model.reachable) == len(NODES))
    @rule(data=st.data())
    def network_partition(self, data: st.DataObject) -> None:
        """Cut one node off (the leader or a follower); an isolated leader becomes a zombie."""
        self.model.isolate(self._draw(data, sorted(self.model.reachable)), self._successor(data))

    @precondition(lambda self: bool(self.model.isolated))
    @rule(count=st.integers(1, 2))
    def zombie_produce(self, count: int) -> None:
        self.model.zombie_produce(count)

    @precondition(lambda self: bool(self.model.isolated))
    @rule()
    def heal_partition(self) -> None:
        self.model.heal(min(self.model.isolated))

    @invariant()
    def invariants_hold(self) -> None:
        type(self).checks += 1
        self.model.check()

    def teardown(self) -> None:
        """Steer generation (hypothesis's targeted search) toward the windows where bugs bite."""
        for label, count in self.model.windows.items():
            target(float(count), label=label)
