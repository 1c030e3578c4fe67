"""Report honesty (issue 23): a main job with one stage deliberately failing before it writes any result
(a ``ModuleNotFoundError``) and one that cannot run (PySpark missing) builds a report whose overview,
rendered by headless Chromium, shows the run's table: same total, the broken stage with its log, the
stage that could not run in its own category, no "100 %" under an invalid verdict, well-formed
environment keys."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from kafka_harness.main_job import EXIT_CANNOT_RUN, EXIT_FAILED, run_plan
from kafka_harness.run.stages import Stage, StageResult, run_stage
from kafka_harness.run.summary import row_for, settle, tally_results
from reports.browser import BrowserUnavailableError, chromium, rendered_dom

PASSING_SUITE = """
from reports import allure

def test_one():
    allure.label(epic="Conformance", feature="Fetch", story="A rule that holds")
    allure.parameter("target", "tiny")

def test_two():
    allure.label(epic="Conformance", feature="Fetch", story="Another rule that holds")
    allure.parameter("target", "tiny")
"""
NO_PYSPARK = (
    "import sys; sys.modules['pyspark'] = None; from kafka_harness.cli import main; "
    "sys.exit(main(['load', '--synthetic', '10', '--verify', '--out', sys.argv[1]]))"
)


def _plan(tmp_path: Path, work: Path) -> list[Stage]:
    (tmp_path / "test_tiny.py").write_text(PASSING_SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    tiny = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-c",
        str(tmp_path / "pytest.ini"),
        "--rootdir",
        str(tmp_path),
        str(tmp_path / "test_tiny.py"),
        "--alluredir",
        str(work / "results" / "conformance"),
    ]
    return [
        Stage("conformance", "Conformance", tiny, 120),
        Stage("property", "Property", [sys.executable, "-c", "import kh_no_such_module_for_the_test"], 60),
        Stage("load", "Load", [sys.executable, "-c", NO_PYSPARK, str(tmp_path / "load")], 120),
    ]


def _args(tmp_path: Path, *, report: bool) -> argparse.Namespace:
    return argparse.Namespace(
        target="tiny",
        profile="quick",
        results=tmp_path / "results",
        html=tmp_path / "html",
        work=tmp_path / "work",
        no_report=not report,
    )


def _tools() -> str | None:
    """Why the report cannot be built and opened here, or None."""
    if shutil.which("java") is None:
        return "the Allure 2 CLI needs Java"
    try:
        chromium()
    except BrowserUnavailableError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[argparse.Namespace, int, str]:
    """One main job with the three stages (the report built when Java and Chromium are here): its
    arguments, exit code and output."""
    tmp_path = tmp_path_factory.mktemp("job")
    args = _args(tmp_path, report=_tools() is None)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = run_plan(_plan(tmp_path, args.work), args)
    return args, code, printed.getvalue()


def test_a_stage_missing_an_extra_could_not_run_and_a_crashed_one_is_broken(
    job: tuple[argparse.Namespace, int, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without PySpark ``load`` says ``could not run: install kafka-harness[spark]`` and exits 2; the main job
    marks it "could not run" (a broken result saying so, in its own category, not a failure), the
    ModuleNotFoundError stage broken with its log."""
    args, code, out = job
    assert code == EXIT_FAILED, out
    assert "VERDICT: invalid stages=3 failed=1 could_not_run=1" in out
    assert re.search(
        r"^load\s+0\s+0\s+1\s+0\s+0\s+could not run\s+could not run: install kafka-harness\[spark\]",
        out,
        re.M,
    ), out
    assert re.search(r"^property\s+0\s+0\s+1\s+0\s+0\s+FAIL", out, re.M), out
    log = (args.work / "logs" / "load.log").read_text()
    assert "could not run: install kafka-harness[spark]" in log and "Traceback" not in log
    results = [json.loads(p.read_text()) for p in args.results.glob("*-result.json")]
    by_name = {r["name"]: r for r in results}
    broken = by_name["main job stage property"]
    assert broken["status"] == "broken" and "ModuleNotFoundError" in broken["statusDetails"]["message"]
    assert [a["name"] for a in broken["attachments"]] == ["stage log"]
    skipped = by_name["main job stage load"]
    assert skipped["status"] == "broken"
    assert skipped["statusDetails"]["message"].startswith("could not run: install kafka-harness[spark]")

    only_skip = _args(tmp_path, report=False)
    load = Stage("load", "Load", [sys.executable, "-c", NO_PYSPARK, str(tmp_path / "load")], 120)
    assert run_plan([load], only_skip) == EXIT_CANNOT_RUN
    assert "VERDICT: could not run stages=1 failed=0 could_not_run=1" in capsys.readouterr().out


