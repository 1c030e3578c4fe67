"""``kafka-harness load`` end to end, as a user runs it: its own Spark, a Tansu, the verdict as last line.

The default test run has the smoke version; ``tox -e load`` (marker
``load_full``) adds larger runs, the kafka-python client, read_committed and
the synthetic verifier with injected anomalies.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spark_load.report import publish_run_dir

CLI_TIMEOUT_S = 240


def run_load(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_harness", "load", *args],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def last_line(process: subprocess.CompletedProcess[str]) -> str:
    lines = process.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def test_smoke_load_against_tansu_is_valid_with_figures_plots_and_verdict(tmp_path: Path) -> None:
    out, allure_results = tmp_path / "run", tmp_path / "allure-results"
    process = run_load(
        "--target", "tansu", "--records", "20000", "--partitions", "4", "--verify", "--out", str(out),
        "--alluredir", str(allure_results),
    )  # fmt: skip
    publish_run_dir(out, target="tansu", story="smoke: 20,000 records produced, read back and verified")
    assert process.returncode == 0, process.stdout + process.stderr
    assert last_line(process).startswith(
        "VERDICT: valid acked=20000 read=20000 lost=0 duplicate=0 corrupt=0 "
    )
    assert "throughput:" in process.stdout and "records/s" in process.stdout
    assert "produce " in process.stdout, "progress lines are printed while producing"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["acked"] == 20000
    assert summary["metrics"]["p99_ms"] >= summary["metrics"]["p50_ms"] > 0
    assert json.loads((out / "verdict.json").read_text())["valid"] is True
    for name in ("throughput.png", "latency.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (result_file,) = allure_results.glob("*-result.json")
    result = json.loads(result_file.read_text())
    assert result["status"] == "passed"
    assert {"name": "epic", "value": "Load"} in result["labels"]
    assert result["statusDetails"]["message"].startswith("VERDICT: valid acked=20000")
    attached = {a["name"]: allure_results / a["source"] for a in result["attachments"]}
    assert set(attached) == {"summary.json", "verdict.json", "throughput", "latency"}
    assert all(path.exists() for path in attached.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--records", "10"], "--target is required"),
        (["--target", "tansu", "--records", "-5"], "--records must be >= 0"),
        (["--target", "tansu", "--value-size", "0"], "--value-size"),
        (["--target", "nowhere"], "unknown target"),
        (["--target", "tansu", "--acks", "1"], "idempotence needs --acks all"),
    ],
)
def test_bad_input_is_a_clear_message_and_exit_2(args: list[str], message: str) -> None:
    process = run_load(*args)
    assert process.returncode == 2
    assert message in process.stdout
    assert "Traceback" not in process.stdout + process.stderr


@pytest.mark.load_full
def test_kafka_python_read_committed_skewed_run_asked_for_spark_kafka_io_is_valid(tmp_path: Path) -> None:
    """One Spark run (each costs a JVM) checks four things: kafka-python producing and reading,
    read_committed, skewed keys with exponential value sizes, and --io spark-kafka falling back to
    the executor clients when the connector is missing; its history then goes to the chaos checkers.
    """
    out = tmp_path / "run"
    process = run_load(
        "--target", "tansu", "--records", "30000", "--partitions", "6", "--client", "kafka-python",
        "--isolation", "read_committed", "--key-skew", "1.1", "--value-size-distribution", "exponential",
        "--io", "spark-kafka", "--verify", "--history", "--out", str(out),
    )  # fmt: skip
    publish_run_dir(out, target="tansu", story="kafka-python client, read_committed, skewed keys")
    assert process.returncode == 0, process.stdout + process.stderr
    assert last_line(process).startswith(
        "VERDICT: valid acked=30000 read=30000 lost=0 duplicate=0 corrupt=0 "
    )
    settings = json.loads((out / "summary.json").read_text())["settings"]
    if settings["io"] == "executor":  # this Spark has no spark-sql-kafka-0-10: the run must say so
        assert "--io spark-kafka unavailable" in process.stdout
        assert "spark-sql-kafka-0-10" in process.stdout and "--spark-packages" in process.stdout
    else:  # the connector is there: Spark's own sink and source did the work, no history of sends
        return

    # The same run as a chaos history: the chaos checkers, an independent judge, agree.
    check = subprocess.run(
        [sys.executable, "-m", "kafka_harness", "check", str(out / "history.jsonl")],
        capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert last_line(check) == "VERDICT: valid"


@pytest.mark.load_full
def test_synthetic_history_with_injected_anomalies_exits_1_with_exact_counts(tmp_path: Path) -> None:
    records, lost, duplicated, corrupted = 200_000, 13, 21, 4
    out = tmp_path / "run"
    process = run_load(
        "--synthetic",
        str(records),
        "--inject-lost",
        str(lost),
        "--inject-duplicated",
        str(duplicated),
        "--inject-corrupted",
        str(corrupted),
        "--out",
        str(out),
    )
    publish_run_dir(out, target="synthetic", story="synthetic history with injected anomalies")
    assert process.returncode == 1, process.stdout + process.stderr
    # A corrupt copy is not a read of its record, so corrupted records are lost as well.
    assert last_line(process) == (
        f"VERDICT: invalid acked={records} read={records - lost + duplicated} lost={lost + corrupted} "
        f"duplicate={duplicated} corrupt={corrupted} "
        "reordered=0 inconsistent_offset=0 unexpected=0 unacked_read=0"
    )
