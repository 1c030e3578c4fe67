"""Delayed operations: requests that wait for a condition or a deadline (seed 001).

A fetch with ``min_bytes`` waits for data, an acks=all produce waits for the
ISR. Each waits in the purgatory, watched under the keys (partitions) whose
changes may complete it, and on the timing wheel for its deadline. Whoever
changes a partition calls :meth:`Purgatory.check_and_complete` with its key;
the wheel expires the rest. An operation completes exactly once, either way.

An operation's ``deadline_ms`` is wall time (``ctx.received_ms`` plus a timeout), but the wheel runs
on the broker's monotonic clock, as Kafka's: a ``DelayedOperation`` is a ``TimerTask`` of
``delayMs`` on ``SystemTimer``, which adds it at ``delayMs + Time.SYSTEM.hiResClockMs()``
(``System.nanoTime``; ``server-common/src/main/java/org/apache/kafka/server/util/timer/SystemTimer.java``).
So the wait an operation was given, measured when it is watched, is what it waits, whatever the
wall clock does meanwhile: a forward step does not expire every waiting fetch and produce at once,
and a backward one does not hold them for the size of the step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable

from reference_impl.timer.wheel import TimerTask, TimingWheel

PURGE_INTERVAL = 1_000
"""Watch-list entries added between two sweeps of the completed operations out of every list at
least (Kafka's ``fetch.purgatory.purge.interval.requests``): an operation completed through one
key stays listed under its others until then. A follower's fetch is watched under every partition
it follows; those of idle partitions never fire, and their lists grew by an entry per fetch for as
long as no operation expired."""


class DelayedOperation(ABC):
    """Subclasses say when they can complete, and what completing does."""

    def __init__(self, deadline_ms: int) -> None:
        self.deadline_ms = deadline_ms
        self.completed = False
        self._timer: TimerTask[DelayedOperation] | None = None

    @abstractmethod
    def try_complete(self, now_ms: int) -> bool:
        """Complete (by calling :meth:`force_complete`) if the condition holds; True if done."""

    def try_complete_on(self, key: Hashable, now_ms: int) -> bool:
        """:meth:`try_complete`, woken because ``key`` changed. An operation that was checked when
        it was watched and at every change since may look at ``key`` alone to tell that nothing it
        waits for happened (a follower's fetch covers every partition it follows, and re-checking
        all of them on each change of one was the leader's largest cost per acks=all round trip)."""
        return self.try_complete(now_ms)

    @abstractmethod
    def on_complete(self, now_ms: int) -> None:
        """Produce the response (runs exactly once)."""

    def force_complete(self, now_ms: int) -> bool:
        if self.completed:
            return False
        self.completed = True
        self.on_complete(now_ms)
        return True


class Purgatory:
    """Watch lists per key plus one timing wheel for deadlines."""

    def __init__(
        self, wheel: TimingWheel[DelayedOperation], monotonic: Callable[[], int] | None = None
    ) -> None:
        """``monotonic`` reads the clock the wheel runs on (the broker's); without it the wheel
        runs on the wall time the callers give."""
        self._wheel = wheel
        self._monotonic = monotonic
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}
        self._listed = 0
        """Watch-list entries: counted as added, recounted at each sweep (an over-estimate between)."""
        self._sweep_at = PURGE_INTERVAL

    def __len__(self) -> int:
        return len(self._wheel)

    def listed(self, key: Hashable) -> int:
        """Entries under ``key``, completed operations not yet swept out included."""
        return len(self._watchers.get(key, ()))

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable], now_ms: int) -> bool:
        """Complete ``op`` now if it can; otherwise watch it. True if it completed now."""
        if op.try_complete(now_ms):
            return True
        for key in keys:
            self._watchers.setdefault(key, []).append(op)
            self._listed += 1
        op._timer = self._wheel.add(self._on_wheel(op.deadline_ms, now_ms), op)
        if self._listed > self._sweep_at:
            self._purge_completed()
        return False

    def _on_wheel(self, deadline_ms: int, now_ms: int) -> int:
        """Wall deadline ``deadline_ms`` as seen at wall time ``now_ms``, on the wheel's clock."""
        if self._monotonic is None:
            return deadline_ms
        return self._monotonic() + max(0, deadline_ms - now_ms)

    def check_and_complete(self, key: Hashable, now_ms: int) -> int:
        """Try every operation watching ``key``; drop completed ones. Returns how many completed.

        Re-entrant: completing one operation may change another partition (a
        follower fetch moves the high watermark) and check again; the list
        being worked on is taken out first, and what was added meanwhile kept.
        """
        ops = self._watchers.pop(key, None)
        if not ops:
            return 0
        done = 0
        remaining = []
        for op in ops:
            if op.completed:
                continue
            if op.try_complete_on(key, now_ms):
                done += 1
                self._unschedule(op)
            else:
                remaining.append(op)
        if remaining:
            self._watchers.setdefault(key, []).extend(remaining)
        return done

    def advance(self, now_ms: int, mono_ms: int | None = None) -> int:
        """Expire operations whose deadline passed by ``mono_ms`` (the wheel's clock; by default the
        wall time ``now_ms``, which they complete at); returns how many expired."""
        expired = 0
        for op in self._wheel.advance(now_ms if mono_ms is None else mono_ms):
            op._timer = None  # off the wheel: see _unschedule
            if op.force_complete(now_ms):
                expired += 1
        if expired:
            self._purge_completed()
        return expired

    def cancel_all(self, ops: Iterable[DelayedOperation]) -> None:
        """Forget operations whose requester went away (connection closed)."""
        for op in ops:
            op.completed = True
            self._unschedule(op)
        self._purge_completed()

    def _unschedule(self, op: DelayedOperation) -> None:
        """Take ``op`` off the wheel, and drop its task: the task holds the operation and the
        operation its task, a cycle only the cyclic GC frees. Left in place, every completed fetch
        and produce (with its request context, state and answer) waited for a full collection,
        which grew to 50,000-80,000 objects and 80-120 ms pauses of the event loop every few
        seconds at 500 acks=all records/s (issue 22's p99)."""
        if op._timer is not None:
            self._wheel.cancel(op._timer)
            op._timer = None

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline, on the wheel's (monotonic) clock."""
        return self._wheel.next_deadline_ms()

    def _purge_completed(self) -> None:
        """Drop completed operations from every list; the next sweep comes after as many entries
        again as stay listed (at least :data:`PURGE_INTERVAL`), so sweeping stays O(1) amortised."""
        for key in list(self._watchers):
            alive = [op for op in self._watchers[key] if not op.completed]
            if alive:
                self._watchers[key] = alive
            else:
                del self._watchers[key]
        self._listed = sum(len(ops) for ops in self._watchers.values())
        self._sweep_at = self._listed + max(PURGE_INTERVAL, self._listed)
