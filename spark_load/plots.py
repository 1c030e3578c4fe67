"""PNG plots of a run: acknowledged throughput per second, and the delivery-latency histogram.

They take the small aggregates of :class:`spark_load.metrics.DeliveryMetrics`
(one point per second, one bar per bucket), never the records themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .metrics import DeliveryMetrics


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: str | Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def plot_throughput(metrics: DeliveryMetrics, path: str | Path, title: str) -> Path:
    plt = _pyplot()
    fig, records_axis = plt.subplots(figsize=(9, 4))
    seconds = [second for second, _records, _bytes in metrics.timeline]
    records_axis.plot(
        seconds, [records for _s, records, _b in metrics.timeline], marker=".", color="tab:blue"
    )
    records_axis.set_xlabel("seconds since the first send")
    records_axis.set_ylabel("records acknowledged per second", color="tab:blue")
    bytes_axis = records_axis.twinx()
    bytes_axis.plot(seconds, [b / 1e6 for _s, _r, b in metrics.timeline], color="tab:orange", alpha=0.6)
    bytes_axis.set_ylabel("MB acknowledged per second", color="tab:orange")
    records_axis.set_title(f"{title}: {metrics.records_per_s:,.0f} records/s, {metrics.mb_per_s:.2f} MB/s")
    records_axis.grid(alpha=0.3)
    return _save(plt, fig, path)


def plot_latency_histogram(metrics: DeliveryMetrics, path: str | Path, title: str) -> Path:
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(9, 4))
    for low, high, count in metrics.latency_histogram:
        axis.bar(low, count, width=high - low, align="edge", color="tab:blue", edgecolor="white")
    axis.set_xscale("log")
    axis.set_xlabel("delivery latency (ms, send to acknowledgement)")
    axis.set_ylabel("records")
    for value, label in ((metrics.p50_ms, "p50"), (metrics.p99_ms, "p99")):
        if value:
            axis.axvline(value, color="tab:red", linestyle="--", alpha=0.7)
            axis.annotate(f"{label} {value:.1f} ms", (value, axis.get_ylim()[1] * 0.9), color="tab:red")
    axis.set_title(f"{title}: delivery latency")
    axis.grid(alpha=0.3)
    return _save(plt, fig, path)
