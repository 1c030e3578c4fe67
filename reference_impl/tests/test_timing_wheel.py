"""The timing wheel against a sorted-list model: nothing fires early, late or twice."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from reference_impl.timer.wheel import TimerTask, TimingWheel


class WheelMachine(RuleBasedStateMachine):
    """Kafka's purgatory contract (seed 001): an operation expires at its deadline, not before,
    and a cancelled one never expires."""

    @initialize(start=st.integers(0, 10_000), tick=st.sampled_from([1, 1, 2, 5]),
                size=st.sampled_from([2, 3, 20]))
    def setup(self, start: int, tick: int, size: int) -> None:
        self.wheel: TimingWheel[int] = TimingWheel(start_ms=start, tick_ms=tick, wheel_size=size)
        self.now = start
        self.model: dict[int, int] = {}  # payload -> deadline
        self.tasks: dict[int, TimerTask[int]] = {}
        self.next_id = 0

    @rule(delay=st.integers(-50, 100_000))
    def add(self, delay: int) -> None:
        deadline = self.now + delay
        self.tasks[self.next_id] = self.wheel.add(deadline, self.next_id)
        self.model[self.next_id] = deadline
        self.next_id += 1

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        if not self.tasks:
            return
        key = data.draw(st.sampled_from(sorted(self.tasks)))
        assert self.wheel.cancel(self.tasks.pop(key)) is (key in self.model)
        self.model.pop(key, None)

    @rule(step=st.integers(0, 30_000))
    def advance(self, step: int) -> None:
        self.now += step
        fired = self.wheel.advance(self.now)
        expected = sorted((d, k) for k, d in self.model.items() if d <= self.now)
        assert fired == [k for _d, k in expected]
        for k in fired:
            del self.model[k]

    @invariant()
    def size_matches(self) -> None:
        assert len(self.wheel) == len(self.model)

    @invariant()
    def next_deadline_is_not_early(self) -> None:
        head = self.wheel.next_deadline_ms()
        if self.model:
            assert head is not None and head <= max(min(self.model.values()), self.now)
        else:
            assert head is None


TestTimingWheel = WheelMachine.TestCase
TestTimingWheel.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


@given(st.lists(st.integers(0, 5_000_000), min_size=1, max_size=200))
def test_fires_exactly_at_deadline(deadlines: list[int]) -> None:
    wheel: TimingWheel[int] = TimingWheel()
    for i, d in enumerate(deadlines):
        wheel.add(d, i)
    fired_at: dict[int, int] = {}
    while (head := wheel.next_deadline_ms()) is not None:
        for payload in wheel.advance(head):
            fired_at[payload] = head
    assert fired_at == dict(enumerate(deadlines))


def test_overflow_levels_stay_constant_per_insert() -> None:
    """O(1) insert: a million-ms deadline builds a few overflow levels once, not per task."""
    wheel: TimingWheel[int] = TimingWheel()
    for i in range(1000):
        wheel.add(1_000_000 + i, i)
    levels = 0
    level = wheel._root
    while level.overflow is not None:
        levels += 1
        level = level.overflow
    assert levels == 4  # 20 ms, 400 ms, 8 s, 160 s, 3200 s spans: 1e6 ms lands on the fifth
    assert wheel.advance(999_999) == []
    assert wheel.advance(1_000_999) == list(range(1000))
