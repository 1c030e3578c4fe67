"""``kafka-harness check HISTORY [--json OUT] [--spark-master M]``: run the checkers alone on a recorded
history (JSONL or Parquet, ``chaos/history/README.md``).

A history of ``--spark-threshold`` ops or more (or any, with ``--spark-master``) is checked by the
Spark jobs of :mod:`chaos.checkers.spark_checks` (per-record and per-key anomalies: lost, unseen,
duplicate, inconsistent offsets, poll skips, nonmonotonic polls and sends, aborted reads,
validate_delivery) on ``--spark-master`` (default ``local[2]``); smaller ones by the Python
checkers, which also judge availability, the restart phase, the restart probe and transactions."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from chaos.checkers import CheckResult, check
from chaos.history import read_history


def print_result(result: CheckResult, out: TextIO | None = None) -> None:
    """Anomaly counts with a few examples each, then the availability figures (to stdout by default,
    looked up when called, so a test capturing stdout sees them)."""
    out = out or sys.stdout
    for name, items in result.anomalies.items():
        if not items:
            continue
        mark = "BAD" if name in result.bad else "allowed"
        print(f"  {name}: {len(items)} ({mark})", file=out)
        for anomaly in items[:3]:
            print(f"    - {anomaly.description} (ops {anomaly.ops[:6]})", file=out)
    summary = result.availability.summary()
    print(
        f"  stats: {result.stats}; ok rate {summary['ok_rate_per_s']}/s, errors {summary['errors']}", file=out
    )
    if "restart_acked" in result.stats:
        stats = result.stats
        readable = stats.get("restart_readable_s")
        print(
            f"  restart: {stats['restart_acked']} writes acknowledged before every broker was killed; "
            f"down {stats.get('restart_down_s')} s; "
            + (
                f"all readable again {readable} s after the restart, with no new write"
                if readable is not None
                else f"{stats['unreadable_after_restart']} not readable within the bound"
            ),
            file=out,
        )
    if "restart_probes" in result.stats:
        stats = result.stats
        print(
            f"  restart probe: {stats['restart_probes']} node(s) started again, first Metadata answers "
            f"{stats['restart_probe_outcomes']}, "
            f"slowest first answer {stats['restart_probe_slowest_answer_s']} s",
            file=out,
        )
    for item in summary["recovery"]:
        print(
            f"  fault {item['fault']} {item['start']}-{item['end']} s: recovered in {item['recovery_s']} s",
            file=out,
        )


def write_graphs(result: CheckResult, directory: Path, per_class: int = 5) -> list[Path]:
    """Each drawn anomaly (the dependency graph's: ``detail["dot"]``) as ``<class>-<n>.dot`` with its
    explanation as a comment; Graphviz renders them (``dot -Tsvg``). Returns the files written."""
    written = []
    for name, items in result.anomalies.items():
        drawn = [a for a in items if "dot" in a.detail][:per_class]
        for n, anomaly in enumerate(drawn):
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{name}-{n}.dot"
            comment = "\n".join(f"// {line}" for line in anomaly.description.split("; then "))
            path.write_text(f"{comment}\n{anomaly.detail['dot']}\n", encoding="utf-8")
            written.append(path)
    return written


SPARK_THRESHOLD = 5_000_000
"""Ops from which a Parquet history is checked by Spark: the Python checkers hold about 1.3 KB per op
(measured at 10^6 ops), so 5,000,000 ops is about 6.5 GB on one process."""


def _parquet_ops(path: str) -> int:
    from spark_load.history_table import files, is_parquet

    if not Path(path).exists() or not is_parquet(path):
        return 0
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    return sum(pq.ParquetFile(str(file)).metadata.num_rows for file in files(path))


def _check_with_spark(args: argparse.Namespace) -> int:
    """The Spark checkers; a JSONL history is first written as Parquet beside a temp dir."""
    import tempfile

    from chaos.checkers import judge, verdict_line
    from chaos.checkers.spark_checks import check_parquet
    from spark_load.history_table import is_parquet, read_meta
    from spark_load.jobs.session import spark_session

    path = args.history
    if not Path(path).exists():
        raise FileNotFoundError(path)
    scratch = None
    if not is_parquet(path):
        from chaos.history import write_parquet

        scratch = tempfile.mkdtemp(prefix="kh-check-")
        converted = str(Path(scratch) / "history.parquet")
        write_parquet(read_history(path), converted)
        path = converted
    meta = read_meta(path)
    conf = [tuple(item.split("=", 1)) for item in args.spark_conf if "=" in item]
    from pyspark.sql import SparkSession

    ours = SparkSession.getActiveSession() is None  # a session already running (a test's) is not ours to stop
    spark = spark_session(args.spark_master or "local[2]", app_name="kafka-harness check", conf=conf)
    try:
        start = time.perf_counter()
        result = check_parquet(spark, str(Path(path).resolve()), meta)
        elapsed = time.perf_counter() - start
    finally:
        if ours:
            spark.stop()
    valid, bad = judge(
        meta,
        result.counts,
        acked=result.stats["acked"],
        read_any=result.stats["distinct_read"] > 0,
        wrote_any=result.stats["writes"] > 0,
    )
    print(f"checked {result.stats['ops']:,} ops with Spark in {elapsed:.2f} s")
    for name, count in result.counts.items():
        if count:
            print(f"  {name}: {count} ({'BAD' if name in bad else 'allowed'})")
            for example in result.examples.get(name, [])[:3]:
                print(f"    - {example}")
    print(f"  stats: {result.stats}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"valid": valid, "bad": bad, "counts": result.counts, "stats": result.stats,
                       "examples": result.examples}, out, indent=1, default=str)  # fmt: skip
    print(verdict_line(valid, bad, result.counts))
    return 0 if valid is True else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness check", description=__doc__)
    parser.add_argument(
        "history", help="a history.jsonl from kafka-harness chaos (format: chaos/history/README.md)"
    )
    parser.add_argument("--json", help="also write the full result as JSON here")
    parser.add_argument(
        "--graphs", type=Path, help="write each drawn anomaly as a DOT file in this directory"
    )
    parser.add_argument(
        "--spark-master",
        help="check with the Spark jobs on this master (local[N], spark://..., yarn, k8s://...)",
    )
    parser.add_argument(
        "--spark-threshold",
        type=int,
        default=SPARK_THRESHOLD,
        help=f"Parquet histories of at least this many ops go to Spark (default {SPARK_THRESHOLD:,})",
    )
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        if args.spark_master or _parquet_ops(args.history) >= max(1, args.spark_threshold):
            return _check_with_spark(args)
        history = read_history(args.history)
    except FileNotFoundError:
        print(f"kafka-harness check: no such file {args.history}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    except (ValueError, UnicodeDecodeError) as exc:
        print(f"kafka-harness check: {args.history} is not a history: {exc}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    start = time.perf_counter()
    result = check(history)
    print(f"checked {len(history):,} ops in {time.perf_counter() - start:.2f} s")
    print_result(result)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result.to_json(), out, indent=1, default=str)
    if args.graphs:
        for path in write_graphs(result, args.graphs):
            print(f"graph: {path}")
    print(result.verdict_line())
    return 0 if result.valid is True else 1
