"""The per-record and per-key checkers of :mod:`chaos.checkers.queue` as Spark jobs over a Parquet
history (:mod:`spark_load.history_table`), for histories no single process holds.

Same definitions as the Python detectors (``queue.py`` is the specification; a test runs both on the
same histories and compares the anomalies one by one): ``lost_write``, ``unseen``, ``duplicate``,
``inconsistent_offsets``, ``poll_skip``, ``nonmonotonic_poll``, ``nonmonotonic_send``,
``aborted_read`` and ``validate_delivery``, with the final reader (``meta.final_reader``) and the
restart phase's writes left out as in :mod:`.analysis`. How each becomes DataFrame work:

* writes: a send's invoke joined with its completion by (process, value), as ``History.pairs``
  matches them (values are unique in a campaign);
* reads: the records of ``ok`` polls, exploded with their position in the poll;
* lost / unseen: acknowledged writes anti-joined with the read values, then compared with the
  highest offset read of their partition (or with the final read's values);
* duplicate / inconsistent: the positions (ok sends with an offset, and reads) grouped by value and
  by position;
* poll order: a consumer's reads of one partition between two ``assign`` ops (the number of assigns
  before a read is its epoch) in read order, each compared with the previous by a window ``lag``;
  the known offsets skipped are counted by the rank of each offset among the partition's known ones;
* nonmonotonic send: a producer's acknowledged sends to one partition in invoke order, ``lag`` again.

Only counts and up to ``examples`` anomalies per class reach the driver. Histories with ``txn`` ops
(transactions, the dependency graph) stay with the Python checkers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from chaos.checkers import ORDER

NAMES = ORDER[: ORDER.index("unreadable_after_restart")]
"""The per-record classes of :data:`chaos.checkers.ORDER` (not the restart phase, not the graph)."""
MAX_EXAMPLES = 10_000


@dataclass
class SparkCheckResult:
    counts: dict[str, int]
    examples: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    """Per class, up to ``examples`` anomaly keys (:func:`anomaly_key` gives the Python side's)."""
    stats: dict[str, int] = field(default_factory=dict)


def anomaly_key(name: str, anomaly: Any) -> tuple[Any, ...]:
    """The key a Python :class:`~chaos.checkers.queue.Anomaly` and a Spark example share."""
    d = anomaly.detail
    if name in ("lost_write", "unseen", "duplicate", "aborted_read"):
        return (json.dumps(d["value"], separators=(",", ":")),)
    if name == "inconsistent_offsets":
        return (d["partition"], d["offset"])
    if name in ("poll_skip", "nonmonotonic_poll"):
        return (d["partition"], d["from"], d["to"], *sorted(anomaly.ops))
    if name == "nonmonotonic_send":
        return (d["partition"], *d["offsets"])
    if name == "validate_delivery":
        return ("missing", d["missing"]) if "missing" in d else ("duplicated", d["duplicated"])
    raise ValueError(f"no key for {name}")


def check_parquet(
    spark: SparkSession, path: str, meta: dict[str, Any], *, examples: int = 20
) -> SparkCheckResult:
    examples = max(0, min(examples, MAX_EXAMPLES))
    h = spark.read.parquet(path)
    if h.filter(F.col("f") == "txn").limit(1).count():
        raise ValueError(
            "the history has txn ops: the Python checkers judge it (kafka-harness check without Spark)"
        )
    idempotence = bool(meta.get("idempotence", False))

    sends = h.filter(F.col("f") == "send")
    invokes = sends.filter(F.col("type") == "invoke").select(
        "process", "value", F.col("index").alias("invoke_index"), F.col("topic").alias("i_topic"),
        F.col("partition").alias("i_partition"),
    )  # fmt: skip
    done = sends.filter(F.col("type") != "invoke").select(
        "process", "value", F.col("index").alias("complete_index"), F.col("type").alias("status"),
        F.col("topic").alias("c_topic"), F.col("partition").alias("c_partition"), "offset",
    )  # fmt: skip
    writes = (
        invokes.join(done, ["process", "value"], "left")
        .select(
            "process", "value", "invoke_index", "complete_index",
            F.coalesce("status", F.lit("open")).alias("status"),
            F.when(F.col("complete_index").isNotNull(), F.col("c_topic"))
            .otherwise(F.col("i_topic")).alias("topic"),
            F.when(F.col("complete_index").isNotNull(), F.col("c_partition"))
            .otherwise(F.col("i_partition")).alias("partition"),
            F.when(F.col("status") == "ok", F.col("offset")).alias("offset"),
        )
        .cache()
    )  # fmt: skip

    polls = h.filter((F.col("type") == "ok") & (F.col("f") == "poll"))
    reads = (
        polls.select("index", "process", F.posexplode("records").alias("pos", "r"))
        .select(
            F.col("index").alias("op_index"), "process", "pos", F.col("r.topic").alias("topic"),
            F.col("r.partition").alias("partition"), F.col("r.offset").alias("offset"),
            F.col("r.value").alias("value"),
        )
        .cache()
    )  # fmt: skip

    final_reader = meta.get("final_reader")
    final_start: int | None = None
    if final_reader is not None:
        begun = h.filter((F.col("type") == "ok") & (F.col("process") == str(final_reader)))
        row = begun.agg(F.min("index")).first()
        final_start = None if row is None else row[0]
    acked = writes.filter(
        (F.col("status") == "ok") & F.col("topic").isNotNull() & F.col("partition").isNotNull()
    )
    if final_start is not None:
        acked = acked.filter(F.col("complete_index").isNull() | (F.col("complete_index") <= final_start))

    read_values = reads.select("value").distinct()
    found: dict[str, DataFrame] = {}

    # lost_write / unseen
    unread_source = acked
    if final_reader is not None and meta.get("final_read_complete"):
        final_values = reads.filter(F.col("process") == str(final_reader)).select("value").distinct()
        found["lost_write"] = acked.join(final_values, "value", "left_anti").select("value")
        found["unseen"] = acked.limit(0).select("value")
    else:
        unread = unread_source.join(read_values, "value", "left_anti")
        high = reads.groupBy("topic", "partition").agg(F.max("offset").alias("high"))
        judged = unread.join(high, ["topic", "partition"], "left")
        is_lost = F.col("offset").isNotNull() & F.col("high").isNotNull() & (F.col("high") > F.col("offset"))
        found["lost_write"] = judged.filter(is_lost).select("value")
        found["unseen"] = judged.filter(~is_lost).select("value")

    # positions: acknowledged sends with an offset, and reads
    positions = (
        writes.filter((F.col("status") == "ok") & F.col("offset").isNotNull() & F.col("topic").isNotNull())
        .select("topic", "partition", "offset", "value")
        .unionByName(reads.select("topic", "partition", "offset", "value"))
        .distinct()
        .cache()
    )
    duplicates = positions.groupBy("value").agg(F.count("*").alias("n")).filter(F.col("n") > 1)
    found["duplicate"] = duplicates.select("value")
    found["inconsistent_offsets"] = (
        positions.groupBy("topic", "partition", "offset")
        .agg(F.count("*").alias("n"))
        .filter(F.col("n") > 1)
        .select("partition", "offset")
    )

    # poll order
    assigns = h.filter((F.col("type") == "ok") & (F.col("f") == "assign")).select(
        "process", F.col("index").alias("assign_index")
    )
    epochs = (
        reads.select("process", "op_index")
        .distinct()
        .join(assigns, "process", "left")
        .groupBy("process", "op_index")
        .agg(F.sum(F.when(F.col("assign_index") < F.col("op_index"), 1).otherwise(0)).alias("epoch"))
    )
    ranks = (
        positions.select("topic", "partition", "offset")
        .distinct()
        .withColumn("rank", F.row_number().over(Window.partitionBy("topic", "partition").orderBy("offset")))
    )
    sequence = Window.partitionBy("process", "epoch", "topic", "partition").orderBy("op_index", "pos")
    ordered = (
        reads.join(epochs, ["process", "op_index"])
        .withColumn("prev", F.lag("offset").over(sequence))
        .withColumn("prev_op", F.lag("op_index").over(sequence))
        .filter(F.col("prev").isNotNull())
    )
    op_pair = F.array_sort(F.array_distinct(F.array("prev_op", "op_index")))
    found["nonmonotonic_poll"] = ordered.filter(F.col("offset") <= F.col("prev")).select(
        "partition", F.col("prev").alias("from"), F.col("offset").alias("to"), op_pair.alias("ops")
    )
    jumps = ordered.filter(F.col("offset") > F.col("prev") + 1)
    here = ranks.select("topic", "partition", "offset", F.col("rank").alias("rank_to"))
    there = ranks.select(
        "topic", "partition", F.col("offset").alias("prev"), F.col("rank").alias("rank_from")
    )
    found["poll_skip"] = (
        jumps.join(here, ["topic", "partition", "offset"])
        .join(there, ["topic", "partition", "prev"])
        .filter(F.col("rank_to") - F.col("rank_from") > 1)
        .select("partition", F.col("prev").alias("from"), F.col("offset").alias("to"), op_pair.alias("ops"))
    )

    # nonmonotonic send
    by_producer = Window.partitionBy("process", "topic", "partition").orderBy("invoke_index")
    found["nonmonotonic_send"] = (
        writes.filter((F.col("status") == "ok") & F.col("offset").isNotNull() & F.col("topic").isNotNull())
        .withColumn("prev", F.lag("offset").over(by_producer))
        .filter(F.col("prev").isNotNull() & (F.col("offset") <= F.col("prev")))
        .select("partition", "prev", "offset")
    )

    # aborted read: a value read whose write certainly failed
    failed = writes.filter(F.col("status") == "fail").select("value")
    found["aborted_read"] = read_values.join(failed, "value")

    # One union of every anomaly (its class and its key as JSON) and of the figures' rows: all counts
    # in one job, the examples in a second, instead of two jobs per class.
    figures = {
        "#ops": h.select(),
        "#writes": writes.select(),
        "#acked": writes.filter(F.col("status") == "ok").select(),
        "#reads": reads.select(),
        "#distinct_read": read_values.select(),
        "#missing": acked.join(read_values, "value", "left_anti").select(),
    }
    tagged = [frame.select(F.lit(name).alias("name"), F.to_json(F.struct(*frame.columns)).alias("key"))
              for name, frame in found.items()]  # fmt: skip
    tagged += [frame.select(F.lit(name).alias("name"), F.lit(None).cast("string").alias("key"))
               for name, frame in figures.items()]  # fmt: skip
    union = tagged[0]
    for frame in tagged[1:]:
        union = union.unionByName(frame)
    union = union.cache()
    totals = {row["name"]: int(row["count"]) for row in union.groupBy("name").count().collect()}
    shown: dict[str, list[tuple[Any, ...]]] = {name: [] for name in found}
    if examples:
        by_key = Window.partitionBy("name").orderBy("key")
        picked = union.filter(~F.col("name").startswith("#")).withColumn("n", F.row_number().over(by_key))
        for row in picked.filter(F.col("n") <= examples).select("name", "key").collect():
            shown[row["name"]].append(tuple(_flat(json.loads(row["key"]).values())))
    union.unpersist()
    counts = {name: totals.get(name, 0) for name in found}

    missing = totals.get("#missing", 0)
    delivery: list[tuple[Any, ...]] = []
    if missing:
        delivery.append(("missing", missing))
    if idempotence and counts["duplicate"]:
        delivery.append(("duplicated", counts["duplicate"]))
    counts["validate_delivery"] = len(delivery)
    shown["validate_delivery"] = delivery

    stats = {name[1:]: totals.get(name, 0) for name in figures if name != "#missing"}
    for frame in (writes, reads, positions):
        frame.unpersist()
    return SparkCheckResult({name: counts.get(name, 0) for name in NAMES}, shown, stats)


def _flat(row: Any) -> list[Any]:
    out: list[Any] = []
    for item in row:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    return out
