"""Seeded fault schedules: the same seed and options give the same schedule, event for event.

A campaign of ``total_s`` seconds starts quiet (clients warm up), then alternates one fault
window and one quiet gap, and ends with a quiet tail in which the system should recover. Each
entry also carries a ``pick`` number the fault uses to choose among equal targets (which node to
isolate when there is no leader to name), so node choices replay too.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

FAULTS = (
    "partition-node",
    "partition-leader",
    "partition-leader-peers",
    "strand-leader",
    "partition-controller",
    "partition-coordinator",
    "partition-halves",
    "partition-ring",
    "partition-client",
    "latency",
    "bandwidth",
    "reset-peer",
    "timeout",
    "slicer",
    "kill",
    "restart-isolated",
    "pause",
    "bounce",
    "packet-drop",
    "packet-loss",
    "clock-skew",
    "clock-jump",
    "disk-full",
    "membership",
    "log-dir-fail",
)
ALIASES = {"partition": "partition-node", "kill9": "kill", "stop": "pause", "reset_peer": "reset-peer"}


@dataclass(frozen=True)
class Planned:
    id: int
    fault: str
    start_s: float
    duration_s: float
    pick: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def parse_faults(spec: str) -> list[str]:
    """``partition-leader,kill,pause`` -> fault names; unknown names raise ValueError listing the known."""
    names = [ALIASES.get(s.strip(), s.strip()) for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise ValueError(f"unknown nemesis {', '.join(unknown)} (known: {', '.join(FAULTS)})")
    return names


def schedule(
    faults: list[str],
    total_s: float,
    seed: int,
    *,
    warmup_s: float = 5.0,
    tail_fraction: float = 0.25,
    fault_s: tuple[float, float] = (3.0, 8.0),
    gap_s: tuple[float, float] = (3.0, 6.0),
) -> list[Planned]:
    """Non-overlapping fault windows inside [warmup, total - tail], chosen by ``random.Random(seed)``."""
    if not faults:
        return []
    rng = random.Random(seed)
    end = total_s * (1 - tail_fraction)
    t = min(warmup_s, total_s * 0.15)
    out: list[Planned] = []
    for _ in range(10_000):
        duration = round(rng.uniform(*fault_s), 3)
        if t + duration > end:
            break
        out.append(Planned(len(out), rng.choice(faults), round(t, 3), duration, rng.randrange(1 << 30)))
        t += duration + rng.uniform(*gap_s)
    if not out and end - t > 0.5:  # a short campaign still gets one fault
        out.append(
            Planned(
                0, rng.choice(faults), round(t, 3), round(min(fault_s[0], end - t), 3), rng.randrange(1 << 30)
            )
        )
    return out
