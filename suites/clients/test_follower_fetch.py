"""Follower fetching (KIP-392) through a real consumer: confluent-kafka (librdkafka) with
``client.rack`` reads every record of a partition from the in-sync follower in its rack.

The cluster is :mod:`suites.rack_cluster`'s (on a reference run one launched with 3 brokers in racks
a, b, c and ``RackAwareReplicaSelector``; another target as it is), whatever the run's client.
Evidence that the follower served the reads: librdkafka's statistics name, per partition, the
``leader`` and the ``broker`` it currently fetches from (``STATISTICS.md``); after the leader's
preferred_read_replica answer the two differ and ``broker`` is the follower.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.targets.session import TargetSession
from fixtures.wire.security import default_security
from suites.rack_cluster import RECORDS, RackCluster, rack_cluster

FEATURE = "Fetch from the closest replica (KIP-392)"
TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def racks(target_session: TargetSession) -> Iterator[RackCluster]:
    yield from rack_cluster(target_session)


def _fetching_from(stats: dict[str, Any], topic: str) -> tuple[int, int] | None:
    """(leader, broker fetched from) of ``topic``-0 in one statistics report, if there."""
    part = stats.get("topics", {}).get(topic, {}).get("partitions", {}).get("0")
    if not isinstance(part, dict):
        return None
    return int(part.get("leader", -1)), int(part.get("broker", -1))


def test_confluent_consumer_with_client_rack_reads_through_the_follower(racks: RackCluster) -> None:
    """KIP-392: a consumer in a follower's rack is sent there by the leader (preferred_read_replica)
    and reads every record from it."""
    confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    topic, leader, follower = racks.topic_with_records()
    seen_from: set[tuple[int, int]] = set()

    def on_stats(text: str) -> None:
        pair = _fetching_from(json.loads(text), topic)
        if pair is not None:
            seen_from.add(pair)

    consumer = confluent_kafka.Consumer(
        {
            **(security.confluent() if (security := default_security()) is not None else {}),
            "bootstrap.servers": racks.bootstrap,
            "group.id": f"kip392-{int(time.time() * 1000)}",
            "client.rack": racks.rack(follower),
            "enable.auto.commit": False,
            "statistics.interval.ms": 200,
            "stats_cb": on_stats,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline and (len(values) < RECORDS or (leader, follower) not in seen_from):
            for message in consumer.consume(num_messages=100, timeout=0.2):
                if message.error() is None:
                    values.append(message.value())
    finally:
        consumer.close()
    assert values == [b"v%d" % i for i in range(RECORDS)], f"read {values}"
    assert (leader, follower) in seen_from, (
        f"librdkafka never fetched {topic}-0 from follower {follower} (leader {leader}); "
        f"(leader, broker) seen: {sorted(seen_from)}"
    )
