"""The reader job: each partition's offset range split across tasks, read by assign, written as Parquet.

The driver plans the splits from the partition ranges (see
:func:`spark_load.consume.plan_splits`); one Spark task reads one split with
its own consumer. How far each split got comes back through an accumulator,
so a read that stopped early is reported as such.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..config import LoadConfig
from ..consume import Split, SplitReader, SplitStatus
from .progress import ListParam, ProgressSample, run_with_progress

READ_SCHEMA_DDL = "partition int, offset long, key binary, value binary, timestamp_ms long, split int"
READ_ARROW_SCHEMA = pa.schema(
    [
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("timestamp_ms", pa.int64()),
        ("split", pa.int32()),
    ]
)


def acked_ends(acks: DataFrame) -> dict[int, int]:
    """Per partition, one past the highest acknowledged offset (a few rows to the driver)."""
    rows = (
        acks.where(F.col("error").isNull() & F.col("offset").isNotNull())
        .groupBy("partition")
        .agg(F.max("offset").alias("last"))
        .collect()
    )
    return {int(row["partition"]): int(row["last"]) + 1 for row in rows}


def read_topic(
    spark: SparkSession,
    config: LoadConfig,
    splits: list[Split],
    reads_path: str,
    on_progress: Callable[[ProgressSample], None] | None = None,
) -> tuple[DataFrame, list[SplitStatus]]:
    """Read every split; write and return what was read, with each split's status."""
    sc = spark.sparkContext
    statuses = sc.accumulator([], ListParam())
    records_read = sc.accumulator(0)
    splits_done = sc.accumulator(0)
    by_id = {split.split_id: split for split in splits}

    def read_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for split_id in batch.column(0).to_pylist():
                reader = SplitReader(config, by_id[split_id])
                for columns in reader.chunks():
                    records_read.add(len(columns["offset"]))
                    yield pa.RecordBatch.from_pydict(columns, schema=READ_ARROW_SCHEMA)
                assert reader.status is not None
                statuses.add([reader.status])
                splits_done.add(1)

    ids = spark.range(0, len(splits), 1, numPartitions=max(1, len(splits))).withColumnRenamed("id", "split")
    reads = ids.mapInArrow(read_partition, READ_SCHEMA_DDL)
    counters: dict[str, Any] = {"read": records_read, "splits_done": splits_done}
    run_with_progress(lambda: reads.write.mode("overwrite").parquet(reads_path), counters, on_progress)
    return spark.read.parquet(reads_path), sorted(statuses.value, key=lambda s: s.split_id)
