"""What the bench measures: scenarios, one run's figures, a target's results in a scenario."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

SINGLE = "single node"
CLUSTER = "3 brokers RF=3"

OK = "ok"
UNAVAILABLE = "unavailable"
NOT_APPLICABLE = "not applicable"
FAILED = "failed"

THROUGHPUT_METRICS = (
    ("produce rec/s", "produce_rps"),
    ("produce MB/s", "produce_mbps"),
    ("fetch rec/s", "fetch_rps"),
    ("fetch MB/s", "fetch_mbps"),
    ("raw fetch rec/s", "raw_fetch_rps"),
    ("raw fetch MB/s", "raw_fetch_mbps"),
    ("raw produce rec/s", "raw_produce_rps"),
    ("raw produce MB/s", "raw_produce_mbps"),
)
LATENCY_METRICS = (
    ("e2e p50 ms", "p50_ms"),
    ("e2e p99 ms", "p99_ms"),
    ("e2e p999 ms", "p999_ms"),
)


@dataclass(frozen=True)
class Scenario:
    name: str
    value_size: int
    records: int
    acks: str = "1"
    partitions: int = 3
    brokers: int = 1
    replication_factor: int = 1

    @property
    def label(self) -> str:
        return f"{self.name} ({_size(self.value_size)}, acks={self.acks})"


def _size(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


@dataclass
class Latency:
    """End-to-end latency of one fixed-rate run: receive time minus the send time carried in the record."""

    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    records: int
    rate: float
    """The rate asked for, records per second."""
    achieved_rate: float
    """Records sent divided by the time the sending took."""
    saturated: str = ""
    """Why the target did not keep up with the rate (then the percentiles are NaN)."""


@dataclass
class Figures:
    """One measurement: throughput of produce and fetch, then latency at a fixed rate."""

    produce_rps: float
    produce_mbps: float
    fetch_rps: float
    fetch_mbps: float
    produce_s: float
    fetch_s: float
    raw_fetch_rps: float = math.nan
    """Records a second served to the raw fetch reader (batch headers only, no client library)."""
    raw_fetch_mbps: float = math.nan
    raw_produce_rps: float = math.nan
    """Records a second acknowledged to the raw produce writer (prebuilt batches, no client library)."""
    raw_produce_mbps: float = math.nan
    p50_ms: float = math.nan
    p99_ms: float = math.nan
    p999_ms: float = math.nan
    latency: Latency | None = None


@dataclass
class Result:
    scenario: Scenario
    target: str
    runs: list[Figures] = field(default_factory=list)
    status: str = OK
    reason: str = ""

    def median(self, name: str) -> float:
        values = [getattr(r, name) for r in self.runs]
        return statistics.median(values) if values else math.nan

    def medians(self) -> dict[str, float]:
        return {name: self.median(name) for _m, name in THROUGHPUT_METRICS + LATENCY_METRICS}


@dataclass(frozen=True)
class RawRun:
    """One run of the raw fetch reader or the raw produce writer: records, bytes, time, requests."""

    records: int
    bytes: int
    seconds: float
    requests: int

    @property
    def rps(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mbps(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else float("nan")


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence (``q`` in (0, 1])."""
    if not ordered:
        raise ValueError("no samples")
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]
