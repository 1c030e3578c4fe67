"""The verifier: the delivery reports and the records read, compared as DataFrames.

Pure DataFrame work: every count is an aggregation on the executors, and only
counts and a few examples per anomaly (``sample_limit`` rows) reach the
driver, so it scales with the cluster, not with the driver's memory. The
anomalies and what is allowed are defined in :mod:`spark_load.verdict`.

Inputs:

* ``acks``: ``generator_id, seq, producer, key, partition, offset, error, ...`` (one row per
  delivery report; ``error`` null means acknowledged; partition and offset may be null when the
  producing path gives no per-record report, as Spark's Kafka sink does);
* ``reads``: ``partition, offset, key, value, ...`` (one row per record read).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from ..payloads import MAGIC
from ..verdict import Verdict


def _bar() -> Column:
    return F.lit("|").cast("binary")


def parse_reads(reads: DataFrame) -> DataFrame:
    """Split each value into its fields and recompute its checksum (see :mod:`spark_load.payloads`).

    Keeps ``partition, offset, key, value``; adds ``gen``, ``seq`` and ``intact``; values that
    do not parse get null fields and ``intact`` false.
    """
    parts = F.split(F.col("value").cast("string"), r"\|", 5)
    magic, gen = F.get(parts, 0), F.get(parts, 1)  # get() is null out of bounds (getItem raises under ANSI)
    seq_text, crc_text, filler = F.get(parts, 2), F.get(parts, 3), F.get(parts, 4)
    expected_crc = F.crc32(
        F.concat(
            gen.cast("binary"),
            _bar(),
            seq_text.cast("binary"),
            _bar(),
            F.col("key"),
            _bar(),
            filler.cast("binary"),
        )
    )
    stored_crc = F.conv(crc_text, 16, 10).try_cast("long")
    seq = seq_text.try_cast("long")
    intact = (
        (F.size(parts) == 5)
        & (magic == F.lit(MAGIC))
        & seq.isNotNull()
        & (F.length(crc_text) == 8)
        & stored_crc.isNotNull()
        & F.col("key").isNotNull()
        & (stored_crc == expected_crc)
    )
    return reads.select(
        "partition",
        "offset",
        "key",
        "value",
        F.when(intact, gen).alias("gen"),
        F.when(intact, seq).alias("seq"),
        F.coalesce(intact, F.lit(False)).alias("intact"),
    )


def _sum_when(condition: Column, name: str) -> Column:
    return F.coalesce(F.sum(F.when(condition, 1).otherwise(0)), F.lit(0)).alias(name)


def _rows(df: DataFrame, limit: int) -> list[dict[str, Any]]:
    def plain(value: Any) -> Any:
        if isinstance(value, bytes | bytearray):
            return value.decode("utf-8", "replace")
        if isinstance(value, list):
            return [plain(item) for item in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    return [plain(row.asDict(recursive=True)) for row in df.limit(limit).collect()]


RECORDS_PER_SHUFFLE_PARTITION = 500_000
"""Rows per shuffle partition the verifier aims at: about 60 MB of sort buffer per task."""
MAX_SHUFFLE_PARTITIONS = 4096


def shuffle_partitions_for(records: int, parallelism: int) -> int:
    """Shuffle partitions for a history of ``records`` records: two per core, more for big histories.

    Spark's adaptive execution coalesces partitions that turn out small, never splits big ones,
    so the count errs on the high side.
    """
    wanted = -(-max(0, records) // RECORDS_PER_SHUFFLE_PARTITION)
    return max(2 * max(1, parallelism), min(MAX_SHUFFLE_PARTITIONS, wanted))


ANOMALY_FLAGS = ("lost", "duplicate", "unacked_read", "unexpected", "unacked", "reordered")
"""Per-record anomalies; ``corrupt`` and ``foreign`` are per read, ``inconsistent_offset`` per offset."""
RECORD_EXAMPLES = ("lost", "duplicate", "reordered", "unexpected", "unacked_read")


def verify(
    acks: DataFrame,
    reads: DataFrame,
    *,
    generator_ids: Iterable[str] | None = None,
    allowed: Iterable[str] = (),
    sample_limit: int = 5,
    notes: Sequence[str] = (),
    incomplete_read: bool = False,
    shuffle_partitions: int | None = None,
) -> Verdict:
    """Compare what was acknowledged with what was read; return the counts and examples.

    ``generator_ids`` are the generators of this run (default: those in ``acks``); intact
    records of any other generator are counted as ``foreign`` and otherwise ignored.

    One job counts everything, in two shuffles (issue 25): every send and every read is
    partitioned by its record's ``(generator, key)`` (:func:`_records`), which is also what the
    order check needs (a key's records, per partition and producer), so one shuffle serves the
    per-record counts and the order window; each record then emits the offsets it occupies, and
    the second shuffle groups them per ``(partition, offset)`` for the inconsistent-offset check
    (:func:`_judge`). Reads are parsed (their checksums computed) once; the per-record counts are
    observed on the way, and the same job ranks the examples, so only they and the counts reach
    the driver. A corrupt read's example comes from one more scan, run only when there is one.
    Nothing is persisted.
    """
    if generator_ids is None:
        generator_ids = [row[0] for row in acks.select("generator_id").distinct().limit(10_000).collect()]
    ours = sorted(set(generator_ids))
    flagged = _flagged(_ordered(_records(acks, parse_reads(reads), ours, shuffle_partitions)))
    counts, samples = _judge(flagged, sample_limit)
    acked, read = counts.pop("acked"), counts.pop("read")
    if counts["corrupt"] and sample_limit > 0:
        bad = parse_reads(reads).where(~F.col("intact")).select("partition", "offset", "key", "value")
        samples["corrupt"] = _rows(bad, sample_limit)
    return Verdict(
        acked=acked,
        read=read,
        counts=counts,
        allowed=frozenset(allowed),
        samples=samples,
        notes=tuple(notes),
        incomplete_read=incomplete_read,
    )


def _mine(ours: Sequence[str]) -> Column:
    return F.col("gen").isin(list(ours)) if ours else F.lit(False)


def _records(
    acks: DataFrame, reads: DataFrame, ours: Sequence[str], shuffle_partitions: int | None
) -> DataFrame:
    """One row per record ``(gen, key, seq)``: sends, acknowledged, copies, reads and where they sit.

    The key is part of a record's identity: an intact copy carries its record's key (the
    checksum covers it) and the delivery report the key it was sent with, so grouping by it as
    well loses nothing, and partitioning by ``(gen, key)`` leaves each key's records together
    for the order window. Every read takes part, so the per-read counts come out of the same
    pass: corrupt reads gather in ``(null, key, null)`` rows and foreign ones under their own
    generator, all with no sends and no good copies. The producer is the one whose
    acknowledgement came first in the log (a record sent twice by two producers is ordered with
    the producer of its first copy). ``positions`` are the distinct offsets the record was
    acknowledged at or read intact from.
    """
    ok = F.col("error").isNull()
    ack_at = "struct<partition:int,offset:bigint,producer:int>"
    position = "struct<partition:int,offset:bigint>"
    sends = acks.select(
        F.col("generator_id").alias("gen"),
        "key",
        "seq",
        F.lit(1).alias("send"),
        F.when(ok, 1).otherwise(0).alias("ok"),
        F.lit(0).alias("copy"),
        F.lit(0).alias("read"),
        F.lit(0).alias("bad"),
        F.lit(0).alias("other"),
        F.when(ok, F.struct("partition", "offset", "producer")).cast(ack_at).alias("ack_at"),
        F.col("producer").cast("int").alias("producer"),
        F.lit(None).cast(position).alias("read_at"),
        F.when(ok & F.col("offset").isNotNull(), F.struct("partition", "offset")).cast(position).alias("at"),
    )
    intact, mine = F.col("intact"), _mine(ours)
    good = intact & mine
    copies = reads.select(
        "gen",
        "key",
        "seq",
        F.lit(0).alias("send"),
        F.lit(0).alias("ok"),
        F.when(good, 1).otherwise(0).alias("copy"),
        F.lit(1).alias("read"),
        F.when(intact, 0).otherwise(1).alias("bad"),
        F.when(intact & ~mine, 1).otherwise(0).alias("other"),
        F.lit(None).cast(ack_at).alias("ack_at"),
        F.lit(None).cast("int").alias("producer"),
        F.when(good, F.struct("partition", "offset")).cast(position).alias("read_at"),
        F.when(good, F.struct("partition", "offset")).cast(position).alias("at"),
    )
    rows = sends.unionByName(copies)
    placed = (
        rows.repartition(shuffle_partitions, "gen", "key")
        if shuffle_partitions
        else rows.repartition("gen", "key")
    )
    # seq first: the aggregation sorts by its grouping keys when its hash map is full, and a sort
    # whose first key is a long is decided by its 8-byte prefix (every row has the same gen).
    return placed.groupBy("seq", "gen", "key").agg(
        F.sum("send").alias("sends"),
        F.max("ok").alias("acked"),
        F.sum("copy").alias("copies"),
        F.sum("read").alias("reads"),
        F.sum("bad").alias("corrupt"),
        F.sum("other").alias("foreign"),
        F.coalesce(F.min("ack_at").getField("producer"), F.min("producer")).alias("producer"),
        F.min("read_at").alias("first_read"),
        F.max("read_at").alias("last_read"),
        F.collect_set("at").alias("positions"),
    )


def _ordered(records: DataFrame) -> DataFrame:
    """Records with the sequence number before them in their (partition, generator, producer, key).

    Only records that were sent and read have a partition and offset here (their earliest
    copy); the others sit in null partitions and never count as reordered. The records are
    already partitioned by ``(gen, key)``, so the window sorts within partitions, no shuffle.
    """
    placed = (F.col("copies") > 0) & (F.col("sends") > 0)
    # key first, for the same reason: its first bytes tell most rows apart, the partition does not.
    order = Window.partitionBy("key", "partition", "gen", "producer").orderBy("offset")
    return (
        records.withColumn("partition", F.when(placed, F.col("first_read.partition")))
        .withColumn("offset", F.when(placed, F.col("first_read.offset")))
        .withColumn("previous_seq", F.lag("seq").over(order))
    )


def _flagged(ordered: DataFrame) -> DataFrame:
    """Each record's anomalies as 0/1 columns (``ANOMALY_FLAGS``), beside its per-read counts."""
    sends, acked, copies = F.col("sends"), F.col("acked"), F.col("copies")
    conditions = {
        "lost": (acked == 1) & (copies == 0),
        "duplicate": copies > 1,
        "unacked_read": (sends > 0) & (acked == 0) & (copies > 0),
        "unexpected": (sends == 0) & (copies > 0),
        "unacked": (sends > 0) & (acked == 0),
        "reordered": F.col("partition").isNotNull() & (F.col("seq") < F.col("previous_seq")),
    }
    return ordered.select(
        "*", *(F.when(c, 1).otherwise(0).alias(f"is_{name}") for name, c in conditions.items())
    )


def _judge(flagged: DataFrame, limit: int) -> tuple[dict[str, int], dict[str, list[dict[str, Any]]]]:
    """Every count and up to ``limit`` examples of each anomaly but ``corrupt``, in one job.

    The per-record counts are observed (:meth:`DataFrame.observe`) as the records stream by, so
    they cost no pass of their own. Each record then becomes one row per position it occupies,
    and one more row, with its examples as JSON, when it has an anomaly; grouped per position,
    an offset is inconsistent when it holds two records: two sequence numbers, or two generators
    (compared by their 64-bit hash, so that the grouping stays a hash aggregation). What is
    collected is only the examples, ranked per anomaly and cut to ``limit`` before they leave
    the executors.
    """
    counted = ("acked", "reads", "corrupt", "foreign", *(f"is_{name}" for name in ANOMALY_FLAGS))
    per_record = Observation("records")
    per_offset = Observation("offsets")
    kinds = F.filter(
        F.array(*(F.when(F.col(f"is_{k}") == 1, F.lit(k)) for k in RECORD_EXAMPLES)), lambda k: k.isNotNull()
    )
    example = F.to_json(
        F.struct(
            kinds.alias("kinds"),
            "gen",
            "seq",
            "copies",
            F.col("first_read.partition").alias("first_partition"),
            F.col("first_read.offset").alias("first_offset"),
            F.col("last_read.partition").alias("last_partition"),
            F.col("last_read.offset").alias("last_offset"),
            "partition",
            F.col("key").cast("string").alias("key"),
            "producer",
            "offset",
            "previous_seq",
        )
    )
    at_type = "struct<partition:int,offset:bigint>"
    rows = F.concat(
        F.transform("positions", lambda at: F.struct(at.alias("at"), F.lit(None).cast("string").alias("ex"))),
        F.when(
            F.size(kinds) > 0, F.array(F.struct(F.lit(None).cast(at_type).alias("at"), example.alias("ex")))
        ).otherwise(F.array().cast(f"array<struct<at:{at_type},ex:string>>")),
    )
    sums = [F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in counted]
    observed = flagged.observe(per_record, *sums)
    grouped = (
        observed.select(F.explode(rows).alias("row"), "seq", F.xxhash64("gen").alias("gen_hash"))
        .select("row.at", "row.ex", "seq", "gen_hash")
        .groupBy("at", "ex")
        .agg(
            F.min("seq").alias("low"),
            F.max("seq").alias("high"),
            ((F.min("seq") != F.max("seq")) | (F.min("gen_hash") != F.max("gen_hash"))).alias("clash"),
        )
        .withColumn("clash", F.col("at").isNotNull() & F.col("clash"))
    )
    grouped = grouped.observe(per_offset, _sum_when(F.col("clash"), "inconsistent_offset"))
    clash = F.to_json(
        F.struct(F.col("at.partition").alias("partition"), F.col("at.offset").alias("offset"), "low", "high")
    )
    picked = (
        grouped.where(F.col("clash") | F.col("ex").isNotNull())
        .select(
            F.explode(
                F.when(F.col("clash"), F.array(F.lit("inconsistent_offset"))).otherwise(
                    F.from_json("ex", "struct<kinds:array<string>>").getField("kinds")
                )
            ).alias("kind"),
            F.coalesce("ex", clash).alias("detail"),
            "low",
            "at",
        )
        .withColumn("rank", F.row_number().over(Window.partitionBy("kind").orderBy("low", "at")))
        .where(F.col("rank") <= max(1, limit))
        .collect()
    )
    # Adaptive execution drops a plan's part whose input turned out empty, with its observations:
    # none reached the grouping means no offset and no anomaly; the per-record counts are then
    # summed by a job of their own (a history where nothing was placed nor found: small).
    record_totals = _observed(per_record) or flagged.agg(*sums).first().asDict()  # type: ignore[union-attr]
    totals = {**record_totals, **(_observed(per_offset) or {"inconsistent_offset": 0})}
    counts = {name: int(totals[name]) for name in ("corrupt", "foreign", "inconsistent_offset")}
    counts.update({name: int(totals[f"is_{name}"]) for name in ANOMALY_FLAGS})
    counts["acked"], counts["read"] = int(totals["acked"]), int(totals["reads"])
    samples: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(picked, key=lambda r: (r["kind"], r["rank"])) if limit > 0 else ():
        samples.setdefault(row["kind"], []).append(_example(row["kind"], json.loads(row["detail"])))
    return counts, samples


def _observed(observation: Observation) -> dict[str, Any] | None:
    """The observation's values, or None when the part of the plan that held it never ran."""
    try:
        return dict(observation.get)
    except Py4JJavaError:
        return None


EXAMPLE_FIELDS = {
    "lost": ("gen", "seq"),
    "unexpected": ("gen", "seq"),
    "unacked_read": ("gen", "seq"),
    "duplicate": ("gen", "seq", "copies", "first_partition", "first_offset", "last_partition", "last_offset"),
    "reordered": ("partition", "key", "producer", "offset", "seq", "previous_seq"),
    "inconsistent_offset": ("partition", "offset", "low", "high"),
}
"""What an example of each anomaly shows (``inconsistent_offset``: the lowest and highest
sequence numbers found at the offset)."""


def _example(kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {name: detail.get(name) for name in EXAMPLE_FIELDS[kind]}
