"""Throughput, latency percentiles, a per-second timeline and a latency histogram from the delivery reports.

Aggregations only: what reaches the driver is one row of totals, one row per
second of the run and one row per latency bucket.
"""

from __future__ import annotations

import math

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..metrics import DeliveryMetrics

BUCKETS_PER_DECADE = 10


def delivery_metrics(acks: DataFrame) -> DeliveryMetrics:
    ok = acks.where(F.col("error").isNull())
    latency_ms = (F.col("ack_us") - F.col("send_us")) / 1000.0
    record_bytes = F.col("value_bytes") + F.coalesce(F.length("key"), F.lit(0))
    totals = acks.agg(
        F.sum(F.when(F.col("error").isNull(), 1).otherwise(0)).alias("acked"),
        F.sum(F.when(F.col("error").isNotNull(), 1).otherwise(0)).alias("failed"),
        F.sum(F.when(F.col("error").isNull(), record_bytes)).alias("bytes"),
        F.min("send_us").alias("first_send_us"),
        F.max(F.when(F.col("error").isNull(), F.col("ack_us"))).alias("last_ack_us"),
        F.percentile_approx(F.when(F.col("error").isNull(), latency_ms), [0.5, 0.99], 10_000).alias("pct"),
        F.max(F.when(F.col("error").isNull(), latency_ms)).alias("max_ms"),
    ).first()
    assert totals is not None
    acked = int(totals["acked"] or 0)
    if not acked or totals["first_send_us"] is None or totals["last_ack_us"] is None:
        return DeliveryMetrics(acked, int(totals["failed"] or 0), 0, 0.0, None, None, None)
    first_us = int(totals["first_send_us"])
    span_s = max(0.0, (int(totals["last_ack_us"]) - first_us) / 1e6)
    pct = totals["pct"]
    second = F.floor((F.col("ack_us") - F.lit(first_us)) / 1_000_000)
    timeline = [
        (float(row["second"]), int(row["records"]), int(row["bytes"]))
        for row in ok.groupBy(second.alias("second"))
        .agg(F.count(F.lit(1)).alias("records"), F.sum(record_bytes).alias("bytes"))
        .orderBy("second")
        .collect()
    ]
    bucket = F.floor(F.log10(F.greatest(latency_ms, F.lit(0.001))) * BUCKETS_PER_DECADE)
    histogram = []
    for row in ok.groupBy(bucket.alias("b")).agg(F.count(F.lit(1)).alias("n")).orderBy("b").collect():
        low = math.pow(10, int(row["b"]) / BUCKETS_PER_DECADE)
        histogram.append((low, low * math.pow(10, 1 / BUCKETS_PER_DECADE), int(row["n"])))
    return DeliveryMetrics(
        acked=acked,
        failed=int(totals["failed"] or 0),
        acked_bytes=int(totals["bytes"] or 0),
        span_s=span_s,
        p50_ms=float(pct[0]) if pct else None,
        p99_ms=float(pct[1]) if pct else None,
        max_ms=float(totals["max_ms"]) if totals["max_ms"] is not None else None,
        timeline=timeline,
        latency_histogram=histogram,
    )
