"""Availability: ok and error rates per second, latencies, and recovery time after each fault.

Recovery after a fault is the time from the fault's end to the completion of the first ``ok``
client op invoked after that end: how long the system took to serve again once healed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from chaos.history import History, fault_windows


@dataclass
class Availability:
    seconds: list[int] = field(default_factory=list)
    ok_per_s: list[int] = field(default_factory=list)
    errors_per_s: list[int] = field(default_factory=list)
    latency_ms: dict[int, list[float]] = field(default_factory=dict)
    """Second -> latencies (ms) of ok ops completed in it (for percentiles in the plot)."""
    recovery_s: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        total = sum(self.ok_per_s)
        span = max(len(self.seconds), 1)
        return {
            "ok_ops": total,
            "errors": sum(self.errors_per_s),
            "ok_rate_per_s": round(total / span, 1),
            "recovery": self.recovery_s,
        }


def availability(history: History, fs: tuple[str, ...] = ("send", "txn")) -> Availability:
    ok: dict[int, int] = defaultdict(int)
    errors: dict[int, int] = defaultdict(int)
    latency: dict[int, list[float]] = defaultdict(list)
    ok_ops: list[tuple[float, float]] = []  # (invoke mono, completion mono)
    for invoke, done in history.pairs():
        if invoke.f not in fs or done is None:
            continue
        second = int(done.mono)
        if done.type == "ok":
            ok[second] += 1
            latency[second].append((done.mono - invoke.mono) * 1000)
            ok_ops.append((invoke.mono, done.mono))
        else:
            errors[second] += 1
    last = max([*ok, *errors, 0])
    result = Availability(
        list(range(last + 1)),
        [ok[s] for s in range(last + 1)],
        [errors[s] for s in range(last + 1)],
        dict(latency),
    )
    ok_ops.sort()
    for name, start, end in fault_windows(history):
        if end is None:
            result.recovery_s.append(
                {"fault": name, "start": round(start, 3), "end": None, "recovery_s": None}
            )
            continue
        after = [completed for invoked, completed in ok_ops if invoked >= end]
        result.recovery_s.append(
            {
                "fault": name,
                "start": round(start, 3),
                "end": round(end, 3),
                "recovery_s": round(min(after) - end, 3) if after else None,
            }
        )
    return result
