"""The main job's verdict: counts read back from what each stage wrote, one table for a person.

Counts come from the Allure results each stage wrote (the same files the HTML
report is built from), so the table and the report cannot disagree. A test
that ran as a strict xfail is an *expected deviation* (declared in the
target's expectations file, with its reason); it does not fail the job. A
failure, a harness error (Allure's ``broken``) or a stage that could not
finish does, and so does a stage declared as a deviation that passed (strict,
like the tests' xfails: the expectations file must be updated).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .stages import StageResult

OUTCOMES = ("passed", "failed", "broken", "expected", "skipped")


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    """Names of the failed and broken results (the first few go in the summary)."""

    def add(self, other: Tally) -> None:
        self.counts.update(other.counts)
        self.failures.extend(other.failures)

    @property
    def bad(self) -> int:
        return self.counts["failed"] + self.counts["broken"]


def outcome_of(result: dict[str, object]) -> str:
    """passed / failed / broken / expected (a strict xfail that failed as declared) / skipped."""
    status = str(result.get("status", "unknown"))
    details = result.get("statusDetails") or {}
    message = str(details.get("message", "")) if isinstance(details, dict) else ""
    if status == "skipped" and message.startswith("XFAIL"):
        return "expected"
    if status in ("passed", "failed", "broken", "skipped"):
        return status
    return "broken"


def tally_results(results_dir: Path) -> Tally:
    """Count the ``*-result.json`` files of one Allure results folder by outcome."""
    tally = Tally()
    if not results_dir.is_dir():
        return tally
    for path in sorted(results_dir.glob("*-result.json")):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            tally.counts["broken"] += 1
            tally.failures.append(f"{path.name}: unreadable result")
            continue
        outcome = outcome_of(result)
        tally.counts[outcome] += 1
        if outcome in ("failed", "broken"):
            tally.failures.append(str(result.get("fullName") or result.get("name")))
    return tally


@dataclass
class Row:
    level: str
    tally: Tally
    detail: str
    ok: bool


def stage_figures(out_dir: Path | None) -> str:
    """What a chaos, fuzz or load stage measured, from the files it wrote: acknowledged writes and
    anomaly counts (chaos ``result.json``), requests, rate and failures (fuzz ``summary.json``),
    throughput and latency (load ``summary.json``)."""
    if out_dir is None or not out_dir.is_dir():
        return ""
    chaos = out_dir / "result.json"
    if chaos.exists():
        data = json.loads(chaos.read_text())
        stats, counts = data.get("stats", {}), data.get("counts", {})
        anomalies = " ".join(f"{k}={v}" for k, v in counts.items() if v)
        return f"acked={stats.get('acked', '?')} " + (anomalies or "no anomalies")
    for summary in sorted(out_dir.rglob("summary.json")):
        data = json.loads(summary.read_text())
        if "requests_per_s" in data:  # kafka-harness fuzz
            return (f"{data['requests']:,} requests at {data['requests_per_s']:,.0f}/s, "
                    f"crashes={len(data.get('crashes', []))} hangs={data.get('hangs', 0)} "
                    f"lost={data.get('lost', 0)} rss_peak_mb={data.get('rss_peak_mb', 0):.0f}")
        metrics = data.get("metrics") or {}
        if "records_per_s" in metrics:
            return (f"{metrics['records_per_s']:,.0f} records/s, p99 {metrics.get('p99_ms', 0):.0f} ms, "
                    f"acked={metrics.get('acked', '?')}")
    return ""


def row_for(stage_result: StageResult, tally: Tally) -> Row:
    """One line of the table: the stage's counts and what else it said (verdicts, anomaly counts)."""
    stage = stage_result.stage
    notes = []
    if stage_result.verdict is not None:
        notes.append(f"VERDICT {stage_result.verdict}")
    figures = stage_figures(stage.out_dir)
    if figures:
        notes.append(figures)
    if stage_result.timed_out:
        notes.append(f"overran its {stage.budget_s:.0f} s budget")
    elif stage_result.returncode not in (0, None) and not tally.bad and stage_result.verdict is None:
        notes.append(f"exit {stage_result.returncode}")
    notes.append(f"{stage_result.seconds:.0f} s")
    ok = stage_result.ok and not tally.bad
    if ok and stage.expected_deviation and stage.deviation_is_intermittent:
        notes.append("the declared intermittent deviation did not show in this run")
    elif ok and stage.expected_deviation:
        notes.append(f"declared deviation did not happen: remove stage::{stage.name} from the expectations")
        return Row(stage.name, tally, "; ".join(notes), False)
    if not ok and stage.expected_deviation:
        notes.append(f"expected deviation: {stage.expected_deviation}")
        tally.counts["expected"] += max(1, tally.bad)
        tally.counts["failed"] = 0
        tally.counts["broken"] = 0
        tally.failures.clear()
        ok = True
    return Row(stage.name, tally, "; ".join(notes), ok)


def table(rows: list[Row], extra: dict[str, str] | None = None) -> str:
    """Aligned text: one row per stage, then totals."""
    header = ["stage", *OUTCOMES, "verdict", "notes"]
    lines = [header]
    total = Tally()
    for row in rows:
        total.add(row.tally)
        lines.append([row.level, *(str(row.tally.counts[o]) for o in OUTCOMES), "ok" if row.ok else "FAIL",
                      row.detail])
    lines.append(["total", *(str(total.counts[o]) for o in OUTCOMES),
                  "ok" if all(r.ok for r in rows) else "FAIL", ""])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    out = []
    for n, line in enumerate(lines):
        cells = [c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(line[:-1])]
        out.append("  ".join([*cells, line[-1]]).rstrip())
        if n == 0 or n == len(lines) - 2:
            out.append("-" * min(110, sum(widths) + 2 * len(widths) + 10))
    for key, value in (extra or {}).items():
        out.append(f"{key}: {value}")
    return "\n".join(out)
