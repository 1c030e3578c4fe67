"""What the bench writes: the JSON for the report, and one Allure result (only through reports.allure)."""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .model import CLUSTER, FAILED, SINGLE, UNAVAILABLE, Result
from .table import ratio


def _clean(value: Any) -> Any:
    """NaN is not JSON: missing figures become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def replicated_ratios(results: list[Result]) -> dict[str, dict[str, dict[str, float]]]:
    """target -> value size -> metric -> the 3-broker RF=3 acks=all median over the single-node acks=1 one."""
    found = {(r.scenario.name, r.scenario.value_size, r.target): r for r in results if r.runs}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (name, size, target), cluster in found.items():
        single = found.get((SINGLE, size, target))
        if name == CLUSTER and single is not None:
            a, b = cluster.medians(), single.medians()
            out.setdefault(target, {})[str(size)] = {k: ratio(a[k], b[k]) for k in a}
    return out


def payload(results: list[Result], args: argparse.Namespace, table: str) -> dict[str, Any]:
    ratios: dict[str, dict[str, float]] = {}
    if len(args.specs) == 2:
        for sc in dict.fromkeys(r.scenario for r in results):
            pair = [next(r for r in results if r.scenario == sc and r.target == t) for t in args.specs]
            a, b = pair[0].medians(), pair[1].medians()
            ratios[sc.label] = {k: ratio(a[k], b[k]) for k in a}
    cleaned: dict[str, Any] = _clean({
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "table": table,
        "settings": {
            "targets": args.specs,
            "latency_rate": args.rate,
            "latency_seconds": args.latency_seconds,
            "repeat": args.repeat,
            "value_sizes": args.sizes,
        },
        "results": [
            {
                "scenario": asdict(r.scenario),
                "label": r.scenario.label,
                "target": r.target,
                "status": r.status,
                "reason": r.reason,
                "medians": r.medians(),
                "runs": [asdict(f) for f in r.runs],
            }
            for r in results
        ],
        "ratios": {"of": "/".join(args.specs), "by_scenario": ratios} if ratios else {},
        "replicated_vs_single": replicated_ratios(results),
    })
    return cleaned


def write_allure(
    args: argparse.Namespace, results: list[Result], files: list[tuple[str, Path]], start_ms: int
) -> None:
    """One result for the whole bench: failed only when a measurement failed (figures are never judged)."""
    from reports.allure import write_result

    args.alluredir.mkdir(parents=True, exist_ok=True)
    failed = [r for r in results if r.status == FAILED]
    unavailable = [r for r in results if r.status == UNAVAILABLE]
    notes = [f"{r.target} {r.scenario.label} {r.status}: {r.reason}" for r in failed + unavailable]
    notes += [
        f"{r.target} {r.scenario.label} latency {run.latency.saturated}"
        for r in results
        for run in r.runs[:1]
        if run.latency is not None and run.latency.saturated
    ]
    message = "; ".join(notes)
    write_result(
        args.alluredir,
        name=f"bench: {' vs '.join(args.specs)}",
        full_name="kafka_harness.bench",
        epic="Benchmarks",
        feature="Throughput and latency",
        story="produce and fetch throughput, end-to-end latency at a fixed rate (medians)",
        passed=not failed,
        message=message,
        parameters={
            "targets": ",".join(args.specs),
            "scenarios": ", ".join(dict.fromkeys(r.scenario.label for r in results)),
            "latency rate (rec/s)": f"{args.rate:g}",
            "latency seconds": f"{args.latency_seconds:g}",
            "repetitions": args.repeat,
        },
        attachments=files,
        start_ms=start_ms,
        stop_ms=int(time.time() * 1000),
    )
