"""A seeded event queue and the virtual clock it advances.

Events run in (time, insertion order): two events at the same virtual
millisecond run in the order they were scheduled, so nothing depends on
hashing or on the wall clock, and the same seed gives the same run.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Deliver(NamedTuple):
    """A message arrives at its destination (``attempt``: how many times it was sent again).

    Deliveries and wakeups are named tuples, not frozen dataclasses: the loop makes one per
    event, and a tuple costs a fraction of a frozen dataclass's guarded assignments."""

    envelope: Any
    attempt: int = 0


class Wake(NamedTuple):
    """A node's timer: ``generation`` tells a current wakeup from one superseded since."""

    node_id: int
    generation: int


@dataclass(frozen=True, slots=True)
class Action:
    """A scripted step of the test (crash, restart, partition, client append...), named for the trace."""

    name: str
    run: Callable[[], None] = field(compare=False)


@dataclass(frozen=True, slots=True)
class Resend:
    """A message the network lost, sent again by its sender's transport (a TCP retransmission)."""

    envelope: Any
    attempt: int


SimEvent = Deliver | Wake | Action | Resend


class Scheduler:
    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms
        self._queue: list[tuple[int, int, SimEvent]] = []
        self._sequence = itertools.count()

    def schedule(self, time_ms: int, event: SimEvent) -> None:
        heapq.heappush(self._queue, (max(time_ms, self.now_ms), next(self._sequence), event))

    def pop(self) -> SimEvent | None:
        """The next event, advancing the clock to its time; None when nothing is left."""
        if not self._queue:
            return None
        time_ms, _seq, event = heapq.heappop(self._queue)
        self.now_ms = time_ms
        return event

    def peek_time_ms(self) -> int | None:
        return self._queue[0][0] if self._queue else None

    def __len__(self) -> int:
        return len(self._queue)
