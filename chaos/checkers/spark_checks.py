"""The per-record and per-key checkers of :mod:`chaos.checkers.queue` as Spark jobs over a Parquet
history (:mod:`spark_load.history_table`), for histories no single process holds.

Same definitions as the Python detectors (``queue.py`` and ``analysis.py`` are the specification; a
test runs both on the same histories and compares the anomalies one by one): ``lost_write``,
``unseen``, ``duplicate``, ``inconsistent_offsets``, ``poll_skip``, ``nonmonotonic_poll``,
``nonmonotonic_send``, ``aborted_read`` and ``validate_delivery``, with the final reader
(``meta.final_reader``) and the restart phase's writes left out as in :mod:`.analysis`.

Why it is shaped this way: the first version ran one DataFrame per class (about 25 shuffles and 54
stages for 1M ops, the send pairing, the read explode and the positions each shuffled several
times), and its driver spent its time planning. This one is one linear job of two shuffles, as the
load verifier (:mod:`spark_load.jobs.verify`) is:

1. every send op and every record read, partitioned once by **value** (:func:`_by_value`): a sorted
   pass pairs each send's invoke with its completion (``History.pairs``), picks the value's write as
   ``Analysis.writes`` does, and window aggregates over the value give what the per-value classes
   need (read or not, read by the final reader, distinct positions, the write's status);
2. the rows that sit at a position (acknowledged sends, reads) and one row per value carrying its
   flags, partitioned once by **(topic, partition)** (:func:`_by_partition`): window functions over
   the partition give the highest offset read (lost or unseen), the values at each offset
   (inconsistent), the rank of each offset among the known ones (poll skip: a jump passes a known
   offset when the ranks differ by more than one), and, sorted by consumer or producer, the previous
   read or send (poll order, send order).

Each row then yields its anomalies (class, key) and its share of the figures, aggregated into a
small summary (:func:`_summary`, persisted): only the anomalies and one figures row per class of
figure, so the driver sees counts and at most ``examples`` keys per class. No Python UDF, no
collect of anything that grows with the history. A consumer's ``assign`` starts a new poll
sequence: a poll anomaly whose two reads have an assign of that consumer between them is dropped
from the summary (an anti-join of the few anomalies with the assigns), which is the same as
comparing only reads of one assignment epoch. Histories with ``txn`` ops (transactions, the
dependency graph) stay with the Python checkers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from chaos.checkers import ORDER
from spark_load.jobs.session import default_parallelism
from spark_load.jobs.verify import shuffle_partitions_for

NAMES = ORDER[: ORDER.index("unreadable_after_restart")]
"""The per-record classes of :data:`chaos.checkers.ORDER` (not the restart phase, not the graph)."""
MAX_EXAMPLES = 10_000
POLL_CLASSES = ("poll_skip", "nonmonotonic_poll")
FIGURES = ("writes", "acked", "reads", "distinct_read", "missing")
"""Per-row figures summed by the summary: :func:`chaos.checkers.check`'s stats and the missing count."""
NEVER = 2**62
"""The completion order of a send never completed: after every completed one (``History.pairs``)."""


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
    """Check the history at ``path`` (its ``meta`` as :func:`spark_load.history_table.read_meta`
    gives it): a first scan counts the ops and finds where the final read began, one job of two
    shuffles builds the summary, small jobs over the summary give the counts and examples."""
    examples = max(0, min(examples, MAX_EXAMPLES))
    h = spark.read.parquet(path)
    final_reader = meta.get("final_reader")
    first = h.agg(
        F.count(F.lit(1)).alias("ops"),
        F.count(F.when(F.col("f") == "txn", 1)).alias("txn"),
        F.min(F.when((F.col("type") == "ok") & (F.col("process") == str(final_reader)), F.col("index"))),
    ).first()
    ops, txn, final_start = (0, 0, None) if first is None else (int(first[0]), int(first[1]), first[2])
    if txn:
        raise ValueError(
            "the history has txn ops: the Python checkers judge it (kafka-harness check without Spark)"
        )
    rules = _Rules(
        final_reader=None if final_reader is None else str(final_reader),
        final_complete=final_reader is not None and bool(meta.get("final_read_complete")),
        final_start=None if final_reader is None else final_start,
        acks_all=str(meta.get("acks", "all")) in ("all", "-1"),
        partitions=shuffle_partitions_for(ops, default_parallelism(spark)),
    )
    summary = _summary(_by_partition(_by_value(_rows(h), rules), rules), rules)
    summary = summary.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        kept = _outside_assigns(summary, h)
        totals = {
            row["name"]: row
            for row in kept.groupBy("name")
            .agg(F.sum("n").alias("n"), *(F.sum(f).alias(f) for f in FIGURES))
            .collect()
        }
        shown: dict[str, list[tuple[Any, ...]]] = {name: [] for name in NAMES}
        if examples:
            by_key = Window.partitionBy("name").orderBy("key")
            picked = kept.filter(F.col("key").isNotNull()).withColumn("i", F.row_number().over(by_key))
            for row in picked.filter(F.col("i") <= examples).select("name", "key").collect():
                shown[row["name"]].append(tuple(_flat(json.loads(row["key"]).values())))
    finally:
        summary.unpersist()
    counts = {name: int(totals[name]["n"]) if name in totals else 0 for name in NAMES}
    figures = totals.get("#")
    stats = {name: int(figures[name] or 0) if figures else 0 for name in FIGURES}

    delivery: list[tuple[Any, ...]] = []
    missing = stats.pop("missing")
    if missing:
        delivery.append(("missing", missing))
    if bool(meta.get("idempotence", False)) and counts["duplicate"]:
        delivery.append(("duplicated", counts["duplicate"]))
    counts["validate_delivery"] = len(delivery)
    shown["validate_delivery"] = delivery
    return SparkCheckResult(counts, shown, {"ops": ops, **stats})


