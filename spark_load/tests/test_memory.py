"""Peak memory by role from a fake ``/proc``: the roles, the sums and what is skipped."""

from __future__ import annotations

from pathlib import Path

from spark_load.memory import peak_rss, role_of, spark_peak_memory


def _process(proc: Path, pid: int, cmdline: str, hwm_kib: int | None) -> None:
    folder = proc / str(pid)
    folder.mkdir()
    (folder / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode())
    status = "Name:\tjava\nVmPeak:\t 9999 kB\n" + (f"VmHWM:\t{hwm_kib} kB\n" if hwm_kib is not None else "")
    (folder / "status").write_text(status)


def test_roles_sum_their_processes_peaks_and_others_are_ignored(tmp_path: Path) -> None:
    _process(tmp_path, 10, "python -m kafka_harness load", 300_000)
    _process(tmp_path, 11, "java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell", 500_000)
    _process(tmp_path, 12, "java org.apache.spark.executor.CoarseGrainedExecutorBackend --id 0", 1_000_000)
    _process(tmp_path, 13, "java org.apache.spark.executor.CoarseGrainedExecutorBackend --id 1", 2_000_000)
    _process(tmp_path, 14, "java org.apache.spark.deploy.worker.Worker spark://x", 200_000)
    _process(tmp_path, 15, "bash -c sleep", 50_000)
    _process(tmp_path, 16, "java org.apache.spark.deploy.master.Master", None)  # no VmHWM: skipped
    (tmp_path / "self").mkdir()  # not a pid
    found = spark_peak_memory(tmp_path, self_pid=10)
    assert found.total == {
        "driver-python": 300_000 * 1024,
        "driver-jvm": 500_000 * 1024,
        "executor": 3_000_000 * 1024,
        "worker": 200_000 * 1024,
    }
    assert found.largest["executor"] == 2_000_000 * 1024 and found.processes["executor"] == 2
    assert "executor=2,930 MiB (2 processes, largest 1,953 MiB)" in found.line()


def test_status_and_cmdline_parsing() -> None:
    assert peak_rss("VmHWM:\t  42 kB\n") == 42 * 1024
    assert peak_rss("VmRSS:\t42 kB\n") is None
    assert role_of(b"python\0-m\0pyspark.daemon") == "python-worker"
    assert role_of(b"java\0Main") is None


def test_this_machine_reports_this_process() -> None:
    """On Linux the running test process is always found as the driver."""
    assert spark_peak_memory().total.get("driver-python", 0) > 0
