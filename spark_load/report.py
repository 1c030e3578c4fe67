"""A finished run as files (summary JSON, verdict JSON, PNGs) and as Allure results.

Allure goes through :mod:`reports.allure` only (the project's rule); inside a
pytest run with ``--alluredir`` the calls attach to the running test, outside
one they do nothing, so the CLI and the suites share this code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .memory import PeakMemory
from .metrics import DeliveryMetrics
from .verdict import Verdict


@dataclass
class RunResult:
    """Everything a load run produced; paths are inside ``run_dir``."""

    run_dir: Path
    target: str
    topic: str
    settings: dict[str, Any]
    wall_s: dict[str, float] = field(default_factory=dict)
    metrics: DeliveryMetrics | None = None
    verdict: Verdict | None = None
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    memory: PeakMemory | None = None
    """Peak resident memory of the driver and of this machine's Spark processes, read before the stop."""

    def summary(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "topic": self.topic,
            "settings": self.settings,
            "wall_s": self.wall_s,
            "metrics": self.metrics.to_json() if self.metrics else None,
            "verdict": self.verdict.to_json() if self.verdict else None,
            "plots": [str(p) for p in self.plots],
            "notes": self.notes,
            "peak_memory": self.memory.to_json() if self.memory else None,
        }

    def write(self) -> Path:
        path = self.run_dir / "summary.json"
        path.write_text(json.dumps(self.summary(), indent=2, sort_keys=True, default=str) + "\n")
        if self.verdict is not None:
            self.verdict.write_json(self.run_dir / "verdict.json")
        return path


def publish_to_allure(result: RunResult, *, story: str) -> None:
    """Label the running test as Load and attach the summary, the verdict and the plots."""
    from reports import allure as report

    report.label(epic="Load", feature=result.target, story=story)
    for name, value in result.settings.items():
        report.parameter(name, value)
    report.attach_json("load summary", result.summary())
    if result.verdict is not None:
        report.attach_text("verdict", result.verdict.line())
        for anomaly, rows in result.verdict.samples.items():
            with report.step(f"{anomaly}: {result.verdict.counts.get(anomaly, 0)}"):
                report.attach_json(f"{anomaly} examples", rows)
    for plot in result.plots:
        report.attach_file(plot.stem, plot)


def publish_run_dir(run_dir: Path, *, target: str, story: str) -> None:
    """Attach a finished CLI run (its summary, verdict and plots) to the running test."""
    from reports import allure as report

    report.label(epic="Load", feature=target, story=story)
    for name in ("summary.json", "verdict.json"):
        if (run_dir / name).exists():
            report.attach_file(name, run_dir / name)
    for plot in sorted(run_dir.glob("*.png")):
        report.attach_file(plot.stem, plot)


def write_allure_result(result: RunResult, results_dir: Path) -> None:
    """Record a CLI run as one Allure result (epic Load) beside pytest's, with its files attached."""
    from reports import allure as report

    verdict = result.verdict
    lines = [verdict.line() if verdict else "not verified"]
    if result.metrics is not None:
        lines.append(result.metrics.line())
    lines += [f"note: {note}" for note in result.notes]
    files = [(name, result.run_dir / name) for name in ("summary.json", "verdict.json")]
    files += [(plot.stem, plot) for plot in result.plots]
    records = result.settings.get("records", "?")
    report.write_result(
        results_dir,
        name=f"kafka-harness load: {records} records on {result.target}",
        full_name=f"spark_load.cli.{result.target}.records-{records}",
        epic="Load",
        feature=result.target,
        story="produce, read back and verify" if verdict else "produce",
        passed=verdict.valid if verdict else True,
        message="\n".join(lines),
        parameters=result.settings,
        attachments=[(name, path) for name, path in files if path.exists()],
    )