@dataclass(frozen=True)
class _Rules:
    """What the run's meta changes in the definitions (:mod:`.analysis`, :func:`.check`)."""

    final_reader: str | None
    final_complete: bool
    """The final reader read every partition to its end: what it missed is lost, whatever else read."""
    final_start: int | None
    """Index of the final reader's first ok op: writes completed after it are the restart phase's."""
    acks_all: bool
    """Without acks=all only values *read* at one offset are compared (``inconsistent_offsets``)."""
    partitions: int


def _rows(h: DataFrame) -> DataFrame:
    """Send ops (kind ``S``: invokes and completions) and records read by ok polls (kind ``R``, with
    their position in the poll), in one narrow schema: nothing else of the history is read. Only an
    acknowledged send's topic, partition and offset are kept: no class looks at another's."""
    acked = F.col("type") == "ok"
    sends = h.filter(F.col("f") == "send").select(
        "value", F.lit("S").alias("kind"), "process", "index", F.lit(0).alias("pos"), "type",
        *(F.when(acked, F.col(name)).alias(name) for name in ("topic", "partition", "offset")),
    )  # fmt: skip
    polls = h.filter((F.col("f") == "poll") & (F.col("type") == "ok"))
    reads = polls.select("process", "index", F.posexplode("records").alias("pos", "r")).select(
        F.col("r.value").alias("value"), F.lit("R").alias("kind"), "process", "index", "pos",
        F.lit(None).cast("string").alias("type"), F.col("r.topic").alias("topic"),
        F.col("r.partition").alias("partition"), F.col("r.offset").alias("offset"),
    )  # fmt: skip
    return sends.unionByName(reads)


