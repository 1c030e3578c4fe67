"""Produce and consume through each client, per compression codec."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.clients import CODECS, Client
from fixtures.wire import Capabilities, Router

from .scenario import CODEC_IDS, by_partition, first_difference, records, wire_batches

FEATURE = "Produce and consume"
PARTITIONS, PER_PARTITION = 3, 40


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(
    kafka_client: Client, codec: str, topic_factory: Callable[..., str], router: Router, caps: Capabilities
) -> None:
    """Protocol guide (Record Batch) and KIP-98 message format: what a client produces with a codec comes back
    byte for byte, in order per partition, at offsets 0..n-1, stored in batches flagged with that codec."""
    kafka_client.require("produce", "consume", codec)
    topic = topic_factory(partitions=PARTITIONS)
    sent = records(f"{kafka_client.name}-{codec}", PARTITIONS, PER_PARTITION)
    kafka_client.produce(topic, sent, codec=codec)
    got = kafka_client.consume(topic, list(range(PARTITIONS)), len(sent))
    want, have = by_partition(sent), by_partition(got)
    for p in range(PARTITIONS):
        assert have.get(p, []) == want[p], f"partition {p}: {first_difference(want[p], have.get(p, []))}"
        offsets = [g.offset for g in got if g.partition == p]
        assert offsets == list(range(PER_PARTITION)), f"partition {p}: offsets {offsets[:5]}... not 0..n-1"
    codecs = {h.attributes & 0x7 for h in wire_batches(router, caps, topic, 0)}
    wanted = {CODEC_IDS[codec]}
    if codec in kafka_client.may_send_uncompressed and 0 in codecs and codecs <= {0, CODEC_IDS[codec]}:
        from reports import allure

        allure.tag("client sent uncompressed")
        allure.attach_text("why uncompressed", kafka_client.may_send_uncompressed[codec])
        wanted = codecs
    assert codecs == wanted, f"batches of partition 0 carry codec ids {codecs}, expected {wanted}"
