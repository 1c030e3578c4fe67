"""Idempotent produce through each client."""

from __future__ import annotations

from collections.abc import Callable

from fixtures.clients import Client
from fixtures.wire import Capabilities, Router

from .scenario import by_partition, first_difference, records, wire_batches

FEATURE = "Idempotent produce"


def test_idempotent_produce(
    kafka_client: Client, topic_factory: Callable[..., str], router: Router, caps: Capabilities
) -> None:
    """KIP-98 idempotence: an idempotent producer's records arrive exactly once and in order, in batches that
    carry its producer id and sequence numbers that start at 0 and follow the offsets without a gap."""
    kafka_client.require("idempotent", "consume")
    topic = topic_factory(partitions=1)
    sent = records(f"{kafka_client.name}-idem", 1, 120)
    kafka_client.produce(topic, sent, idempotent=True)
    got = kafka_client.consume(topic, [0], len(sent))
    assert by_partition(got).get(0, []) == by_partition(sent)[0], first_difference(
        by_partition(sent)[0], by_partition(got).get(0, [])
    )
    headers = wire_batches(router, caps, topic, 0)
    assert headers, "no batches read back"
    producer_ids = {h.producer_id for h in headers}
    assert len(producer_ids) == 1 and min(producer_ids) >= 0, f"producer ids in the batches: {producer_ids}"
    sequences = [(h.base_offset, h.base_sequence) for h in headers]
    assert all(offset == seq for offset, seq in sequences), (
        f"(base offset, base sequence) per batch: {sequences}"
    )