def _by_value(rows: DataFrame, rules: _Rules) -> DataFrame:
    """Shuffle 1: the rows of each value together, sorted by (kind, process, index, pos).

    Pairing (``History.pairs``): a send's invoke takes the next op of its (process, value) when that
    is a completion; otherwise it stays open, superseded by the next invoke or never completed.
    Completions then leave (their fields are on their invoke). The value's write
    (``Analysis.writes``: the first acknowledged pair in completion order, else the last pair) is
    marked ``winner``; a value never sent is represented by its first read. That one row per value
    (``rep``) carries the value's flags; every other row keeps only what shuffle 2 needs.
    """
    by_op = Window.partitionBy("value", "kind", "process").orderBy("index", "pos")
    following = ("type", "index", "topic", "partition", "offset")
    nxt = {name: F.col(f"next_{name}") for name in following}
    is_send = F.col("kind") == "S"
    paired = is_send & nxt["type"].isNotNull() & (nxt["type"] != "invoke")
    paired_rows = (
        rows.repartition(rules.partitions, "value")
        .select("*", *(F.lead(name).over(by_op).alias(f"next_{name}") for name in following))
        .select(
            "value", "kind", "process", "index", "pos", "type",
            F.when(paired, nxt["type"]).when(is_send, F.lit("open")).alias("status"),
            F.when(paired, nxt["index"]).alias("complete_index"),
            F.when(paired, nxt["index"]).when(nxt["type"] == "invoke", nxt["index"])
            .otherwise(F.lit(NEVER)).alias("done_order"),
            F.when(paired, nxt["topic"]).otherwise(F.col("topic")).alias("topic"),
            F.when(paired, nxt["partition"]).otherwise(F.col("partition")).alias("partition"),
            F.when(is_send, F.when(paired & (nxt["type"] == "ok"), nxt["offset"]))
            .otherwise(F.col("offset")).alias("offset"),
        )
        .filter(~is_send | (F.col("type") == "invoke"))
    )  # fmt: skip
    value = Window.partitionBy("value")
    ok = is_send & (F.col("status") == "ok")
    placed = F.col("topic").isNotNull() & F.col("partition").isNotNull() & F.col("offset").isNotNull()
    positional = (ok & placed) | ~is_send
    position = F.when(positional, F.struct("topic", "partition", "offset"))
    is_read = F.col("kind") == "R"
    paired_rows = paired_rows.select(
        "*",
        F.min(F.when(ok, F.col("complete_index"))).over(value).alias("first_ok"),
        F.max(F.when(is_send, F.struct("done_order", "index"))).over(value).alias("last_pair"),
    )
    first_ok, last_pair = F.col("first_ok"), F.col("last_pair")
    winner = is_send & F.coalesce(
        F.when(first_ok.isNotNull(), F.col("complete_index") == first_ok).otherwise(
            F.struct("done_order", "index") == last_pair
        ),
        F.lit(False),
    )
    first_row = F.min(F.struct("kind", "process", "index", "pos")).over(value)
    final_read = is_read & (F.col("process") == rules.final_reader) if rules.final_reader else F.lit(False)
    flagged = paired_rows.select(
        "*",
        winner.alias("winner"),
        (F.count(F.when(is_send, 1)).over(value) == 0).alias("unsent"),
        F.count(F.when(is_read, 1)).over(value).alias("read_n"),
        F.count(F.when(final_read, 1)).over(value).alias("final_n"),
        F.min(position).over(value).alias("pos_min"),
        F.max(position).over(value).alias("pos_max"),
        positional.alias("positional"),
        (F.struct("kind", "process", "index", "pos") == first_row).alias("first"),
    )
    rep = F.col("winner") | (F.col("unsent") & F.col("first"))
    acked = F.col("winner") & (F.col("status") == "ok")
    after_final = (
        F.col("complete_index").isNotNull() & (F.col("complete_index") > rules.final_start)
        if rules.final_start is not None
        else F.lit(False)
    )
    judged = acked & F.col("topic").isNotNull() & F.col("partition").isNotNull() & ~after_final
    unread = F.col("read_n") == 0
    return flagged.filter(F.col("positional") | rep).select(
        "value", "kind", "process", "index", "pos", "topic", "partition", "offset", "positional",
        (F.col("winner") & F.col("positional")).alias("ordered_send"),
        rep.alias("rep"),
        (rep & ~F.col("unsent")).alias("written"),
        (rep & acked).alias("acked"),
        (rep & ~unread).alias("read_any"),
        (rep & acked & ~after_final & unread).alias("missing"),
        # lost or unseen: decided by the final read, or in shuffle 2 by the highest offset read
        (rep & judged & (F.col("final_n") == 0 if rules.final_complete else unread)).alias("unread"),
        (rep & (F.col("pos_min") != F.col("pos_max"))).alias("duplicate"),
        (rep & F.col("winner") & (F.col("status") == "fail") & ~unread).alias("aborted_read"),
    )  # fmt: skip


def _by_partition(rows: DataFrame, rules: _Rules) -> DataFrame:
    """Shuffle 2: the rows of each (topic, partition) together; a value's row with no position goes
    to a group of its own (``t2`` is then the value, ``p2`` -1: never a real partition).

    Sorted by offset: the highest offset read, the values at each offset (two distinct values when
    their least and greatest differ), and the rank of each offset among the known ones (a null
    offset ranks first, shifting every rank of its group alike). Then sorted by (process, seq,
    index, pos): each read's previous read by the same consumer of the same partition (``seq`` R)
    and each acknowledged send's previous send by the same producer to it (``seq`` S, in invoke
    order as ``queue.nonmonotonic_sends`` sorts them).
    """
    here = F.col("topic").isNotNull() & F.col("partition").isNotNull()
    placed = rows.select(
        "*",
        F.when(here, F.col("topic")).otherwise(F.col("value")).alias("t2"),
        F.when(here, F.col("partition")).otherwise(F.lit(-1)).alias("p2"),
        F.when(F.col("positional"), F.col("offset")).alias("o2"),
        F.when(F.col("kind") == "R", "R").when(F.col("ordered_send"), "S").otherwise("-").alias("seq"),
    ).repartition(rules.partitions, "t2", "p2")
    at = Window.partitionBy("t2", "p2", "o2")
    compared = F.col("positional") & ((F.col("kind") == "R") | F.lit(rules.acks_all))
    seen = F.when(compared, F.col("value"))
    tp = Window.partitionBy("t2", "p2")
    with_rank = placed.select(
        "*",
        (F.row_number().over(at.orderBy("kind", "process", "index", "pos")) == 1).alias("first_at"),
        (F.min(seen).over(at) != F.max(seen).over(at)).alias("two_values"),
        F.max(F.when(F.col("kind") == "R", F.col("offset"))).over(tp).alias("high"),
        F.dense_rank().over(tp.orderBy("o2")).alias("rank"),
    )
    order = Window.partitionBy("t2", "p2", "process", "seq").orderBy("index", "pos")
    return with_rank.select(
        "*",
        F.lag("offset").over(order).alias("prev"),
        F.lag("index").over(order).alias("prev_index"),
        F.lag("rank").over(order).alias("prev_rank"),
    )


