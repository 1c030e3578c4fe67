"""The main job's machinery: stage budgets, verdict parsing, counting Allure results, the table, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_harness import main_job
from kafka_harness.run.plan import build_plan, stage_expectations
from kafka_harness.run.stages import Stage, StageResult, parse_verdict, run_stage
from kafka_harness.run.summary import outcome_of, row_for, table, tally_results


def _result(directory: Path, name: str, status: str, message: str = "") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    body: dict[str, object] = {"name": name, "fullName": f"suite.{name}", "status": status}
    if message:
        body["statusDetails"] = {"message": message}
    (directory / f"{name}-result.json").write_text(json.dumps(body))


def test_verdict_line_is_read_from_the_end_with_its_counts() -> None:
    text = "VERDICT: valid old=1\nnoise\nVERDICT: invalid acked=10 lost_write=2 note=x\ntrailer\n"
    assert parse_verdict(text) == ("invalid", {"acked": 10, "lost_write": 2})
    assert parse_verdict("no verdict here") == (None, {})


def test_results_are_counted_by_outcome_and_strict_xfails_are_expected(tmp_path: Path) -> None:
    _result(tmp_path, "a", "passed")
    _result(tmp_path, "b", "skipped", "XFAIL reason [evidence]")
    _result(tmp_path, "c", "skipped", "not advertised: Vote")
    _result(tmp_path, "d", "failed", "assert 1 == 2")
    _result(tmp_path, "e", "broken", "OSError")
    (tmp_path / "f-result.json").write_text("{not json")
    tally = tally_results(tmp_path)
    assert dict(tally.counts) == {"passed": 1, "expected": 1, "skipped": 1, "failed": 1, "broken": 2}
    assert tally.bad == 3
    assert "suite.d" in tally.failures and "suite.e" in tally.failures
    assert outcome_of({"status": "unknown"}) == "broken"


def test_a_stage_over_its_budget_is_killed_with_the_processes_it_started(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    stage = Stage("sleeper", "Test", [sys.executable, "-c", script], budget_s=3)
    began = time.monotonic()
    result = run_stage(stage, tmp_path / "logs", echo=False)
    assert result.timed_out and not result.ok
    assert time.monotonic() - began < 30
    grandchild = int(marker.read_text())
    for _ in range(50):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the stage's child process outlived the stage")
    log = result.log.read_text()
    assert "started" in log and "overran its budget" in log


def test_a_stage_over_its_budget_has_more_than_ten_seconds_to_stop_what_it_started(tmp_path: Path) -> None:
    """A chaos campaign stops its brokers on SIGTERM, and they are outside the stage's process group:
    a stage SIGKILLed 10 s after SIGTERM (the old bound) left them running. This stage's clean-up
    takes 11 s and finishes."""
    marker = tmp_path / "cleaned"
    script = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    time.sleep(11)\n"
        f"    open({str(marker)!r}, 'w').write('done')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    result = run_stage(Stage("slow-stop", "Test", [sys.executable, "-c", script], budget_s=2), tmp_path / "l",
                       echo=False)  # fmt: skip
    assert result.timed_out
    assert marker.read_text() == "done"


def test_a_failing_stage_fails_the_row_unless_the_target_declares_it(tmp_path: Path) -> None:
    _result(tmp_path / "r", "campaign", "failed", "lost_write=3")
    failing = Stage("chaos-kill", "Chaos", ["x"], 10)
    row = row_for(StageResult(failing, 1, 2.0, tmp_path / "log", "invalid", {"lost_write": 3}),
                  tally_results(tmp_path / "r"))
    assert not row.ok and row.tally.counts["failed"] == 1
    declared = Stage("chaos-kill", "Chaos", ["x"], 10, expected_deviation="memory storage")
    outcome = StageResult(declared, 1, 2.0, tmp_path / "log", "invalid", {})
    row = row_for(outcome, tally_results(tmp_path / "r"))
    assert row.ok and row.tally.counts["expected"] == 1 and row.tally.counts["failed"] == 0
    assert "expected deviation: memory storage" in row.detail
    passing = StageResult(declared, 0, 2.0, tmp_path / "log", "valid", {})
    strict = row_for(passing, tally_results(tmp_path / "empty"))
    assert not strict.ok and "remove stage::chaos-kill" in strict.detail
    intermittent = Stage("chaos-links", "Chaos", ["x"], 10, expected_deviation="dups under link faults",
                         deviation_is_intermittent=True)
    passed = StageResult(intermittent, 0, 2.0, tmp_path / "log", "valid", {})
    quiet = row_for(passed, tally_results(tmp_path / "e"))
    assert quiet.ok and "did not show" in quiet.detail
    text = table([row])
    assert "chaos-kill" in text and text.splitlines()[-1].startswith("total")


def test_plan_leaves_chaos_out_for_targets_it_cannot_kill(tmp_path: Path) -> None:
    launched = [s.name for s in build_plan("reference", "reference", "reference", "quick", tmp_path, 1)]
    attached = [s.name for s in build_plan("bootstrap:h:1", "bootstrap", "bootstrap", "quick", tmp_path, 1)]
    assert any(n.startswith("chaos") for n in launched)
    assert not any(n.startswith("chaos") for n in attached)
    assert {"smoke", "conformance", "property", "fuzz", "load"} <= set(attached)
    fuzz = next(s for s in build_plan("reference", "reference", "reference", "quick", tmp_path, 1)
                if s.name == "fuzz")
    assert fuzz.budget_s <= 60 and "--time" in fuzz.argv
    with pytest.raises(ValueError):
        build_plan("reference", "reference", "reference", "slow", tmp_path, 1)


def test_plan_gives_an_unproxied_target_the_process_faults_only(tmp_path: Path) -> None:
    """noida-db advertises the port it listens on, so no proxy can sit on its links: it gets the
    kill campaign (and its restart check) but not the link campaign."""
    names = [s.name for s in build_plan("noida", "noida", "noida", "quick", tmp_path, 1)]
    assert "chaos-kill" in names and "chaos-links" not in names


def test_stage_expectations_come_from_the_targets_file() -> None:
    declared = stage_expectations("tansu")
    assert "chaos-kill" in declared
    for name, (reason, _strict) in declared.items():
        assert reason, f"stage::{name} needs a reason"


def test_bad_arguments_get_a_message_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main_job.main(["--target", "nope"]) == 2
    assert "unknown target" in capsys.readouterr().err
    assert main_job.main(["--only", "no-such-stage"]) == 2
    assert "no stage no-such-stage" in capsys.readouterr().err
    assert main_job.main(["--brokers", "0"]) == 2


def test_the_smoke_stage_end_to_end_on_the_reference_broker(tmp_path: Path) -> None:
    """One real stage through the job: its result lands in the merged folder and the table says ok."""
    done = subprocess.run(
        [sys.executable, "-m", "kafka_harness", "run", "--only", "smoke", "--no-report",
         "--work", str(tmp_path / "work"), "--results", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "VERDICT: valid stages=1 failed=0 could_not_run=0"
    merged = list((tmp_path / "results").glob("*-result.json"))
    assert len(merged) == 1 and json.loads(merged[0].read_text())["status"] == "passed"
    assert (tmp_path / "results" / "environment.properties").read_text().count("target=reference") == 1
