"""``kafka-harness report`` end to end: a tiny pytest run's Allure results become an HTML page whose
overview, rendered by headless Chromium, shows the run's totals, per-epic totals and target."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reports import allure
from reports.browser import BrowserUnavailableError, chromium, rendered_dom, screenshot
from reports.html_report import read_results, totals

TINY_SUITE = '''
import pytest
from reports import allure

def test_conformance_ok():
    allure.label(epic="Conformance", feature="Fetch", story="a rule that holds")
    allure.parameter("target", "tiny")

def test_conformance_broken_rule():
    allure.label(epic="Conformance", feature="Fetch", story="a rule that fails")
    allure.parameter("target", "tiny")
    assert 1 == 2, "[KIP-0] the deliberate failure"

@pytest.mark.parametrize("client", ["a", "b"])
def test_client_ok(client):
    allure.label(epic="Clients", feature="Produce", story="round trip")
    allure.parameter("target", "tiny")

def test_client_skipped():
    allure.label(epic="Clients", feature="Produce", story="not here")
    pytest.skip("client unavailable: none")
'''


def _needs_tools() -> None:
    if shutil.which("java") is None:
        pytest.skip("the Allure 2 CLI needs Java")
    try:
        chromium()
    except BrowserUnavailableError as exc:
        pytest.skip(str(exc))


def _tiny_run(tmp_path: Path, results: Path) -> None:
    (tmp_path / "test_tiny.py").write_text(TINY_SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--alluredir", str(results),
         "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"), str(tmp_path / "test_tiny.py")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 1, f"the tiny run should have one failure:\n{done.stdout[-2000:]}"


def _report(results: Path, out: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_harness", "report", "--results", str(results), "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, f"kafka-harness report failed: {done.stderr[-2000:]}"
    return done.stdout


def test_report_overview_shows_the_runs_totals(tmp_path: Path) -> None:
    """The report's overview shows as many test cases as the Allure results hold, the per-epic totals and
    the target, and a second report keeps the first one's history (two points on the trend)."""
    _needs_tools()
    results, out = tmp_path / "results", tmp_path / "html"
    _tiny_run(tmp_path, results)
    expected = totals(read_results(results))
    assert expected.total == 5 and expected.by_status["failed"] == 1, f"tiny run results: {expected}"

    _report(results, out)
    page = out / "index.html"
    dom = rendered_dom(page)
    shown = re.findall(r'class="splash__title"[^>]*>\s*(\d+)\s*<', dom)
    assert shown == [str(expected.total)], f"overview total {shown}, results hold {expected.total}"
    text = re.sub(r"<[^>]+>", " ", dom)
    for needle in ("Totals.Conformance", "2 tests: 1 passed, 1 failed", "Totals.Clients",
                   "3 tests: 2 passed, 1 skipped", "kafka-harness: tiny"):
        assert needle in text, f"the overview does not show {needle!r}"
    png = screenshot(page, tmp_path / "overview.png")
    assert png.stat().st_size > 10_000, "screenshot is (nearly) empty"
    allure.attach_file("report overview (headless Chromium)", png)

    _tiny_run(tmp_path, results)  # a second run into the same results, then a second report
    _report(results, out)
    trend = json.loads((out / "history" / "history-trend.json").read_text())
    assert len(trend) == 2, f"history-trend.json holds {len(trend)} runs, expected 2 (history kept)"


def test_report_without_results_is_a_clear_error(tmp_path: Path) -> None:
    """Bad input: a results folder that does not exist → a message naming it, exit 2."""
    done = subprocess.run(
        [sys.executable, "-m", "kafka_harness", "report", "--results", str(tmp_path / "nothing"),
         "--out", str(tmp_path / "html")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "nothing" in done.stderr, (done.returncode, done.stderr)