def _declared(code: str) -> Stage:
    """A chaos stage running ``code``, declared a deviation of the target."""
    return Stage(
        "chaos-kill", "Chaos", [sys.executable, "-c", code], 30, expected_deviation="acks before durable"
    )


def test_a_declared_stage_deviation_is_an_expected_result_in_the_report(tmp_path: Path) -> None:
    """A stage the target declares a deviation: its failed result becomes an expected deviation with the
    reason (as the table counts it); when it passes, a strict declaration is a failed result (the table's
    FAIL)."""
    work = tmp_path / "results"
    from reports.allure import write_result

    write_result(
        work,
        name="campaign",
        full_name="c",
        epic="Chaos",
        feature="queue",
        story="kill",
        passed=False,
        message="lost_write=3",
    )
    result = run_stage(_declared("raise SystemExit(1)"), tmp_path / "logs", echo=False)
    settle(result, work, "tiny")
    [only] = [json.loads(p.read_text()) for p in work.glob("*-result.json")]
    assert only["status"] == "skipped" and only["statusDetails"]["message"].startswith(
        "XFAIL expected deviation: acks before durable"
    )
    row = row_for(result, tally_results(work))
    assert row.ok and row.tally.counts["expected"] == 1 and not row.tally.bad

    empty = tmp_path / "second"
    done = run_stage(_declared("print('VERDICT: valid')"), tmp_path / "logs", echo=False)
    settle(done, empty, "tiny")
    [xpass] = [json.loads(p.read_text()) for p in empty.glob("*-result.json")]
    assert xpass["status"] == "failed" and "XPASS(strict)" in xpass["statusDetails"]["message"]
    assert not row_for(done, tally_results(empty)).ok
    assert isinstance(done, StageResult)


def test_report_of_a_run_with_a_failing_stage_matches_its_table(
    job: tuple[argparse.Namespace, int, str],
) -> None:
    """The built report, opened in headless Chromium: its total is the table's, its overview is not all
    passed, the broken stage is listed under Harness error, and no environment key is cut at a space."""
    why = _tools()
    if why is not None:
        pytest.skip(why)
    args, code, out = job
    assert code == EXIT_FAILED
    total_row = next(line for line in out.splitlines() if line.startswith("total "))
    counts = [int(n) for n in total_row.split()[1:6]]  # passed failed broken expected skipped
    assert counts == [2, 0, 2, 0, 0], total_row
    assert re.search(r"^report: .*index\.html$", out, re.M), out

    env = (args.results / "environment.properties").read_text().splitlines()
    keys = [line.partition("=")[0] for line in env]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-()\[\]+/]+", k) for k in keys), keys
    assert "Totals.Property" in keys and "Totals.Load" in keys

    dom = rendered_dom(args.html / "index.html")
    shown = re.findall(r'class="splash__title"[^>]*>\s*(\d+)\s*<', dom)
    assert shown == [str(sum(counts))], f"overview total {shown}, the table's {sum(counts)}"
    caption = re.findall(r'class="chart__caption"[^>]*>\s*([0-9.]+)%\s*<', dom)
    assert caption and float(caption[0]) == pytest.approx(100 * 2 / 4, abs=0.01), (
        f"the overview's share of passed tests {caption}, the table's 2 of 4"
    )
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))
    for needle in ("Harness error", "Could not run", "Tests 4 tests: 2 passed, 2 broken"):
        assert needle in text, f"the overview does not show {needle!r}"
    broken = [json.loads(p.read_text()) for p in args.results.glob("*-result.json")]
    logs = [a["source"] for r in broken if r["status"] == "broken" for a in r["attachments"]]
    assert len(logs) == 2 and all((args.results / source).stat().st_size > 0 for source in logs), logs
