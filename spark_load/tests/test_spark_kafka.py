"""``--io spark-kafka`` without the connector: detected and explained; the sink path fails softly.

This machine has no ``spark-sql-kafka-0-10`` jars (no Maven), so the path that
uses them cannot send anything here; what can be checked is that the absence is
detected with the remedy named, and that a sink failure leaves every record
unacknowledged rather than acknowledged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_load.config import DatasetSpec, LoadConfig
from spark_load.jobs.read import READ_SCHEMA_DDL
from spark_load.jobs.spark_kafka import kafka_source_available, produce_with_spark_kafka
from spark_load.jobs.verify import verify


def test_a_missing_connector_is_detected_with_the_package_to_add(spark: Any) -> None:
    available, why = kafka_source_available(spark)
    if available:  # a Spark with the connector on its classpath: nothing to explain
        assert why == ""
        return
    assert "spark-sql-kafka-0-10" in why
    assert f"--spark-packages org.apache.spark:spark-sql-kafka-0-10_2.13:{spark.version}" in why


def test_a_failed_sink_leaves_every_record_unacknowledged(spark: Any, tmp_path: Path) -> None:
    available, _ = kafka_source_available(spark)
    config = LoadConfig("127.0.0.1:1", "kh-spark-kafka", DatasetSpec(records=100, generator_id="sk"), tasks=2)
    acks = produce_with_spark_kafka(spark, config, str(tmp_path / "acks"))
    rows = acks.select("seq", "producer", "error", "partition", "offset").collect()
    assert sorted(row["seq"] for row in rows) == list(range(100))
    assert {row["producer"] for row in rows} == {0, 1}
    assert all(row["partition"] is None and row["offset"] is None for row in rows)
    if not available:
        assert all(row["error"].startswith("spark kafka sink failed") for row in rows)
        verdict = verify(acks, spark.createDataFrame([], READ_SCHEMA_DDL))
        assert verdict.valid and verdict.acked == 0 and verdict.counts["unacked"] == 100
