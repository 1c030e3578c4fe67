"""Offset lookups (ListOffsets) through each client."""

from __future__ import annotations

import time

from fixtures.clients import Client
from fixtures.wire import Capabilities, Router, ops
from reference_impl.protocol.record_set import build_batch

FEATURE = "ListOffsets"


def test_list_offsets(kafka_client: Client, topic: str, router: Router, caps: Capabilities) -> None:
    """Protocol guide (ListOffsets) and KIP-79: earliest is the log start (0), latest the log end, counted in
    records even when one batch holds several; a timestamp finds the first record at or after it, and one
    past every record finds -1."""
    kafka_client.require("list_offsets")
    # an hour ago: old enough to be in the past, young enough that retention (7 days) keeps it; records
    # stamped years ago are expired by a broker's retention check (Kafka's too) and vanish mid-test
    base = int(time.time() * 1000) - 3_600_000
    stamped = [
        [(None, b"a"), (None, b"b")],  # offsets 0-1 at BASE+1000
        [(None, b"c")],  # offset 2 at BASE+2000
        [(None, b"d"), (None, b"e")],  # offsets 3-4 at BASE+3000: the log ends inside a batch
    ]
    for i, pairs in enumerate(stamped):
        batch = build_batch(pairs, base_timestamp=base + 1000 * (i + 1))
        ops.check(ops.produce_batch(router, caps, topic, batch).error_code, "setup: Produce")
    seen = {
        "earliest": kafka_client.list_offset(topic, 0, "earliest"),
        "latest": kafka_client.list_offset(topic, 0, "latest"),
        "at the second batch's time": kafka_client.list_offset(topic, 0, base + 2000),
        "between two batches": kafka_client.list_offset(topic, 0, base + 2500),
        "past every record": kafka_client.list_offset(topic, 0, base + 9000),
    }
    want = {
        "earliest": 0,
        "latest": 5,
        "at the second batch's time": 2,
        "between two batches": 3,
        "past every record": 5 if kafka_client.past_end_is_latest else -1,
    }
    assert seen == want, f"{kafka_client.name} offsets {seen}, expected {want}"
