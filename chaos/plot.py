"""The campaign timeline as a PNG: ok and error ops per second, latency percentiles, fault windows.

matplotlib only (Agg backend, no display); Allure attaches the file through reports/allure.py.
"""

from __future__ import annotations

from pathlib import Path

from chaos.checkers.availability import Availability
from chaos.history import History, fault_windows


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timeline_png(history: History, availability: Availability, path: str | Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seconds = availability.seconds
    fig, (rates, latency) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    rates.plot(seconds, availability.ok_per_s, color="tab:green", label="ok ops/s")
    rates.plot(seconds, availability.errors_per_s, color="tab:red", label="fail+info ops/s")
    rates.set_ylabel("ops per second")
    for q, style in ((0.5, "-"), (0.95, "--"), (0.99, ":")):
        points = [
            (s, _percentile(availability.latency_ms[s], q)) for s in seconds if availability.latency_ms.get(s)
        ]
        if points:
            latency.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                style,
                color="tab:blue",
                label=f"p{int(q * 100)}",
            )
    latency.set_ylabel("ok latency (ms)")
    latency.set_yscale("log")
    latency.set_xlabel("seconds since start")
    end = seconds[-1] if seconds else 0
    for axis in (rates, latency):
        for n, (name, start, stop) in enumerate(fault_windows(history)):
            axis.axvspan(
                start,
                stop if stop is not None else end,
                color="tab:orange",
                alpha=0.2,
                label=name if axis is rates and n < 12 else None,
            )
        axis.legend(loc="upper right", fontsize=7)
        axis.grid(alpha=0.3)
    rates.set_title(title)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