def _entry(name: str, condition: Column, key: Column, *, poll: bool = False) -> Column:
    """One anomaly of class ``name`` when ``condition``: its key as JSON; a poll anomaly also has
    the consumer and its two reads' op indices (for the assign epochs, :func:`_outside_assigns`)."""
    return F.when(
        condition,
        F.struct(
            F.lit(name).alias("name"),
            F.to_json(key).alias("key"),
            (F.col("process") if poll else F.lit(None).cast("string")).alias("process"),
            (F.col("prev_index") if poll else F.lit(None).cast("long")).alias("lo"),
            (F.col("index") if poll else F.lit(None).cast("long")).alias("hi"),
            *(F.lit(0).alias(f) for f in FIGURES),
        ),
    )


def _summary(rows: DataFrame, rules: _Rules) -> DataFrame:
    """Each row's anomalies (``queue.py``'s conditions, row by row) and its figures, aggregated by
    (class, key): one row per anomaly found (``n`` times) and one ``#`` row of summed figures."""
    read, send = F.col("seq") == "R", F.col("seq") == "S"
    offset, prev = F.col("offset"), F.col("prev")
    follows = prev.isNotNull()
    by_value = F.struct("value")
    ops = F.array_sort(F.array_distinct(F.array("prev_index", "index")))
    poll_key = F.struct("partition", prev.alias("from"), offset.alias("to"), ops.alias("ops"))
    later_read = offset.isNotNull() & (F.coalesce(F.col("high"), F.lit(-1)) > offset)
    lost = F.col("unread") & (F.lit(True) if rules.final_complete else later_read)
    skipped_known = (offset > prev + 1) & (F.col("rank") - F.col("prev_rank") > 1)
    figures = F.struct(
        F.lit("#").alias("name"), F.lit(None).cast("string").alias("key"),
        F.lit(None).cast("string").alias("process"), F.lit(None).cast("long").alias("lo"),
        F.lit(None).cast("long").alias("hi"),
        F.col("written").cast("int").alias("writes"),
        F.col("acked").cast("int").alias("acked"),
        (F.col("kind") == "R").cast("int").alias("reads"),
        F.col("read_any").cast("int").alias("distinct_read"),
        F.col("missing").cast("int").alias("missing"),
    )  # fmt: skip
    at_offset = F.col("first_at") & F.col("o2").isNotNull() & F.col("two_values")
    found = F.array_compact(
        F.array(
            figures,
            _entry("lost_write", lost, by_value),
            _entry("unseen", F.col("unread") & ~lost, by_value),
            _entry("duplicate", F.col("duplicate"), by_value),
            _entry("aborted_read", F.col("aborted_read"), by_value),
            _entry("inconsistent_offsets", at_offset, F.struct("partition", "offset")),
            _entry("nonmonotonic_poll", read & follows & (offset <= prev), poll_key, poll=True),
            _entry("poll_skip", read & follows & skipped_known, poll_key, poll=True),
            _entry(
                "nonmonotonic_send",
                send & follows & (offset <= prev),
                F.struct("partition", "prev", "offset"),
            ),
        )
    )
    return (
        rows.select(F.inline(found))
        .groupBy("name", "key", "process", "lo", "hi")
        .agg(F.count(F.lit(1)).alias("n"), *(F.sum(f).alias(f) for f in FIGURES))
    )


def _outside_assigns(summary: DataFrame, h: DataFrame) -> DataFrame:
    """The summary without the poll anomalies whose two reads have an ``assign`` of their consumer
    between them: after an assign Python's walk (``queue.poll_order``) forgets the previous reads."""
    assigns = h.filter((F.col("f") == "assign") & (F.col("type") == "ok")).select(
        F.col("process").alias("a_process"), F.col("index").alias("a_index")
    )
    polls = summary.filter(F.col("name").isin(*POLL_CLASSES))
    between = (
        (F.col("process") == F.col("a_process"))
        & (F.col("a_index") > F.col("lo"))
        & (F.col("a_index") < F.col("hi"))
    )
    return summary.filter(~F.col("name").isin(*POLL_CLASSES)).unionByName(
        polls.join(assigns, between, "left_anti")
    )


def _flat(row: Any) -> list[Any]:
    out: list[Any] = []
    for item in row:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    return out
