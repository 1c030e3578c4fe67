"""Peak memory of a Spark run's processes on this machine, by role, read from ``/proc``.

A load or a synthetic check reports how much memory its driver and its workers needed, since that
is what decides whether a bigger run fits a machine. Linux keeps each process' peak resident set
(``VmHWM`` in ``/proc/<pid>/status``), so reading it once, just before the session stops, gives
the peak of every process still alive without sampling. Roles come from the command line: the
driver is this Python process and the JVM it started (``SparkSubmit``); executors, workers and
the master are Spark's own classes. Processes of a cluster on other machines are not seen: the
figures then cover the driver only, and say so by their missing roles.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

ROLES: tuple[tuple[str, str], ...] = (
    ("executor", "org.apache.spark.executor.CoarseGrainedExecutorBackend"),
    ("worker", "org.apache.spark.deploy.worker.Worker"),
    ("master", "org.apache.spark.deploy.master.Master"),
    ("driver-jvm", "org.apache.spark.deploy.SparkSubmit"),
    ("python-worker", "pyspark.daemon"),
)
"""role → a string its command line carries (first match wins)."""

MAX_PROCESSES = 100_000
"""Bound on the ``/proc`` entries read (a machine has far fewer)."""


@dataclass
class PeakMemory:
    """Peak resident bytes per role: the sum over its processes and the largest one."""

    total: dict[str, int] = field(default_factory=dict)
    largest: dict[str, int] = field(default_factory=dict)
    processes: dict[str, int] = field(default_factory=dict)

    def add(self, role: str, peak: int) -> None:
        self.total[role] = self.total.get(role, 0) + peak
        self.largest[role] = max(self.largest.get(role, 0), peak)
        self.processes[role] = self.processes.get(role, 0) + 1

    def line(self) -> str:
        """``peak memory: driver-python=… MiB, executor=… MiB (2 processes, largest …), …``."""
        parts = []
        for role in sorted(self.total):
            text = f"{role}={self.total[role] / 2**20:,.0f} MiB"
            if self.processes[role] > 1:
                text += f" ({self.processes[role]} processes, largest {self.largest[role] / 2**20:,.0f} MiB)"
            parts.append(text)
        return "peak memory: " + (", ".join(parts) or "no process found")

    def to_json(self) -> dict[str, dict[str, int]]:
        return {"total_bytes": self.total, "largest_bytes": self.largest, "processes": self.processes}


def peak_rss(status_text: str) -> int | None:
    """``VmHWM`` of a ``/proc/<pid>/status`` text in bytes (``None`` when absent: a kernel thread)."""
    for line in status_text.splitlines():
        if line.startswith("VmHWM:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1]) * 1024
    return None


def role_of(cmdline: bytes) -> str | None:
    text = cmdline.replace(b"\0", b" ").decode("utf-8", "replace")
    return next((role for role, marker in ROLES if marker in text), None)


def spark_peak_memory(proc: Path = Path("/proc"), self_pid: int | None = None) -> PeakMemory:
    """Peak memory of this process (``driver-python``) and every Spark process of this machine."""
    me = os.getpid() if self_pid is None else self_pid
    found = PeakMemory()
    for count, entry in enumerate(proc.iterdir()):
        if count >= MAX_PROCESSES:
            break
        if not entry.name.isdigit():
            continue
        try:
            role = "driver-python" if int(entry.name) == me else role_of((entry / "cmdline").read_bytes())
            if role is None:
                continue
            peak = peak_rss((entry / "status").read_text())
        except OSError:  # the process ended while being read
            continue
        if peak is not None:
            found.add(role, peak)
    return found
