"""The load run's driver: target, session, topic, produce, measure, read, verify, plot.

Called by :mod:`spark_load.cli` once the arguments are known to be good (it imports nothing of the
command; what the arguments mean is :mod:`spark_load.arguments`). Each
phase's wall time is kept, so the figures printed at the end separate Spark's
own start-up from the work.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession

from ..arguments import allowed_anomalies, config_from, split_records_for
from ..config import LoadConfig
from ..console import progress_printer, say
from ..consume import SplitStatus, plan_splits
from ..history import write_history
from ..memory import spark_peak_memory
from ..plots import plot_latency_histogram, plot_throughput
from ..report import RunResult
from ..topics import LoadRunError, create_topic, partition_ranges
from ..verdict import Verdict
from .generate import default_tasks, produce_dataset
from .metrics import delivery_metrics
from .read import acked_ends, read_topic
from .session import default_parallelism, spark_session
from .spark_kafka import kafka_source_available, produce_with_spark_kafka, read_with_spark_kafka
from .synthetic import SYNTHETIC_GENERATOR, synthetic_history
from .verify import shuffle_partitions_for, verify

T = TypeVar("T")


def _spark_job(name: str, job: Callable[[], T]) -> T:
    """Run a job; a failure inside it becomes one clear line (the last line of the task's error)."""
    try:
        return job()
    except LoadRunError:
        raise
    except Exception as exc:  # Py4JJavaError / PythonException: the cause is at the end of its text
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        fallback = lines[-1] if lines else type(exc).__name__
        cause = next((line for line in reversed(lines) if "Error" in line or "Exception" in line), fallback)
        raise LoadRunError(f"the {name} job failed: {cause[:300]}") from None


def _session(args: argparse.Namespace) -> SparkSession:
    conf = [("spark.driver.memory", args.driver_memory), *args.spark_conf]
    try:
        return spark_session(args.spark_master, packages=args.spark_packages, conf=conf)
    except Exception as exc:  # the JVM did not start, the master did not answer, ...
        raise LoadRunError(f"Spark did not start ({args.spark_master}): {str(exc).strip()[:300]}") from None


def _settings(config: LoadConfig, args: argparse.Namespace, io: str) -> dict[str, object]:
    spec, producer = config.dataset, config.producer
    return {
        "records": spec.records,
        "seed": spec.seed,
        "generator_id": spec.generator_id,
        "key_space": spec.key_space,
        "key_skew": spec.key_skew,
        "value_size": spec.value_size,
        "value_size_distribution": spec.value_size_distribution,
        "partitions": config.partitions,
        "replication_factor": config.replication_factor,
        "client": producer.client,
        "acks": producer.acks,
        "idempotence": producer.idempotence,
        "compression": producer.compression,
        "batch_size": producer.batch_size,
        "linger_ms": producer.linger_ms,
        "rate_per_task": producer.rate_per_task,
        "time_bound_s": producer.time_bound_s,
        "tasks": config.tasks,
        "read_tasks": config.read_tasks,
        "isolation": config.reader.isolation_level,
        "io": io,
        "spark_master": args.spark_master,
    }


def _listed_end_notes(ranges: dict[int, tuple[int, int]], acked: dict[int, int]) -> list[str]:
    below = [(p, high, acked[p]) for p, (_low, high) in sorted(ranges.items()) if acked.get(p, 0) > high]
    if not below:
        return []
    p, high, end = below[0]
    return [
        f"ListOffsets(latest) answered below the highest acknowledged offset on {len(below)} of "
        f"{len(ranges)} partitions (partition {p}: {high}, acknowledged up to {end - 1}); "
        "the reader reads each partition to its end regardless"
    ]


def _split_notes(statuses: list[SplitStatus], planned: int) -> list[str]:
    notes = [
        f"split {s.split_id} (partition {s.partition}, offsets {s.start}..{s.end}) "
        f"stopped at {s.reached}: {s.note}"
        for s in statuses
        if not s.complete
    ]
    if len(statuses) != planned:
        notes.append(f"{planned - len(statuses)} of {planned} read splits reported no status")
    return notes


def run_against_target(args: argparse.Namespace, out: Path) -> RunResult:
    from fixtures.targets import TargetUnavailableError, launch_with_security

    walls: dict[str, float] = {}
    started = time.monotonic()
    try:
        # secured: its client properties become the run's before Spark starts, so its tasks inherit them
        target = launch_with_security(
            args.target, getattr(args, "security", None), brokers=getattr(args, "brokers", None) or 1
        )
    except (TargetUnavailableError, ValueError, OSError) as exc:
        raise LoadRunError(f"target {args.target!r} is not available: {exc}") from None
    walls["target_start"] = time.monotonic() - started
    with target:
        # The topic first: a target that does not answer fails in seconds, before Spark starts.
        create_topic(target.bootstrap_servers, args.topic, args.partitions, args.replication_factor)
        phase = time.monotonic()
        spark = _session(args)
        walls["spark_start"] = time.monotonic() - phase
        try:
            result = _run(args, out, spark, target.name, target.bootstrap_servers, walls, started)
            result.memory = spark_peak_memory()  # before the stop ends the executors
            return result
        finally:
            spark.stop()


def _run(
    args: argparse.Namespace,
    out: Path,
    spark: SparkSession,
    target_name: str,
    bootstrap: str,
    walls: dict[str, float],
    started: float,
) -> RunResult:
    parallelism = default_parallelism(spark)
    tasks = args.tasks or default_tasks(args.records, parallelism)
    config = config_from(args, bootstrap, tasks, args.read_tasks or 2 * parallelism)
    notes: list[str] = []
    io = args.io
    if io == "spark-kafka":
        available, why = kafka_source_available(spark)
        if not available:
            notes.append(f"--io spark-kafka unavailable, used the executor clients instead: {why}")
            say(f"note: {notes[-1]}")
            io = "executor"
    result = RunResult(out, target_name, config.topic, _settings(config, args, io), walls, notes=notes)
    say(
        f"load: {config.dataset.records:,} records of ~{config.dataset.value_size} bytes to {config.topic} "
        f"({config.partitions} partitions) on {target_name} at {bootstrap}; {tasks} tasks, {io} io, "
        f"{config.producer.client}, acks={config.producer.acks}, idempotence={config.producer.idempotence}"
    )

    phase = time.monotonic()
    acks_path, reads_path = str(out / "acks.parquet"), str(out / "reads.parquet")
    if io == "spark-kafka":
        acks = _spark_job("produce", lambda: produce_with_spark_kafka(spark, config, acks_path))
    else:
        show = progress_printer("produce", "acked", config.dataset.records, "tasks_done", tasks)
        produced = _spark_job("produce", lambda: produce_dataset(spark, config, acks_path, show))
        acks = produced.acks
        if produced.unsent:
            reasons = "; ".join(sorted(set(produced.stop_reasons))[:3])
            notes.append(f"{produced.unsent:,} records were never sent ({reasons})")
    walls["produce"] = time.monotonic() - phase
    result.metrics = delivery_metrics(acks)
    if result.metrics.failed:
        notes.append(
            f"{result.metrics.failed:,} sends were not acknowledged (see acks.parquet, column error)"
        )
    if args.plots and result.metrics.acked and io == "executor":
        title = f"{target_name} {config.topic}"
        result.plots = [
            plot_throughput(result.metrics, out / "throughput.png", title),
            plot_latency_histogram(result.metrics, out / "latency.png", title),
        ]
    if args.verify:
        result.verdict = _read_and_verify(args, spark, config, io, acks, reads_path, notes, walls)
        if args.history:
            history_path = out / f"history.{args.history_format}"
            ops = write_history(Path(acks_path), Path(reads_path), history_path, topic=config.topic,
                                meta={"target": target_name, **result.settings})  # fmt: skip
            say(f"history: {history_path} ({ops:,} ops; kafka-harness check judges it)")
    walls["total"] = time.monotonic() - started
    return result


def _read_and_verify(
    args: argparse.Namespace,
    spark: SparkSession,
    config: LoadConfig,
    io: str,
    acks: DataFrame,
    reads_path: str,
    notes: list[str],
    walls: dict[str, float],
) -> Verdict:
    phase = time.monotonic()
    incomplete = False
    if io == "spark-kafka":
        reads = _spark_job(
            "read", lambda: read_with_spark_kafka(spark, config, config.partitions, reads_path)
        )
    else:
        ranges = partition_ranges(config.bootstrap_servers, config.topic, config.partitions)
        acked = acked_ends(acks)
        notes.extend(_listed_end_notes(ranges, acked))
        # Split what ListOffsets reports; each partition's last split reads on to the end of the
        # partition, so records beyond a lagging answer are read too.
        total = sum(high - low for low, high in ranges.values())
        splits = plan_splits(ranges, split_records_for(total, config.read_tasks))
        expected = sum(max(high, acked.get(p, 0)) - low for p, (low, high) in ranges.items())
        show = progress_printer("read", "read", expected, "splits_done", len(splits))
        reads, statuses = _spark_job("read", lambda: read_topic(spark, config, splits, reads_path, show))
        split_notes = _split_notes(statuses, len(splits))
        incomplete = bool(split_notes)
        notes.extend(split_notes)
    walls["read"] = time.monotonic() - phase
    phase = time.monotonic()
    verdict = _spark_job(
        "verify",
        lambda: verify(
            acks,
            reads,
            generator_ids=[config.dataset.generator_id],
            allowed=allowed_anomalies(args),
            notes=notes,
            incomplete_read=incomplete,
            shuffle_partitions=shuffle_partitions_for(config.dataset.records, default_parallelism(spark)),
        ),
    )
    walls["verify"] = time.monotonic() - phase
    return verdict


def run_synthetic(args: argparse.Namespace, out: Path) -> RunResult:
    """Build an N-record synthetic history, write it as Parquet, and time the verifier on the files."""
    walls: dict[str, float] = {}
    started = time.monotonic()
    spark = _session(args)
    walls["spark_start"] = time.monotonic() - started
    try:
        phase = time.monotonic()
        try:
            acks, reads = synthetic_history(
                spark,
                args.synthetic,
                partitions=args.partitions,
                key_space=args.key_space,
                value_size=args.value_size,
                lost=args.inject_lost,
                duplicated=args.inject_duplicated,
                corrupted=args.inject_corrupted,
            )
        except ValueError as exc:
            raise LoadRunError(str(exc)) from None
        acks.write.mode("overwrite").parquet(str(out / "acks.parquet"))
        reads.write.mode("overwrite").parquet(str(out / "reads.parquet"))
        walls["build"] = time.monotonic() - phase
        say(f"synthetic: {args.synthetic:,} records written in {walls['build']:.1f}s; verifying")
        phase = time.monotonic()
        verdict = verify(
            spark.read.parquet(str(out / "acks.parquet")),
            spark.read.parquet(str(out / "reads.parquet")),
            generator_ids=[SYNTHETIC_GENERATOR],
            allowed=args.allow,
            shuffle_partitions=shuffle_partitions_for(args.synthetic, default_parallelism(spark)),
        )
        walls["verify"] = time.monotonic() - phase
        walls["total"] = time.monotonic() - started
        settings: dict[str, object] = {
            "records": args.synthetic,
            "partitions": args.partitions,
            "inject_lost": args.inject_lost,
            "inject_duplicated": args.inject_duplicated,
            "inject_corrupted": args.inject_corrupted,
            "spark_master": args.spark_master,
        }
        return RunResult(out, "synthetic", "-", settings, walls, verdict=verdict, memory=spark_peak_memory())
    finally:
        spark.stop()
