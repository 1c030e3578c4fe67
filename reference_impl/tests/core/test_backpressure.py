"""What a client may make the sans-IO broker hold: muted connections, queued request bytes, fair grants.

Kafka mutes a channel once a request is read and unmutes it when the response
is sent (``core/src/main/scala/kafka/network/SocketServer.scala``:
``selector.mute`` on each completed receive, ``ChannelMuteEvent.RESPONSE_SENT``
then ``tryUnmuteChannel``; the states in
``clients/src/main/java/org/apache/kafka/common/network/KafkaChannel.java``),
and reads requests into a pool of ``queued.max.request.bytes``
(``clients/src/main/java/org/apache/kafka/common/memory/SimpleMemoryPool.java``,
not strict: granted while any memory is left). Every test here fails with
``defects.UNBOUNDED_BUFFERING`` switched on (issue 17, item 4).
"""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl import defects
from reference_impl.core.read_gate import UNPOOLED_FRAME_BYTES
from reference_impl.protocol.codec import encode_request
from reference_impl.protocol.record_set import build_batch

from .harness import START_MS, BrokerHarness, request
from .test_data_path import create, fetch_request, produce


def long_poll(topic: str, max_wait_ms: int = 10_000) -> Any:
    """A Fetch that waits up to ``max_wait_ms`` for one byte."""
    return fetch_request(topic, 0, 0, max_wait=max_wait_ms, min_bytes=1)


API_VERSIONS = request(18, 3, client_software_name="kh", client_software_version="1")


def api_versions_frame() -> bytes:
    """A whole ApiVersions request frame, size prefix included."""
    return encode_request(API_VERSIONS, 7, "test-client")


def large_produce_frame(topic: str = "t") -> bytes:
    """A whole Produce frame (acks=1, answered at once) larger than UNPOOLED_FRAME_BYTES."""
    batch = build_batch([(None, b"v" * (UNPOOLED_FRAME_BYTES + 1024))], base_timestamp=START_MS)
    body = request(
        0,
        9,
        acks=1,
        timeout=1000,
        transactional_id=None,
        topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    )
    return encode_request(body, 9, "test-client")


def test_a_connection_whose_request_waits_is_not_read_further() -> None:
    """A long-poll Fetch in flight mutes its connection: no ResumeReading, and the next frame's
    reservation is refused, until the Fetch is answered; then the connection is read again."""
    h = BrokerHarness()
    create(h, "t")
    cid = h.connect()
    h.send(cid, long_poll("t"))
    assert cid not in h.resumed
    assert not h.broker.reserve_frame(cid, 100), "a muted connection's next frame must not be read"
    produce(h, "t", 0, build_batch([(None, b"wake")], base_timestamp=START_MS))
    assert len(h.responses[cid]) == 1, "the produce completes the long poll"
    assert h.resumed.count(cid) == 1
    assert h.broker.reserve_frame(cid, 100)


def test_a_request_answered_at_once_unmutes_its_connection_in_the_same_step() -> None:
    h = BrokerHarness()
    cid = h.connect()
    h.send(cid, API_VERSIONS)
    assert h.resumed == [cid]
    assert h.broker.reserve_frame(cid, 50)


def test_frames_delivered_to_a_muted_connection_wait_and_count_as_queued_requests() -> None:
    """A shell without backpressure (the simulator) may deliver frames behind a waiting request: they
    wait in arrival order, count against queued.max.requests, and other connections' reads are
    refused while that bound is spent."""
    h = BrokerHarness("queued.max.requests=1")
    create(h, "t")
    cid, other = h.connect(), h.connect()
    h.resumed.clear()
    h.send(cid, long_poll("t"))
    h.send_frame(cid, api_versions_frame())
    assert h.broker.read_gate.queued_requests == 1
    assert not h.broker.reserve_frame(other, 10)
    h.advance(10_000)  # the long poll expires: its answer, then the queued ApiVersions'
    assert len(h.responses[cid]) == 2
    assert h.broker.read_gate.queued_requests == 0
    assert h.resumed == [cid, other], "the refused connection is granted as soon as the queue drains"


def test_queued_request_bytes_are_bounded() -> None:
    """Reservations of large frames are granted while any of queued.max.request.bytes is left
    (Kafka's non-strict pool), so the pool never holds more than its size plus one frame; the next
    is refused until bytes come back."""
    frame = large_produce_frame()
    size = len(frame) - 4
    h = BrokerHarness(f"queued.max.request.bytes={size + 1}")
    create(h, "t")
    a, b, c = h.connect(), h.connect(), h.connect()
    assert h.broker.reserve_frame(a, size)
    assert h.broker.reserve_frame(b, size)
    assert not h.broker.reserve_frame(c, size)
    gate = h.broker.read_gate
    assert gate.queued_bytes == 2 * size <= gate.max_bytes + size
    h.resumed.clear()
    h.send_frame(a, frame)  # handled at once: its bytes go back, and c is granted
    assert len(h.responses[a]) == 1
    assert gate.queued_bytes == 2 * size
    assert h.resumed == [a, c]


def test_small_frames_are_read_while_large_ones_wait() -> None:
    """Clients that declare large frames and hold the pool must not stop a heartbeat or a metadata
    request: a frame of at most UNPOOLED_FRAME_BYTES is granted whatever the pool holds."""
    h = BrokerHarness("queued.max.request.bytes=1000")
    hog, large, small = h.connect(), h.connect(), h.connect()
    assert h.broker.reserve_frame(hog, 10 << 20)
    assert not h.broker.reserve_frame(large, UNPOOLED_FRAME_BYTES + 1)
    assert h.broker.reserve_frame(small, UNPOOLED_FRAME_BYTES)


def test_refused_connections_are_granted_oldest_first() -> None:
    """Fairness: connections refused memory are granted in the order they asked, and a connection
    asking while others wait queues behind them."""
    frame = large_produce_frame()
    size = len(frame) - 4
    h = BrokerHarness(f"queued.max.request.bytes={size}")
    create(h, "t")
    holder, first, second, third = h.connect(), h.connect(), h.connect(), h.connect()
    assert h.broker.reserve_frame(holder, size)
    for cid in (first, second, third):
        assert not h.broker.reserve_frame(cid, size)
    h.resumed.clear()
    h.send_frame(holder, frame)
    assert h.resumed == [holder, first]
    late = h.connect()
    h.send_frame(first, frame)
    assert not h.broker.reserve_frame(late, size), "third waits ahead of it"
    assert h.resumed[-2:] == [first, second]
    h.send_frame(second, frame)
    h.send_frame(third, frame)
    assert h.resumed[-4:] == [second, third, third, late]


def test_a_closed_connection_gives_its_bytes_back() -> None:
    h = BrokerHarness("queued.max.request.bytes=100000")
    a, b = h.connect(), h.connect()
    assert h.broker.reserve_frame(a, 200_000)
    assert not h.broker.reserve_frame(b, 100_000)
    h.disconnect(a)
    assert h.broker.read_gate.queued_bytes == 100_000
    assert h.resumed == [b]


@pytest.mark.parametrize("check", [test_a_connection_whose_request_waits_is_not_read_further])
def test_the_seeded_defect_reads_behind_a_waiting_request(check: Any) -> None:
    """With ``defects.UNBOUNDED_BUFFERING`` the broker reads everything again, so the check fails."""
    with defects.seeded(defects.UNBOUNDED_BUFFERING), pytest.raises(AssertionError):
        check()
