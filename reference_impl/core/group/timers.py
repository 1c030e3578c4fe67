"""The group coordinator's timers (session, join, sync, share-member sessions) on the broker's
monotonic clock.

Kafka's coordinator timers are ``TimerTask``s on ``SystemTimer`` (``hiResClockMs``, i.e.
``System.nanoTime``; ``coordinator-common/src/main/java/org/apache/kafka/coordinator/common/runtime/
CoordinatorRuntime.java``, ``EventBasedCoordinatorTimer``). Here they wait in a heap keyed by their
monotonic deadline; the earliest is one delayed operation on the broker's timing wheel, so a simulator
drives them with its virtual clock, and a step of the wall clock fires none early or late.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from ..purgatory import DelayedOperation, Purgatory

TimerKey = tuple[str, ...]


class TimerHost(Protocol):
    @property
    def mono_ms(self) -> int: ...

    @property
    def purgatory(self) -> Purgatory: ...


class _Wakeup(DelayedOperation):
    """The timers' next deadline on the broker's wheel (one at a time, see ``_run_due``)."""

    def __init__(self, owner: CoordinatorTimers, deadline_ms: int, due_mono_ms: int) -> None:
        super().__init__(deadline_ms)
        self.owner = owner
        self.due_mono_ms = due_mono_ms

    def try_complete(self, now_ms: int) -> bool:
        return False

    def on_complete(self, now_ms: int) -> None:
        self.owner._run_due(self, now_ms)


class CoordinatorTimers:
    """Keyed one-shot timers: scheduling a key again replaces its timer."""

    def __init__(
        self,
        host: TimerHost,
        wall_ms: Callable[[], int],
        operation: Callable[[int], AbstractContextManager[None]],
    ) -> None:
        """``wall_ms`` reads the coordinator's wall time; ``operation(at)`` wraps one timer's run."""
        self._host = host
        self._wall_ms = wall_ms
        self._operation = operation
        self._timers: dict[TimerKey, tuple[int, Callable[[int], None]]] = {}
        self._due: list[tuple[int, int, TimerKey]] = []
        self._wakeup: _Wakeup | None = None
        self._tokens = itertools.count(1)
        self._running_at: int | None = None  # the monotonic deadline of the timer running now

    @property
    def mono_ms(self) -> int:
        """Now on the monotonic clock, as the timers measure it: the running timer's own deadline
        (a coarse tick runs each timer at its deadline), else the broker's monotonic clock."""
        return self._host.mono_ms if self._running_at is None else self._running_at

    def schedule(self, key: TimerKey, delay_ms: int, fn: Callable[[int], None]) -> None:
        """Run ``fn`` ``delay_ms`` from now on the monotonic clock (from its deadline, in a timer);
        ``fn`` is given the wall time it fell due."""
        deadline = self.mono_ms + max(delay_ms, 0)
        token = next(self._tokens)
        self._timers[key] = (token, fn)
        heapq.heappush(self._due, (deadline, token, key))
        self._arm(deadline)

    def cancel(self, key: TimerKey) -> None:
        self._timers.pop(key, None)

    def scheduled(self, key: TimerKey) -> bool:
        return key in self._timers

    def _arm(self, deadline_ms: int) -> None:
        if self._wakeup is not None and self._wakeup.due_mono_ms <= deadline_ms:
            return
        now = self._wall_ms()
        wall = now + deadline_ms - self._host.mono_ms  # the purgatory takes wall deadlines
        self._wakeup = _Wakeup(self, wall, deadline_ms)
        self._host.purgatory.try_complete_else_watch(self._wakeup, (), now)

    def _run_due(self, wakeup: _Wakeup, now_ms: int) -> None:
        """Run every timer due by the monotonic clock in deadline order, each at its own deadline.

        A timer a callback schedules for a time before now runs in the same pass, so a coarse clock
        (one tick jumping seconds) sees the same sequence of events as a fine one.
        """
        if wakeup is self._wakeup:
            self._wakeup = None
        mono = self._host.mono_ms
        while self._due and self._due[0][0] <= mono:
            deadline, token, key = heapq.heappop(self._due)
            entry = self._timers.get(key)
            if entry is None or entry[0] != token:
                continue  # rescheduled or cancelled since
            del self._timers[key]
            at = now_ms - (mono - deadline)  # the wall time it fell due
            self._running_at = deadline
            try:
                with self._operation(at):
                    entry[1](at)
            finally:
                self._running_at = None
        while self._due and self._timers.get(self._due[0][2], (None,))[0] != self._due[0][1]:
            heapq.heappop(self._due)  # drop stale entries so the next wakeup is a real one
        if self._due:
            self._arm(self._due[0][0])
