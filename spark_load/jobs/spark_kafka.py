"""``--io spark-kafka``: Spark's own Kafka sink and source instead of a client in every task.

Spark does not bundle the Kafka connector; it comes with
``--spark-packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>``
on a machine that reaches Maven, or with its jars on the classpath. When Spark
cannot resolve the ``kafka`` data source, :func:`kafka_source_available` says
why and the CLI falls back to the executor clients.

What changes with this path, as written against Spark's Structured Streaming +
Kafka integration guide (batch queries):

* Produce: the dataset's ``key``/``value`` columns go to ``df.write.format("kafka")`` with
  ``kafka.bootstrap.servers``, ``topic`` and producer settings as ``kafka.``-prefixed options.
  The sink gives no per-record delivery reports: a successful job acknowledges every row (the
  sink fails the job on any send error), a failed job leaves every row unacknowledged. Partition,
  offset and latency are unknown, so the inconsistent-offset check uses the reads alone and no
  latency figures are reported.
* Read: ``spark.read.format("kafka")`` with ``assign``, ``startingOffsets=earliest``,
  ``endingOffsets=latest``, ``kafka.isolation.level`` and ``minPartitions`` (Spark's own split of
  offset ranges across tasks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..config import LoadConfig
from ..payloads import RecordGenerator
from .generate import ACK_SCHEMA_DDL

KAFKA_PACKAGE_HINT = "org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"
_DATASET_SCHEMA_DDL = "generator_id string, seq long, key binary, value binary"


def kafka_source_available(spark: SparkSession) -> tuple[bool, str]:
    """(True, "") when Spark resolves the ``kafka`` data source, else (False, why)."""
    jvm: Any = spark.sparkContext._jvm
    try:
        conf = spark._jsparkSession.sessionState().conf()
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource("kafka", conf)
        return True, ""
    except Exception as exc:  # py4j wraps the JVM's DATA_SOURCE_NOT_FOUND / ClassNotFoundException
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = KAFKA_PACKAGE_HINT.format(version=spark.version)
        return False, (
            f"Spark cannot load its Kafka data source (spark-sql-kafka-0-10 is not on the classpath: "
            f"{first_line[:160]}); pass --spark-packages {hint} on a machine that reaches Maven"
        )


def _producer_options(config: LoadConfig) -> dict[str, str]:
    spec = config.producer
    options = {
        "kafka.bootstrap.servers": config.bootstrap_servers,
        "topic": config.topic,
        "kafka.acks": spec.acks,
        "kafka.enable.idempotence": str(spec.idempotence).lower(),
        "kafka.compression.type": spec.compression,
        "kafka.batch.size": str(spec.batch_size),
        "kafka.linger.ms": str(spec.linger_ms),
        "kafka.delivery.timeout.ms": str(spec.delivery_timeout_ms),
    }
    options.update({f"kafka.{k}": v for k, v in spec.extra})
    return options


def produce_with_spark_kafka(spark: SparkSession, config: LoadConfig, acks_path: str) -> DataFrame:
    dataset_spec = config.dataset

    def build(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        generator = RecordGenerator(dataset_spec)
        for batch in batches:
            seqs = batch.column(0).to_pylist()
            keys, values = zip(*(generator.record(seq) for seq in seqs), strict=True) if seqs else ((), ())
            yield pa.RecordBatch.from_pydict(
                {
                    "generator_id": [dataset_spec.generator_id] * len(seqs),
                    "seq": seqs,
                    "key": list(keys),
                    "value": list(values),
                }
            )

    records = dataset_spec.records
    seqs = spark.range(0, records, 1, numPartitions=max(1, min(config.tasks, records or 1)))
    dataset = seqs.mapInArrow(build, _DATASET_SCHEMA_DDL).withColumn("producer", F.spark_partition_id())
    dataset = dataset.cache()
    error: str | None = None
    try:
        writer = dataset.select("key", "value").write.format("kafka")
        for key, value in _producer_options(config).items():
            writer = writer.option(key, value)
        writer.save()
    except Exception as exc:  # the sink failed: nothing is known to be acknowledged
        error = f"spark kafka sink failed: {str(exc).strip().splitlines()[0][:200]}"
    acks = dataset.select(
        "generator_id",
        "seq",
        F.col("producer").cast("int").alias("producer"),
        "key",
        F.lit(None).cast("int").alias("partition"),
        F.lit(None).cast("long").alias("offset"),
        F.lit(error).cast("string").alias("error"),
        F.lit(None).cast("long").alias("send_us"),
        F.lit(None).cast("long").alias("ack_us"),
        F.length("value").cast("int").alias("value_bytes"),
    )
    acks.write.mode("overwrite").parquet(acks_path)
    dataset.unpersist()
    return spark.read.schema(ACK_SCHEMA_DDL).parquet(acks_path)


def read_with_spark_kafka(
    spark: SparkSession, config: LoadConfig, partitions: int, reads_path: str
) -> DataFrame:
    reads = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", config.bootstrap_servers)
        .option("assign", json.dumps({config.topic: list(range(partitions))}))
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("kafka.isolation.level", config.reader.isolation_level)
        .option("minPartitions", str(config.read_tasks))
        .load()
        .select(
            F.col("partition").cast("int"),
            F.col("offset").cast("long"),
            "key",
            "value",
            (F.unix_micros(F.col("timestamp")) / 1000).cast("long").alias("timestamp_ms"),
            F.lit(-1).alias("split"),
        )
    )
    reads.write.mode("overwrite").parquet(reads_path)
    return spark.read.parquet(reads_path)
