"""The generator job: the dataset's sequence numbers, cut into tasks, produced from the executors.

``spark.range`` gives each task a contiguous run of sequence numbers without a
shuffle; each task builds its records from (seed, seq) and produces them with
its own client (:class:`spark_load.produce.TaskProducer`), so per-producer
order is the order of sequence numbers. Every delivery report comes back as an
Arrow row; the acknowledged set is that DataFrame, written as Parquet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession

from ..config import LoadConfig
from ..produce import TaskProducer
from .progress import ListParam, ProgressSample, run_with_progress

ACK_SCHEMA_DDL = (
    "generator_id string, seq long, producer int, key binary, partition int, offset long, "
    "error string, send_us long, ack_us long, value_bytes int"
)
ACK_ARROW_SCHEMA = pa.schema(
    [
        ("generator_id", pa.string()),
        ("seq", pa.int64()),
        ("producer", pa.int32()),
        ("key", pa.binary()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("error", pa.string()),
        ("send_us", pa.int64()),
        ("ack_us", pa.int64()),
        ("value_bytes", pa.int32()),
    ]
)
RECORDS_PER_TASK = 50_000
"""Tasks of this size keep progress reports coming (accumulators arrive when a task ends)."""


@dataclass(frozen=True, slots=True)
class Produced:
    acks: DataFrame
    """The delivery reports (read back from the Parquet just written)."""
    unsent: int
    """Records never handed to a client (a time bound, or a broker that stopped taking records)."""
    stop_reasons: list[str]
    """Why tasks stopped early, one entry per task that did."""


def default_tasks(records: int, parallelism: int) -> int:
    return max(parallelism, min(1000, -(-records // RECORDS_PER_TASK)))


def produce_dataset(
    spark: SparkSession,
    config: LoadConfig,
    acks_path: str,
    on_progress: Callable[[ProgressSample], None] | None = None,
    seq_range: tuple[int, int] | None = None,
) -> Produced:
    """Produce the records of ``config.dataset`` (or those in ``seq_range``); write and return the reports."""
    sc = spark.sparkContext
    acked = sc.accumulator(0)
    failed = sc.accumulator(0)
    unsent = sc.accumulator(0)
    tasks_done = sc.accumulator(0)
    stop_reasons = sc.accumulator([], ListParam())

    def produce_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        context = TaskContext.get()
        producer = TaskProducer(config, context.partitionId() if context else 0)

        def as_batch(columns: dict[str, list[Any]]) -> pa.RecordBatch:
            errors = sum(1 for e in columns["error"] if e is not None)
            acked.add(len(columns["seq"]) - errors)
            failed.add(errors)
            return pa.RecordBatch.from_pydict(columns, schema=ACK_ARROW_SCHEMA)

        try:
            for batch in batches:
                producer.send(batch.column(0).to_pylist())
                reports = producer.drain()
                if reports["seq"]:
                    yield as_batch(reports)
            yield as_batch(producer.finish())
            unsent.add(producer.unsent)
            if producer.stop_reason is not None:
                stop_reasons.add([f"task {producer.task_index}: {producer.stop_reason}"])
            tasks_done.add(1)
        finally:
            producer.close()

    first, end = seq_range if seq_range is not None else (0, config.dataset.records)
    records = max(0, end - first)
    seqs = spark.range(first, end, 1, numPartitions=max(1, min(config.tasks, records or 1)))
    reports = seqs.mapInArrow(produce_partition, ACK_SCHEMA_DDL)
    counters = {"acked": acked, "failed": failed, "unsent": unsent, "tasks_done": tasks_done}
    run_with_progress(lambda: reports.write.mode("overwrite").parquet(acks_path), counters, on_progress)
    return Produced(spark.read.parquet(acks_path), int(unsent.value), list(stop_reasons.value))
