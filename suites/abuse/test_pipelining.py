"""Frames pipelined behind a waiting request must stay with the client, not in the broker's memory.

Kafka reads one request of a connection at a time: ``selector.mute`` once a request is read,
unmuted when its response is sent (``core/src/main/scala/kafka/network/SocketServer.scala``,
``processCompletedReceives`` / ``processCompletedSends``; the mute states of
``clients/src/main/java/org/apache/kafka/common/network/KafkaChannel.java``), and at most one
receive per channel per poll (``clients/src/main/java/org/apache/kafka/common/network/Selector.java``).
What a client pipelines behind a long-poll Fetch therefore waits in the kernel's socket buffers,
where TCP makes the client wait. The reference once read 1.9 GiB in 3 s behind such a Fetch
(issue 17, item 4).
"""

from __future__ import annotations

import uuid

from fixtures.wire.ops import fetch_request
from reference_impl.protocol.codec import encode_request
from reference_impl.protocol.record_set import build_batch

from .conftest import (
    HANG_S,
    AbusedTarget,
    answered_within,
    assert_local_bound,
    flooding,
    frame_of,
    report,
)

RSS_GROWTH_BOUND_MIB = 64
PIPELINED_BYTES = 400 << 20
PIPELINE_BUDGET_S = 8.0
LONG_POLL_MS = 10_000


def long_poll_fetch(abused: AbusedTarget, topic: str) -> bytes:
    """A Fetch of an empty partition that waits ``LONG_POLL_MS`` for one byte (by topic name: v≤12)."""
    body = fetch_request(
        abused.wire(),
        abused.caps,
        topic,
        0,
        version=abused.caps.best("fetch", hi=12),
        max_wait_ms=LONG_POLL_MS,
    )
    return encode_request(body, 1, "kh-abuse")


def large_produce(abused: AbusedTarget, topic: str) -> bytes:
    """A 1 MiB Produce frame (acks=1) to a topic that does not exist: cheap for a broker to refuse,
    expensive to hold."""
    batch = build_batch([(None, b"p" * (1 << 20))], base_timestamp=0)
    return frame_of(
        "produce",
        abused.caps.best("produce", lo=3, hi=12),
        acks=1,
        timeout=1000,
        transactional_id=None,
        topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    )


def test_frames_pipelined_behind_a_long_poll_fetch_are_not_buffered(abused: AbusedTarget) -> None:
    """Bound: the target's RSS grows by at most 64 MiB while a client that sent a Fetch waiting 10 s
    pipelines up to 400 MiB of Produce frames behind it without reading (for 8 s at most); a fresh
    client is answered meanwhile."""
    topic = abused.topic(f"kh-abuse-poll-{uuid.uuid4().hex[:8]}")
    pipelined = large_produce(abused, f"kh-abuse-absent-{uuid.uuid4().hex[:8]}")
    with flooding(abused, pipelined, count=1, total_bytes=PIPELINED_BYTES, budget_s=PIPELINE_BUDGET_S) as (
        watch,
        flood,
    ):
        flood.sockets[0].setblocking(True)
        flood.sockets[0].sendall(long_poll_fetch(abused, topic))
        flood.sockets[0].setblocking(False)
        flood.start().wait()
        answered_s = answered_within(abused)
    report(
        "pipelining-behind-long-poll",
        target=abused.name,
        pipelined_mib=flood.sent / (1 << 20),
        rss_growth_mib=watch.rss_growth_mib,
        fds_peak=watch.fds_peak,
        fresh_client_answered_s=answered_s,
    )
    assert answered_s is not None, f"a fresh client was not answered within {HANG_S} s"
    assert_local_bound(abused, watch.rss_growth_mib, RSS_GROWTH_BOUND_MIB, "RSS growth (MiB)")
