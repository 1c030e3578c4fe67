"""The verifier as it was before issue 25 (three shuffles), kept as the oracle of the equivalence test.

Verbatim but for the helpers it shares with :mod:`spark_load.jobs.verify`, imported from there.
The original docstring follows.

The verifier: the delivery reports and the records read, compared as DataFrames.

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

from collections.abc import Iterable, Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_load.jobs.verify import _mine, _rows, _sum_when, parse_reads
from spark_load.verdict import Verdict


def verify(
    acks: DataFrame,
    reads: DataFrame,
    *,
    generator_ids: Iterable[str] | None = None,
    allowed: Iterable[str] = (),
    sample_limit: int = 5,
    notes: Sequence[str] = (),
    incomplete_read: bool = False,
) -> Verdict:
    """Compare what was acknowledged with what was read; return the counts and examples.

    ``generator_ids`` are the generators of this run (default: those in ``acks``); intact
    records of any other generator are counted as ``foreign`` and otherwise ignored.

    Two jobs when the history is clean: one groups sends and reads per record, orders each
    key's records with a window and sums every per-record and per-read count in one pass; the
    other groups per offset (inconsistent offsets). Examples are fetched only for anomalies
    found. Nothing is persisted: parsing again from Parquet was measured faster than building
    Spark's in-memory cache.
    """
    if generator_ids is None:
        generator_ids = [row[0] for row in acks.select("generator_id").distinct().limit(10_000).collect()]
    ours = sorted(set(generator_ids))
    judged = parse_reads(reads).select("partition", "offset", "key", "gen", "seq", "intact")
    good = judged.where(F.col("intact") & _mine(ours))
    ordered = _ordered(_per_record(acks, judged, ours))

    sends, acked, copies = F.col("sends"), F.col("acked"), F.col("copies")
    conditions = {
        "lost": (acked == 1) & (copies == 0),
        "duplicate": copies > 1,
        "unacked_read": (sends > 0) & (acked == 0) & (copies > 0),
        "unexpected": (sends == 0) & (copies > 0),
        "unacked": (sends > 0) & (acked == 0),
        "reordered": F.col("partition").isNotNull() & (F.col("seq") < F.col("previous_seq")),
    }
    totals = ordered.agg(
        _sum_when(acked == 1, "acked"),
        F.coalesce(F.sum("reads"), F.lit(0)).alias("read"),
        F.coalesce(F.sum("corrupt"), F.lit(0)).alias("corrupt"),
        F.coalesce(F.sum("foreign"), F.lit(0)).alias("foreign"),
        *(_sum_when(c, name) for name, c in conditions.items()),
    ).first()
    assert totals is not None

    acked_positions = acks.where(F.col("error").isNull() & F.col("offset").isNotNull()).select(
        "partition", "offset", F.col("generator_id").alias("gen"), "seq"
    )
    positions = acked_positions.unionByName(good.select("partition", "offset", "gen", "seq"))
    value = F.struct("gen", "seq")
    inconsistent = (
        positions.groupBy("partition", "offset")
        .agg(F.min(value).alias("low"), F.max(value).alias("high"))
        .where(F.col("low") != F.col("high"))
    )

    names = ("lost", "duplicate", "corrupt", "reordered", "unexpected", "unacked_read", "unacked", "foreign")
    counts = {name: int(totals[name]) for name in names}
    counts["inconsistent_offset"] = inconsistent.count()
    examples: dict[str, DataFrame] = {
        "lost": ordered.where(conditions["lost"]).select("gen", "seq"),
        "duplicate": good.join(ordered.where(conditions["duplicate"]).select("gen", "seq"), ["gen", "seq"])
        .select("gen", "seq", "partition", "offset")
        .orderBy("gen", "seq", "offset"),
        "corrupt": parse_reads(reads).where(~F.col("intact")).select("partition", "offset", "key", "value"),
        "reordered": ordered.where(conditions["reordered"]).select(
            "partition", "key", "producer", "offset", "seq", "previous_seq"
        ),
        "inconsistent_offset": positions.join(
            inconsistent.select("partition", "offset"), ["partition", "offset"]
        )
        .groupBy("partition", "offset")
        .agg(F.sort_array(F.collect_set(value)).alias("records")),
        "unexpected": ordered.where(conditions["unexpected"]).select("gen", "seq"),
        "unacked_read": ordered.where(conditions["unacked_read"]).select("gen", "seq"),
    }
    samples = {
        name: _rows(df, sample_limit) for name, df in examples.items() if counts[name] and sample_limit > 0
    }
    return Verdict(
        acked=int(totals["acked"]),
        read=int(totals["read"]),
        counts=counts,
        allowed=frozenset(allowed),
        samples=samples,
        notes=tuple(notes),
        incomplete_read=incomplete_read,
    )


def _per_record(acks: DataFrame, judged: DataFrame, ours: Sequence[str]) -> DataFrame:
    """One row per (gen, seq): sends, acknowledged, copies read, producer, first copy read, key.

    Every read takes part, so the per-read counts come out of the same pass: corrupt reads
    gather in the (null, null) row and foreign ones under their own generator, both with no
    sends and no good copies. The producer is the one whose acknowledgement came first in the
    log (a record sent twice by two producers is ordered with the producer of its first copy).
    """
    ok = F.col("error").isNull()
    ack_at = "struct<partition:int,offset:bigint,producer:int>"
    read_at = "struct<partition:int,offset:bigint>"
    sends = acks.select(
        F.col("generator_id").alias("gen"),
        "seq",
        F.lit(1).alias("send"),
        F.when(ok, 1).otherwise(0).alias("ok"),
        F.lit(0).alias("copy"),
        F.lit(0).alias("read"),
        F.lit(0).alias("bad"),
        F.lit(0).alias("other"),
        F.when(ok, F.struct("partition", "offset", "producer")).cast(ack_at).alias("ack_at"),
        F.col("producer").cast("int").alias("producer"),
        F.lit(None).cast(read_at).alias("read_at"),
        F.lit(None).cast("binary").alias("read_key"),
    )
    intact, mine = F.col("intact"), _mine(ours)
    good = intact & mine
    copies = judged.select(
        "gen",
        "seq",
        F.lit(0).alias("send"),
        F.lit(0).alias("ok"),
        F.when(good, 1).otherwise(0).alias("copy"),
        F.lit(1).alias("read"),
        F.when(intact, 0).otherwise(1).alias("bad"),
        F.when(intact & ~mine, 1).otherwise(0).alias("other"),
        F.lit(None).cast(ack_at).alias("ack_at"),
        F.lit(None).cast("int").alias("producer"),
        F.when(good, F.struct("partition", "offset")).cast(read_at).alias("read_at"),
        F.when(good, F.col("key")).alias("read_key"),
    )
    return (
        sends.unionByName(copies)
        .groupBy("gen", "seq")
        .agg(
            F.sum("send").alias("sends"),
            F.max("ok").alias("acked"),
            F.sum("copy").alias("copies"),
            F.sum("read").alias("reads"),
            F.sum("bad").alias("corrupt"),
            F.sum("other").alias("foreign"),
            F.coalesce(F.min("ack_at").getField("producer"), F.min("producer")).alias("producer"),
            F.min("read_at").alias("first_read"),
            F.max("read_key").alias("key"),
        )
    )


def _ordered(records: DataFrame) -> DataFrame:
    """Records with the sequence number before them in their (partition, generator, producer, key).

    Only records that were sent and read have a partition and offset here (their earliest
    copy); the others sit in null partitions and never count as reordered.
    """
    placed = (F.col("copies") > 0) & (F.col("sends") > 0)
    order = Window.partitionBy("partition", "gen", "producer", "key").orderBy("offset")
    return (
        records.withColumn("partition", F.when(placed, F.col("first_read.partition")))
        .withColumn("offset", F.when(placed, F.col("first_read.offset")))
        .withColumn("previous_seq", F.lag("seq").over(order))
    )
