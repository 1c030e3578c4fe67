"""The bench's text table: one row per scenario and metric, one column per target, and the ratio."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .model import CLUSTER, LATENCY_METRICS, NOT_APPLICABLE, OK, SINGLE, THROUGHPUT_METRICS, Result, Scenario

LABEL_W, METRIC_W, CELL_W, RATIO_W = 38, 16, 19, 18
"""CELL_W fits ``reference+sasl_ssl`` (bench --security) with a space before it."""
SHORT = {NOT_APPLICABLE: "single broker"}


@dataclass(frozen=True)
class Settings:
    """What the footer states: how the figures were taken."""

    rate: float
    latency_s: float
    repeat: int


def ratio(a: float, b: float) -> float:
    return a / b if math.isfinite(a) and math.isfinite(b) and b else math.nan


def _cell(value: float, metric: str) -> str:
    if not math.isfinite(value):
        return "-"
    if "rec/s" in metric:
        return f"{value:,.0f}"
    return f"{value:,.1f}" if "MB" in metric else f"{value:,.2f}"


def _latency_saturated(result: Result) -> str:
    for run in result.runs:
        if run.latency is not None and run.latency.saturated:
            return run.latency.saturated
    return ""


def _scenario_rows(sc: Scenario, by_target: dict[str, Result], targets: list[str]) -> list[str]:
    present = [by_target[t] for t in targets if t in by_target]
    lines: list[str] = []
    if present and not any(r.runs for r in present):
        label = sc.label
        for r in present:
            lines.append(f"{label:<{LABEL_W}}{r.target} {r.status}: {r.reason}")
            label = ""
        return lines
    label = sc.label
    for metric, name in THROUGHPUT_METRICS + LATENCY_METRICS:
        cells, values = [], []
        for t in targets:
            cell = by_target.get(t)
            value = math.nan
            if cell is None:
                text = ""
            elif not cell.runs:
                text = SHORT.get(cell.status, cell.status)
            elif (metric, name) in LATENCY_METRICS and _latency_saturated(cell):
                text = "saturated"
            else:
                value = cell.median(name)
                text = _cell(value, metric)
            cells.append(f"{text:>{CELL_W}}")
            values.append(value)
        row = f"{label:<{LABEL_W}}{metric:<{METRIC_W}}" + "".join(cells)
        if len(values) == 2 and math.isfinite(ratio(*values)):
            row += f"{ratio(*values):>{RATIO_W - 1}.2f}x"
        lines.append(row.rstrip())
        label = ""
    for t in targets:
        note = by_target.get(t)
        if note is not None and note.status != OK:
            lines.append(f"{'':<{LABEL_W}}  {t} {note.status}: {note.reason}")
        elif note is not None and _latency_saturated(note):
            lines.append(f"{'':<{LABEL_W}}  {t} latency {_latency_saturated(note)}")
    return lines


def format_table(results: list[Result], targets: list[str], settings: Settings) -> str:
    head = f"{'scenario':<{LABEL_W}}{'metric':<{METRIC_W}}" + "".join(f"{t:>{CELL_W}}" for t in targets)
    if len(targets) == 2:
        head += f"{targets[0] + '/' + targets[1]:>{RATIO_W}}"
    lines = [head, "-" * len(head)]
    for sc in dict.fromkeys(r.scenario for r in results):
        lines += _scenario_rows(sc, {r.target: r for r in results if r.scenario == sc}, targets)
    lines.append("-" * len(head))
    replicated = replication_rows(results, targets)
    if replicated:
        lines += replicated
        lines.append("-" * len(head))
    lines += footer(results, settings)
    return "\n".join(lines)


REPLICATION_METRICS = (
    ("produce rec/s", "produce_rps"),
    ("raw produce rec/s", "raw_produce_rps"),
    ("raw fetch rec/s", "raw_fetch_rps"),
    ("e2e p50 ms", "p50_ms"),
)


def replication_rows(results: list[Result], targets: list[str]) -> list[str]:
    """Each target's replicated scenario beside its single-node acks=1 one, same record size, and the
    ratio replicated/single (issue 22's goal: produce at least 0.5x)."""
    found = {(r.scenario.name, r.scenario.value_size, r.target): r for r in results if r.runs}
    lines: list[str] = []
    for t in targets:
        for size in dict.fromkeys(r.scenario.value_size for r in results):
            single, cluster = found.get((SINGLE, size, t)), found.get((CLUSTER, size, t))
            if single is None or cluster is None:
                continue
            if not lines:
                lines.append(f"{'replicated vs single node':<{LABEL_W}}{'metric':<{METRIC_W}}"
                             f"{'3 brokers':>{CELL_W}}{'1 broker':>{CELL_W}}{'ratio':>{RATIO_W}}")
            label = f"{t} ({cluster.scenario.label.split('(', 1)[1]}"[:LABEL_W - 1]
            for metric, name in REPLICATION_METRICS:
                a, b = cluster.median(name), single.median(name)
                row = (f"{label:<{LABEL_W}}{metric:<{METRIC_W}}"
                       f"{_cell(a, metric):>{CELL_W}}{_cell(b, metric):>{CELL_W}}")
                if math.isfinite(ratio(a, b)):
                    row += f"{ratio(a, b):>{RATIO_W - 1}.2f}x"
                lines.append(row.rstrip())
                label = ""
    return lines


def footer(results: list[Result], settings: Settings) -> list[str]:
    lines = [
        f"medians of {settings.repeat} interleaved repetition(s); throughput: confluent-kafka, linger.ms=5;",
        f"e2e latency: receive time - send time in the record, at a fixed {settings.rate:,.0f} rec/s for "
        f"{settings.latency_s:g} s per run (linger.ms=1, fetch.wait.max.ms=100)",
    ]
    measured = [(r.median("produce_rps"), r) for r in results if r.runs]
    measured = [(rps, r) for rps, r in measured if math.isfinite(rps)]
    if measured:
        lowest, r = min(measured, key=lambda pair: pair[0])
        lines.append(
            f"that rate is {settings.rate / lowest:.0%} of the lowest produce throughput measured "
            f"({lowest:,.0f} rec/s, {r.target}, {r.scenario.label})"
        )
        for rps, r in measured:
            if settings.rate > rps / 2:
                lines.append(f"  above half of {r.target}'s {rps:,.0f} rec/s in {r.scenario.label}: "
                             "its latency includes queueing")
    return lines
