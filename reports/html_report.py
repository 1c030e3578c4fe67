"""The HTML report: Allure results (``reports/output/allure-results``) → ``reports/output/html/index.html``.

The Allure 2 command line (npm ``allure-commandline``, on Java) renders it. The
page is one self-contained file (``--single-file``), so it opens from disk
without a web server. Trends need Allure's ``history/`` from the previous
report; a single-file report does not write one, so the history is taken from
a second, ordinary rendering into a scratch folder and kept in
``OUT/history``, and copied into the results before the next run.

Before rendering, the results folder gets what the overview page shows beside
the totals: ``environment.properties`` gains per-epic totals, ``categories.json``
is written if a run did not, and ``executor.json`` names the report after its
targets.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import allure
from .npm import allure_cli

STATUSES = ("passed", "failed", "broken", "skipped", "unknown")


class ReportError(RuntimeError):
    """The report cannot be built (the reason is for the user)."""


@dataclass
class Totals:
    """What the results hold: one entry per test (the latest of its retries)."""

    total: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    by_epic: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    expected_deviations: int = 0
    targets: set[str] = field(default_factory=set)


def read_results(results_dir: Path, *, max_bytes: int | None = None) -> list[dict[str, Any]]:
    """Every ``*-result.json``, keeping only the latest result per ``historyId`` (as Allure does);
    with ``max_bytes``, larger files are left out unread."""
    latest: dict[str, dict[str, Any]] = {}
    for path in results_dir.glob("*-result.json"):
        try:
            if max_bytes is not None and path.stat().st_size > max_bytes:
                continue
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        key = result.get("historyId") or result.get("uuid") or path.name
        if key not in latest or result.get("stop", 0) >= latest[key].get("stop", 0):
            latest[key] = result
    return list(latest.values())


def totals(results: list[dict[str, Any]]) -> Totals:
    out = Totals()
    for r in results:
        status = r.get("status") or "unknown"
        labels = {lb.get("name"): lb.get("value") for lb in r.get("labels", ())}
        epic = labels.get("epic") or "No epic"
        out.total += 1
        out.by_status[status] += 1
        out.by_epic[epic][status] += 1
        message = (r.get("statusDetails") or {}).get("message") or ""
        if status == "skipped" and message.startswith("XFAIL"):
            out.expected_deviations += 1
            out.by_epic[epic]["expected deviation"] += 1
        for p in r.get("parameters", ()):
            if p.get("name") == "target":
                out.targets.add(str(p.get("value")).strip("'\""))
    return out


def describe(counts: Counter[str]) -> str:
    """``12 tests: 9 passed, 2 skipped (1 expected deviation), 1 failed``."""
    n = sum(counts[s] for s in STATUSES)
    parts = [f"{counts[s]} {s}" for s in STATUSES if counts[s]]
    if counts["expected deviation"]:
        parts.append(f"of the skipped, {counts['expected deviation']} expected deviations")
    return f"{n} tests: " + ", ".join(parts)


def prepare_results(results_dir: Path, out_dir: Path) -> Totals:
    """Add what the overview shows (per-epic totals, categories, the report's name), and the last history."""
    found = totals(read_results(results_dir))
    if found.total == 0:
        raise ReportError(f"no Allure results in {results_dir} (run pytest with --alluredir {results_dir})")
    # Allure's environment widget shows the first five entries by name; capitalised names sort before the
    # lower-case client versions, so the target, the run's totals and the first epics are on the overview
    props = {f"Totals.{epic}": describe(counts) for epic, counts in sorted(found.by_epic.items())}
    props["Tests"] = describe(found.by_status + Counter({"expected deviation": found.expected_deviations}))
    allure.write_environment(results_dir, props)
    if not (results_dir / "categories.json").exists():
        allure.write_categories(results_dir)
    names = ", ".join(sorted(found.targets)) or "no target"
    executor = {"name": "kafka-harness", "type": "kafka-harness", "reportName": f"kafka-harness: {names}",
                "buildName": f"kafka-harness against {names}"}
    (results_dir / "executor.json").write_text(json.dumps(executor, indent=2))
    previous = out_dir / "history"
    if previous.is_dir():
        shutil.copytree(previous, results_dir / "history", dirs_exist_ok=True)
    return found


def _allure(args: list[str], timeout_s: float) -> None:
    if shutil.which("java") is None:
        raise ReportError("the Allure 2 CLI needs Java (apt-get install default-jre-headless)")
    try:
        cli = allure_cli()
    except RuntimeError as exc:
        raise ReportError(f"the Allure CLI is not installed and could not be: {exc}") from None
    try:
        done = subprocess.run([str(cli), *args], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ReportError(f"allure {args[0]} took longer than {timeout_s:.0f}s") from None
    if done.returncode != 0:
        raise ReportError(f"allure {args[0]} failed: {(done.stderr or done.stdout).strip()[-800:]}")


def build(results_dir: str | Path, out_dir: str | Path, *, timeout_s: float = 600.0) -> tuple[Totals, float]:
    """Render the report; returns the totals it shows and the seconds it took."""
    start = time.monotonic()
    results, out = Path(results_dir), Path(out_dir)
    if not results.is_dir():
        raise ReportError(f"no results folder {results} (run pytest with --alluredir {results})")
    found = prepare_results(results, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kh-allure-") as scratch:
        full = Path(scratch) / "report"
        _allure(["generate", str(results), "-o", str(full), "--clean"], timeout_s)
        _allure(["generate", str(results), "-o", str(out), "--clean", "--single-file"], timeout_s)
        if (full / "history").is_dir():
            shutil.copytree(full / "history", out / "history", dirs_exist_ok=True)
    return found, time.monotonic() - start
