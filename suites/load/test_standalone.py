"""The load on a real Spark standalone cluster (a master and one worker started from the PySpark
installation, :mod:`spark_load.standalone`), so the ``spark://`` path stays working in CI, and the
cluster's own start, failure and teardown behaviour."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spark_load import standalone

CLI_TIMEOUT_S = 300


def test_load_on_a_standalone_cluster_against_the_reference_is_valid(
    spark_standalone: str, tmp_path: Path
) -> None:
    process = subprocess.run(
        [
            sys.executable, "-m", "kafka_harness", "load", "--target", "reference", "--records", "20000",
            "--verify", "--spark-master", spark_standalone, "--out", str(tmp_path / "run"),
        ],
        capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    lines = process.stdout.strip().splitlines()
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    assert lines[-1].startswith("VERDICT: valid acked=20000 read=20000 lost=0 duplicate=0 corrupt=0 "), lines[
        -1
    ]
    assert (tmp_path / "run" / "acks.parquet").exists()


def test_a_start_that_cannot_finish_in_its_bound_says_why_and_leaves_nothing_running(tmp_path: Path) -> None:
    with pytest.raises(standalone.StandaloneError, match=r"did not log .* within the start bound") as caught:
        standalone.start("too-short", timeout_s=0.3, directory=tmp_path)
    assert "master.log" in str(caught.value)
    pids = [int(line.split()[0]) for line in _java_processes() if str(tmp_path) in line]
    assert pids == [], "a process of the failed start is still running"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 0}, "workers must be"),
        ({"cores": 0}, "cores per worker"),
        ({"memory": "lots"}, "memory is"),
    ],
)
def test_bad_sizes_are_refused_before_anything_starts(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(standalone.StandaloneError, match=message):
        standalone.start("bad", **kwargs)  # type: ignore[arg-type]


def test_down_without_up_is_a_clear_message(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "kafka_harness", "spark", "down", "--name", f"never-{tmp_path.name}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert process.returncode == 2
    assert "no usable cluster state" in process.stderr
    assert "Traceback" not in process.stderr


def _java_processes() -> list[str]:
    listing = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line.strip() for line in listing.stdout.splitlines() if "java" in line]
