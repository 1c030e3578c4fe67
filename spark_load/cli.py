"""``kafka-harness load``: produce a deterministic dataset with PySpark, read it back, say what came back.

The last lines are the throughput (records/s, MB/s, p50/p99 delivery latency)
and, with ``--verify``, the verdict in the chaos command's form; the exit code
is 0 valid, 1 invalid, 2 could not run. Files (delivery reports and reads as
Parquet, summary.json, verdict.json, PNG plots) go to ``--out``.

PySpark is imported only once the arguments are known to be good, so
``--help`` and bad input answer at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from fixtures.targets import add_security_options, security_from_args

from .arguments import config_from
from .config import (
    CLIENTS,
    COMPRESSION_TYPES,
    IO_MODES,
    ISOLATION_LEVELS,
    VALUE_SIZE_DISTRIBUTIONS,
    LoadConfigError,
)
from .console import say
from .history import MAX_RECORDS as MAX_HISTORY_RECORDS
from .report import RunResult, write_allure_result
from .topics import LoadRunError
from .verdict import ANOMALIES

EXIT_VALID, EXIT_INVALID, EXIT_COULD_NOT_RUN = 0, 1, 2


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-harness load",
        description="Generate load with PySpark (a real Kafka client per task), read it back and verify it.",
        epilog="Exit status: 0 valid, 1 anomalies found, 2 could not run.",
    )
    where = parser.add_argument_group("target and Spark")
    where.add_argument("--target", help="reference, tansu, bootstrap:HOST:PORT[,...] or container[:IMAGE]")
    add_security_options(where, launches=True)
    where.add_argument(
        "--brokers",
        type=int,
        default=None,
        help="brokers of a launched reference cluster (default: --replication-factor, else 1)",
    )
    where.add_argument("--spark-master", default="local[2]", help="local[N], spark://..., yarn, k8s://...")
    where.add_argument("--spark-conf", action="append", type=_key_value, default=[], metavar="KEY=VALUE")
    where.add_argument(
        "--spark-packages",
        action="append",
        default=[],
        metavar="COORDINATES",
        help="Maven coordinates for spark.jars.packages (e.g. the spark-sql-kafka-0-10 connector)",
    )
    where.add_argument("--driver-memory", default="2g")
    where.add_argument(
        "--io",
        choices=IO_MODES,
        default="executor",
        help="executor: a client in every task (default); spark-kafka: Spark's Kafka sink/source",
    )
    where.add_argument(
        "--out", type=Path, help="directory for Parquet, JSON and plots (default: a new temp dir)"
    )
    where.add_argument(
        "--alluredir", type=Path, help="also write the run as an Allure result into this directory"
    )

    data = parser.add_argument_group("dataset")
    data.add_argument("--records", type=int, default=100_000)
    data.add_argument("--seed", type=int, default=0)
    data.add_argument("--generator-id", help="identifies this run's values (default g<seed>)")
    data.add_argument("--key-space", type=int, default=10_000)
    data.add_argument(
        "--key-skew", type=float, default=0.0, help="Zipf exponent over the key space (0 = uniform)"
    )
    data.add_argument("--value-size", type=int, default=100, help="value bytes (at least the value's header)")
    data.add_argument("--value-size-distribution", choices=VALUE_SIZE_DISTRIBUTIONS, default="fixed")
    data.add_argument("--topic", help="topic to create (default kh-load-<generator id>-<time>)")
    data.add_argument("--partitions", type=int, default=12)
    data.add_argument(
        "--replication-factor", type=int, default=None, help="default: --brokers, at most 3 (1 alone)"
    )

    produce = parser.add_argument_group("producing")
    produce.add_argument("--client", choices=CLIENTS, default="confluent-kafka")
    produce.add_argument("--tasks", type=int, help="producing tasks, one producer each (default: by size)")
    produce.add_argument("--acks", default="all")
    produce.add_argument("--no-idempotence", dest="idempotence", action="store_false")
    produce.add_argument("--compression", choices=COMPRESSION_TYPES, default="none")
    produce.add_argument("--batch-size", type=int, default=65_536)
    produce.add_argument("--linger-ms", type=int, default=5)
    produce.add_argument("--delivery-timeout-ms", type=int, default=60_000)
    produce.add_argument(
        "--producer-config",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="more producer settings, in the chosen client's own names",
    )
    produce.add_argument("--rate", type=float, help="records/s per task (default: unlimited)")
    produce.add_argument("--time-bound", type=float, help="stop sending after this many seconds per task")

    check = parser.add_argument_group("reading and verifying")
    check.add_argument("--verify", action="store_true", help="read everything back and verify it")
    check.add_argument("--read-tasks", type=int, help="offset-range splits to aim for (default: 2 per core)")
    check.add_argument("--isolation", choices=ISOLATION_LEVELS, default="read_uncommitted")
    check.add_argument("--read-idle-timeout", type=float, default=10.0)
    check.add_argument(
        "--allow",
        action="append",
        default=[],
        choices=ANOMALIES,
        metavar="ANOMALY",
        help=f"an anomaly that does not make the run invalid ({', '.join(ANOMALIES)}); "
        "default without idempotence: duplicate and reordered",
    )
    check.add_argument("--no-plots", dest="plots", action="store_false")
    check.add_argument(
        "--history",
        action="store_true",
        help="also write the run as a chaos history (history.jsonl in --out) for kafka-harness check; "
        "runs of up to 500,000 records",
    )
    check.add_argument(
        "--history-format",
        choices=["jsonl", "parquet"],
        default="jsonl",
        help="history.jsonl or history.parquet (kafka-harness check reads both)",
    )

    synthetic = parser.add_argument_group("synthetic history (no target: times the verifier alone)")
    synthetic.add_argument("--synthetic", type=int, metavar="N", help="verify an N-record synthetic history")
    synthetic.add_argument("--inject-lost", type=int, default=0)
    synthetic.add_argument("--inject-duplicated", type=int, default=0)
    synthetic.add_argument("--inject-corrupted", type=int, default=0)
    return parser


def run(args: argparse.Namespace) -> int:
    if args.synthetic is None and not args.target:
        say("kafka-harness load: --target is required (or --synthetic N to time the verifier alone)")
        return EXIT_COULD_NOT_RUN
    if not resolve_cluster_size(args):
        return EXIT_COULD_NOT_RUN
    injected = (args.inject_lost, args.inject_duplicated, args.inject_corrupted)
    if args.synthetic is not None and (args.synthetic < 0 or min(injected) < 0):
        say("kafka-harness load: --synthetic and --inject-* must be >= 0")
        return EXIT_COULD_NOT_RUN
    if args.history and (not args.verify or args.records > MAX_HISTORY_RECORDS):
        say(f"kafka-harness load: --history needs --verify and at most {MAX_HISTORY_RECORDS:,} records")
        return EXIT_COULD_NOT_RUN
    try:
        security_from_args(args, as_default=True)  # the driver's, the tasks' and the checks' clients
    except ValueError as exc:
        say(f"kafka-harness load: {exc}")
        return EXIT_COULD_NOT_RUN
    try:  # validate everything before starting anything
        config_from(args, "127.0.0.1:9092", args.tasks or 1, args.read_tasks or 1)
    except LoadConfigError as exc:
        say(f"kafka-harness load: {exc}")
        return EXIT_COULD_NOT_RUN
    # Resolved once, so every phase names the same topic.
    args.topic = args.topic or f"kh-load-{args.generator_id or f'g{args.seed}'}-{int(time.time())}"
    out = args.out or Path(tempfile.mkdtemp(prefix="kafka-harness-load-"))
    out.mkdir(parents=True, exist_ok=True)
    from .jobs import driver  # imports pyspark

    try:
        if args.synthetic is not None:
            result = driver.run_synthetic(args, out)
        else:
            result = driver.run_against_target(args, out)
    except (LoadRunError, LoadConfigError) as exc:
        say(f"kafka-harness load: could not run: {exc}")
        return EXIT_COULD_NOT_RUN
    return finish(result, args.alluredir)


def resolve_cluster_size(args: argparse.Namespace) -> bool:
    """``--brokers`` and ``--replication-factor`` from each other, as ``kafka-harness chaos`` does:
    a replicated topic on a launched reference needs that many brokers, and a cluster's topic is
    replicated over up to three of them unless told otherwise. False (said why) when they conflict."""
    if args.brokers is not None and args.brokers < 1:
        say("kafka-harness load: --brokers must be >= 1")
        return False
    args.replication_factor = args.replication_factor or min(args.brokers or 1, 3)
    args.brokers = args.brokers or args.replication_factor
    if args.replication_factor > args.brokers and args.target == "reference":
        say(f"kafka-harness load: --replication-factor {args.replication_factor} needs as many brokers")
        return False
    return True


def finish(result: RunResult, alluredir: Path | None = None) -> int:
    result.write()
    say(f"files: {result.run_dir}")
    if alluredir is not None:
        write_allure_result(result, alluredir)
        say(f"allure result: {alluredir}")
    for note in result.notes:
        say(f"note: {note}")
    if result.metrics is not None:
        say(result.metrics.line())
    walls = " ".join(f"{phase}={seconds:.1f}s" for phase, seconds in result.wall_s.items())
    say(f"wall time: {walls}")
    if result.memory is not None:
        say(result.memory.line())
    if result.verdict is None:
        say("not verified (add --verify to read everything back and judge it)")
        return EXIT_VALID
    verdict = result.verdict
    if verdict.failing:
        say(f"anomalies: {', '.join(f'{n}={verdict.counts[n]}' for n in verdict.failing)} (see verdict.json)")
    if verdict.incomplete_read:
        say("the read did not complete (see the notes above): the verdict cannot be valid")
    say(verdict.line())
    return EXIT_VALID if verdict.valid else EXIT_INVALID


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    try:
        return run(args)
    except KeyboardInterrupt:
        say("kafka-harness load: interrupted")
        return EXIT_COULD_NOT_RUN


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
