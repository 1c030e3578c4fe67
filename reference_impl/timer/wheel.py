"""A hierarchical timing wheel, as Kafka's purgatory uses (seed 001, "Kafka 的延时操作").

Why a wheel: a broker holds tens of thousands of delayed operations (fetches
waiting for data, produces waiting for replicas), almost all completed long
before they expire. A priority queue pays O(log n) per insert and per
cancellation; a wheel pays O(1) for both. Each level has ``wheel_size``
buckets of ``tick_ms`` each; a deadline beyond a level's span goes to an
overflow wheel whose tick is the whole span of the level below, created on
demand. When an overflow bucket's time comes, its tasks are re-inserted and
cascade down to finer levels.

Why the heap of buckets: like Kafka's ``SystemTimer`` with its ``DelayQueue``,
the clock advances straight to the next non-empty bucket instead of ticking
through empty milliseconds, and :meth:`TimingWheel.next_deadline_ms` tells the
shell when to wake up.

Sans-IO: time only arrives as ``now_ms`` arguments. A task never fires before
its deadline: :meth:`advance` returns a task only when ``now_ms`` ≥ its
deadline (the lowest level's tick is 1 ms, time is integer milliseconds).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Generic, TypeVar

T = TypeVar("T")


class TimerTask(Generic[T]):
    """A scheduled payload; keep it to :meth:`TimingWheel.cancel` it."""

    __slots__ = ("_bucket", "deadline_ms", "payload", "seq")

    def __init__(self, deadline_ms: int, payload: T, seq: int) -> None:
        self.deadline_ms = deadline_ms
        self.payload = payload
        self.seq = seq
        self._bucket: _Bucket[T] | None = None

    @property
    def is_pending(self) -> bool:
        return self._bucket is not None

    def __repr__(self) -> str:
        return f"TimerTask(deadline_ms={self.deadline_ms}, payload={self.payload!r})"


class _Bucket(Generic[T]):
    __slots__ = ("expiration_ms", "tasks")

    def __init__(self) -> None:
        self.expiration_ms = -1
        self.tasks: dict[int, TimerTask[T]] = {}  # by seq: O(1) add and remove, insertion order


class _Level(Generic[T]):
    """One wheel: ``wheel_size`` buckets of ``tick_ms``, starting at ``current_ms``."""

    __slots__ = ("buckets", "current_ms", "interval_ms", "overflow", "tick_ms", "wheel_size")

    def __init__(self, tick_ms: int, wheel_size: int, start_ms: int) -> None:
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval_ms = tick_ms * wheel_size
        self.current_ms = start_ms - start_ms % tick_ms
        self.buckets: list[_Bucket[T]] = [_Bucket() for _ in range(wheel_size)]
        self.overflow: _Level[T] | None = None

    def add(self, task: TimerTask[T], ready: list[_Bucket[T]]) -> bool:
        """Place ``task``; False when it is already due (the caller fires it).

        A bucket whose expiration changed is appended to ``ready`` so the
        owner can queue it by time.
        """
        deadline = task.deadline_ms
        if deadline < self.current_ms + self.tick_ms:
            return False
        if deadline < self.current_ms + self.interval_ms:
            virtual_id = deadline // self.tick_ms
            bucket = self.buckets[virtual_id % self.wheel_size]
            bucket.tasks[task.seq] = task
            task._bucket = bucket
            expiration = virtual_id * self.tick_ms
            if bucket.expiration_ms != expiration:
                bucket.expiration_ms = expiration
                ready.append(bucket)
            return True
        if self.overflow is None:
            self.overflow = _Level(self.interval_ms, self.wheel_size, self.current_ms)
        return self.overflow.add(task, ready)

    def advance_clock(self, time_ms: int) -> None:
        if time_ms >= self.current_ms + self.tick_ms:
            self.current_ms = time_ms - time_ms % self.tick_ms
            if self.overflow is not None:
                self.overflow.advance_clock(self.current_ms)


class TimingWheel(Generic[T]):
    """Schedule payloads by deadline; :meth:`advance` returns those that are due.

    Defaults are Kafka's purgatory timer: 1 ms ticks, 20 buckets per level.
    Not thread-safe: its owner serialises calls.
    """

    def __init__(self, start_ms: int = 0, tick_ms: int = 1, wheel_size: int = 20) -> None:
        if tick_ms < 1 or wheel_size < 2:
            raise ValueError("tick_ms must be ≥ 1 and wheel_size ≥ 2")
        self._root: _Level[T] = _Level(tick_ms, wheel_size, start_ms)
        self._queue: list[tuple[int, int, _Bucket[T]]] = []  # (expiration, tie-break, bucket)
        self._tie = itertools.count()
        self._seq = itertools.count()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def current_ms(self) -> int:
        return self._root.current_ms

    def add(self, deadline_ms: int, payload: T) -> TimerTask[T]:
        """Schedule ``payload`` for ``deadline_ms``: O(1) (amortised over overflow creation).

        A deadline at or before the wheel's current time is due at the next
        :meth:`advance`.
        """
        task = TimerTask(deadline_ms, payload, next(self._seq))
        self._insert(task)
        self._size += 1
        return task

    def cancel(self, task: TimerTask[T]) -> bool:
        """Unschedule ``task`` in O(1); False if it already fired or was cancelled."""
        bucket = task._bucket
        if bucket is None:
            return False
        del bucket.tasks[task.seq]
        if not bucket.tasks:
            bucket.expiration_ms = -1  # its queue entry goes stale; a later add re-queues it
        task._bucket = None
        self._size -= 1
        return True

    def next_deadline_ms(self) -> int | None:
        """When :meth:`advance` next has something to do (a bucket's time), or None."""
        while self._queue:
            expiration, _tie, bucket = self._queue[0]
            if bucket.expiration_ms == expiration and bucket.tasks:
                return expiration
            heapq.heappop(self._queue)  # stale: the bucket was flushed or emptied
        return None

    def advance(self, now_ms: int) -> list[T]:
        """Move the clock to ``now_ms``; return the due payloads, by deadline then insertion."""
        due: list[TimerTask[T]] = []
        while True:
            head = self.next_deadline_ms()
            if head is None or head > now_ms:
                break
            _expiration, _tie, bucket = heapq.heappop(self._queue)
            self._root.advance_clock(bucket.expiration_ms)
            tasks = list(bucket.tasks.values())
            bucket.tasks.clear()
            bucket.expiration_ms = -1
            for task in tasks:
                task._bucket = None
                if not self._insert(task, park_if_due=task.deadline_ms > now_ms):
                    due.append(task)
        self._root.advance_clock(now_ms)
        self._size -= len(due)
        due.sort(key=lambda t: (t.deadline_ms, t.seq))
        return [t.payload for t in due]

    def _insert(self, task: TimerTask[T], *, park_if_due: bool = True) -> bool:
        """Place ``task`` in a bucket; False when it is due and was not parked.

        A task inside the lowest level's current tick is parked in a bucket of
        its own at its exact deadline (or the current time if that is later),
        so a tick coarser than 1 ms never fires it early; during
        :meth:`advance` a task whose deadline has passed (``park_if_due=False``)
        is returned to the caller to fire at once.
        """
        ready: list[_Bucket[T]] = []
        placed = self._root.add(task, ready)
        if not placed and park_if_due:
            bucket = _Bucket[T]()
            bucket.expiration_ms = max(task.deadline_ms, self._root.current_ms)
            bucket.tasks[task.seq] = task
            task._bucket = bucket
            ready.append(bucket)
            placed = True
        for bucket in ready:
            heapq.heappush(self._queue, (bucket.expiration_ms, next(self._tie), bucket))
        return placed
