"""Synthetic histories built by Spark SQL alone, for verifier tests and the 10M-record benchmark.

The values follow the layout of :mod:`spark_load.payloads` (the checksum is
Spark's ``crc32``, the same CRC-32 as zlib's), so the verifier cannot tell them
from produced ones. Record ``seq`` is in partition ``seq % partitions`` at
offset ``seq // partitions``, sent by one producer, acknowledged. Known
anomalies can be injected, each on its own run of sequence numbers after the
previous one:

* ``lost``: acknowledged, missing from the reads;
* ``duplicated``: read a second time, at an offset after the partition's last;
* ``corrupted``: read with one filler byte changed (the record then also counts as lost:
  its only copy is not intact).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ..produce import REPORT_COLUMNS

SYNTHETIC_GENERATOR = "synthetic"


def _value(
    gen: Column, seq: Column, key: Column, filler: Column, stored_filler: Column | None = None
) -> Column:
    """The value of ``seq``; with ``stored_filler``, the checksum still covers ``filler`` (a corruption)."""
    bar = F.lit("|").cast("binary")
    crc = F.crc32(
        F.concat(
            gen.cast("binary"), bar, seq.cast("string").cast("binary"), bar, key, bar, filler.cast("binary")
        )
    )
    return F.concat(
        F.lit("KH1|").cast("binary"),
        gen.cast("binary"),
        bar,
        seq.cast("string").cast("binary"),
        bar,
        F.lpad(F.lower(F.hex(crc)), 8, "0").cast("binary"),
        bar,
        (filler if stored_filler is None else stored_filler).cast("binary"),
    )


def synthetic_history(
    spark: SparkSession,
    records: int,
    *,
    partitions: int = 12,
    key_space: int = 10_000,
    value_size: int = 100,
    generator_id: str = SYNTHETIC_GENERATOR,
    lost: int = 0,
    duplicated: int = 0,
    corrupted: int = 0,
    slices: int | None = None,
) -> tuple[DataFrame, DataFrame]:
    """(acks, reads) with the schemas of the generator and reader jobs."""
    if lost + duplicated + corrupted > records:
        raise ValueError("more injected anomalies than records")
    base = spark.range(0, records, 1, numPartitions=slices or max(1, spark.sparkContext.defaultParallelism))
    seq = F.col("id")
    gen = F.lit(generator_id)
    key = F.concat(F.lit("k"), F.pmod(F.xxhash64(seq), F.lit(key_space)).cast("string")).cast("binary")
    filler_len = max(0, value_size - 30)
    filler = F.substring(F.repeat(F.hex(F.xxhash64(seq, F.lit(7))), filler_len // 16 + 1), 1, filler_len)
    rows = base.select(
        gen.alias("generator_id"),
        seq.alias("seq"),
        F.lit(0).alias("producer"),
        key.alias("key"),
        (seq % partitions).cast("int").alias("partition"),
        F.expr(f"id div {int(partitions)}").alias("offset"),
        filler.alias("filler"),
    )
    seq = F.col("seq")
    acks = rows.select(
        *REPORT_COLUMNS[:6],
        F.lit(None).cast("string").alias("error"),
        (seq * 10).alias("send_us"),
        (seq * 10 + 2000).alias("ack_us"),
        (F.length("filler") + 30).cast("int").alias("value_bytes"),
    )
    first_dup, first_corrupt = lost, lost + duplicated
    end_corrupt = first_corrupt + corrupted
    is_corrupt = (seq >= first_corrupt) & (seq < end_corrupt)
    stored_filler = F.when(is_corrupt, F.concat(F.lit("Z"), F.substring("filler", 2, 1 << 20))).otherwise(
        F.col("filler")
    )
    value = _value(gen, seq, F.col("key"), F.col("filler"), stored_filler)
    present = rows.where(seq >= lost).select(
        "partition",
        "offset",
        "key",
        value.alias("value"),
        (seq / 1000).cast("long").alias("timestamp_ms"),
        F.lit(0).alias("split"),
    )
    last_offset = (records - 1) // partitions if records else 0
    copies = rows.where((seq >= first_dup) & (seq < first_corrupt)).select(
        "partition",
        (F.col("offset") + F.lit(last_offset + 1)).alias("offset"),
        "key",
        _value(gen, seq, F.col("key"), F.col("filler")).alias("value"),
        (seq / 1000).cast("long").alias("timestamp_ms"),
        F.lit(0).alias("split"),
    )
    return acks, present.unionByName(copies)
