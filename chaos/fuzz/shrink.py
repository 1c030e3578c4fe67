"""Delta debugging over a frame's bytes: the smallest payload that still reproduces an outcome.

Zeller and Hildebrandt's ddmin: cut the payload into ``n`` chunks, keep any complement that still
reproduces, double ``n`` when none does, stop at single bytes. The size prefix is recomputed
for every candidate, so what is tested is always one whole frame. Each test against a real
target costs a request (for a crash, a restart as well), so the search is bounded by attempts
and by time and returns the smallest payload found so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .mutate import frame_of


@dataclass(frozen=True, slots=True)
class Shrunk:
    frame: bytes
    attempts: int
    original_size: int
    complete: bool
    """Whether ddmin finished (1-minimal) rather than running out of attempts or time."""


def ddmin(frame: bytes, reproduces: Callable[[bytes], bool], *, max_attempts: int = 200,
          time_s: float = 60.0, keep: int = 0) -> Shrunk:
    """Shrink ``frame`` (size prefix included) while ``reproduces(candidate_frame)`` holds.

    ``keep`` leading payload bytes are never cut (the API key and version, so a crash stays
    filed under its API).
    """
    payload = frame[4:]
    head, data = payload[:keep], payload[keep:]
    deadline = time.monotonic() + time_s
    attempts = 0
    n = 2
    complete = False
    while len(data) >= 1:
        if attempts >= max_attempts or time.monotonic() >= deadline:
            break
        n = min(n, len(data))
        chunk = -(-len(data) // n)
        reduced = False
        for start in range(0, len(data), chunk):
            if attempts >= max_attempts or time.monotonic() >= deadline:
                break
            candidate = data[:start] + data[start + chunk :]
            attempts += 1
            if reproduces(frame_of(head + candidate)):
                data = candidate
                n = max(n - 1, 2)
                reduced = True
                break
        if reduced:
            continue
        if n >= len(data):
            complete = True
            break
        n = min(n * 2, len(data))
    return Shrunk(frame_of(head + data), attempts, len(frame), complete)
