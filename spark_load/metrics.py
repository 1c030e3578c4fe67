"""Throughput and delivery-latency figures of a run, in plain values the CLI and the plots use.

MB means 10^6 bytes; a record's bytes are its key plus its value. Throughput
is measured over the records' own span (first send to last acknowledgement),
so Spark's start-up is not in it; the run's wall time is reported beside it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class DeliveryMetrics:
    acked: int
    failed: int
    acked_bytes: int
    span_s: float
    """First send to last acknowledgement."""
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    """(second since the first send, records acknowledged in it, bytes acknowledged in it)."""
    latency_histogram: list[tuple[float, float, int]] = field(default_factory=list)
    """(lower ms, upper ms, records) on log-spaced buckets."""

    @property
    def records_per_s(self) -> float:
        return self.acked / self.span_s if self.span_s > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.acked_bytes / 1e6 / self.span_s if self.span_s > 0 else 0.0

    def line(self) -> str:
        def ms(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.1f} ms"

        return (
            f"throughput: {self.records_per_s:,.0f} records/s, {self.mb_per_s:.2f} MB/s "
            f"over {self.span_s:.2f}s; "
            f"delivery latency p50 {ms(self.p50_ms)}, p99 {ms(self.p99_ms)}, max {ms(self.max_ms)}"
        )

    def to_json(self) -> dict[str, Any]:
        values = asdict(self)
        values["records_per_s"] = self.records_per_s
        values["mb_per_s"] = self.mb_per_s
        return values
