"""``kafka-harness check-bench --ops N``: the Spark checkers on a synthetic history of N operations
with every anomaly class injected (:mod:`chaos.history.synthetic`); prints the wall time of writing
and of checking, whether every injected anomaly was found (exact expected counts), and the peak
resident memory of the driver (this Python process and its JVM with its Python workers) and of the
executors (a standalone cluster's ``CoarseGrainedExecutorBackend`` processes of this application,
with their Python workers), sampled from ``/proc`` every half second. Exit 0 when every count is as
injected, 1 otherwise, 2 could not run."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path

from reports.paths import output

SAMPLE_S = 0.5
MAX_SAMPLES = 200_000


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, command line) of every process we can read."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            found[int(entry.name)] = (parent, Path(f"/proc/{entry.name}/cmdline").read_bytes())
        except (OSError, ValueError, IndexError):
            continue
    return found


def _tree(root: int, table: dict[int, tuple[int, bytes]]) -> set[int]:
    members, frontier = {root}, [root]
    while frontier and len(members) < 10_000:
        parent = frontier.pop()
        children = [pid for pid, (ppid, _) in table.items() if ppid == parent and pid not in members]
        members.update(children)
        frontier.extend(children)
    return members


class PeakMemory:
    """Peak summed RSS of the driver's process tree and of the executors' trees (KiB)."""

    def __init__(self) -> None:
        self.driver = 0
        self.executors = 0
        self.app_id: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        for _ in range(MAX_SAMPLES):
            table = _processes()
            driver = _tree(os.getpid(), table)
            self.driver = max(self.driver, sum(_rss_kib(pid) for pid in driver))
            if self.app_id:
                mark = self.app_id.encode()
                roots = [
                    pid
                    for pid, (_, cmd) in table.items()
                    if b"CoarseGrainedExecutorBackend" in cmd and mark in cmd
                ]
                executors = set().union(*(_tree(pid, table) for pid in roots)) if roots else set()
                self.executors = max(self.executors, sum(_rss_kib(pid) for pid in executors - driver))
            if self._stop.wait(SAMPLE_S):
                return


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness check-bench", description=__doc__)
    parser.add_argument("--ops", type=int, default=1_000_000, help="operations in the synthetic history")
    parser.add_argument("--inject", type=int, default=10, help="anomalies of each class")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--executor-memory", default=None, help="spark.executor.memory (a cluster's)")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument(
        "--out", type=Path, default=None, help="where the history goes (default reports/output)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the history after the run")
    parser.add_argument("--reuse", action="store_true", help="check the history already in --out")
    args = parser.parse_args(argv)
    from chaos.history.synthetic import MAX_INJECT, MAX_OPS, expected_counts, generate

    if not 0 < args.ops <= MAX_OPS or not 0 <= args.inject <= MAX_INJECT:
        print(
            f"kafka-harness check-bench: --ops must be 1..{MAX_OPS:,}, --inject 0..{MAX_INJECT:,}",
            file=sys.stderr,
        )
        return 2
    out = args.out or output("check-bench") / f"history-{args.ops}"
    started = time.perf_counter()
    if not args.reuse:
        meta = generate(out, args.ops, partitions=args.partitions, inject=args.inject)
        print(
            f"generated {meta['ops']:,} ops ({meta['records']:,} records) "
            f"in {time.perf_counter() - started:.1f} s "
            f"-> {out} ({sum(f.stat().st_size for f in out.glob('*.parquet')) / 1e6:.0f} MB)"
        )
    from chaos.checkers.spark_checks import check_parquet
    from spark_load.history_table import read_meta
    from spark_load.jobs.session import spark_session

    meta = read_meta(out)
    conf = [("spark.driver.memory", args.driver_memory)]
    if args.executor_memory:
        conf.append(("spark.executor.memory", args.executor_memory))
    with PeakMemory() as peak:
        begun = time.perf_counter()
        spark = spark_session(args.spark_master, app_name="kafka-harness check-bench", conf=conf)
        peak.app_id = spark.sparkContext.applicationId
        session_s = time.perf_counter() - begun
        begun = time.perf_counter()
        try:
            result = check_parquet(spark, str(out.resolve()), meta)
        finally:
            checked_s = time.perf_counter() - begun
            spark.stop()
    expected = expected_counts(int(meta["injected"]))
    print(
        f"checked {result.stats['ops']:,} ops on {args.spark_master} in {checked_s:.1f} s "
        f"(+{session_s:.1f} s session start); {result.stats['ops'] / checked_s:,.0f} ops/s"
    )
    print(
        f"peak memory: driver {peak.driver / 1024:.0f} MiB (Python + JVM + Python workers), "
        f"executors {peak.executors / 1024:.0f} MiB"
        + (" (local mode: inside the driver)" if args.spark_master.startswith("local") else "")
    )
    wrong = {n: (result.counts[n], want) for n, want in expected.items() if result.counts[n] != want}
    for name, want in expected.items():
        print(f"  {name}: found {result.counts[name]}, injected {want}")
    if not args.keep and not args.reuse:
        shutil.rmtree(out, ignore_errors=True)
    print(
        "RESULT: every injected anomaly found, nothing else"
        if not wrong
        else f"RESULT: counts differ {wrong}"
    )
    return 0 if not wrong else 1
