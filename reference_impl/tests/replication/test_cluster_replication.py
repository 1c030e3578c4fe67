"""Three sans-IO brokers replicating through real Fetch frames: acks=all, ISR shrink, min.insync."""

from __future__ import annotations

from typing import Any

from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch, records_of
from reference_impl.tests.core.cluster_harness import ClusterHarness
from reference_impl.tests.core.harness import START_MS, request


def create(c: ClusterHarness, name: str, min_isr: int = 2) -> int:
    r = c.call(
        1,
        request(
            19,
            7,
            topics=[
                {
                    "name": name,
                    "num_partitions": 1,
                    "replication_factor": 3,
                    "assignments": [],
                    "configs": [{"name": "min.insync.replicas", "value": str(min_isr)}],
                }
            ],
            timeout=1000,
            validate_only=False,
        ),
    )
    assert r.topics[0].error_code == ErrorCode.none
    c.sync()
    return c.brokers[1].image.topics[name].partitions[0].leader


def produce(c: ClusterHarness, node: int, topic: str, value: bytes, acks: int = -1) -> Any:
    batch = build_batch([(None, value)], base_timestamp=START_MS)
    r = c.call(
        node,
        request(
            0,
            9,
            acks=acks,
            timeout=5000,
            transactional_id=None,
            topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        ),
    )
    return r.responses[0].partition_responses[0]


def stored(c: ClusterHarness, node: int, topic: str) -> list[bytes | None]:
    log = c.brokers[node].partition(topic, 0).log  # type: ignore[union-attr]
    data = b"".join(
        chunk for chunk in log.read(log.log_start_offset, 1 << 30).chunks if isinstance(chunk, bytes)
    )
    return [r.value for r in records_of(data)]


def test_acks_all_completes_when_every_isr_member_has_the_batch() -> None:
    """acks=all waits in the purgatory until the HW passes the batch (seed 002), then all three
    replicas hold identical logs."""
    c = ClusterHarness(3)
    leader = create(c, "t")
    answer = produce(c, leader, "t", b"one")
    assert answer.error_code == ErrorCode.none and answer.base_offset == 0
    c.advance(100)
    assert [stored(c, n, "t") for n in (1, 2, 3)] == [[b"one"]] * 3
    assert c.brokers[leader].partition("t", 0).high_watermark == 1  # type: ignore[union-attr]


def test_a_stopped_follower_leaves_the_isr_and_min_isr_guards_acks_all() -> None:
    """replica.lag.time.max.ms: a stopped follower is removed from the ISR and acks=all goes on
    with the rest; with two of three stopped, acks=all is NOT_ENOUGH_REPLICAS (min.insync=2)."""
    c = ClusterHarness(3, "replica.lag.time.max.ms=1000")
    leader = create(c, "t")
    followers = [n for n in (1, 2, 3) if n != leader]
    c.stop(followers[0])
    answer = produce(c, leader, "t", b"during")
    assert answer.error_code == ErrorCode.none
    isr = c.brokers[1].image.topics["t"].partitions[0].isr
    assert followers[0] not in isr and leader in isr
    c.stop(followers[1])
    c.advance(2000)
    assert produce(c, leader, "t", b"refused").error_code == ErrorCode.not_enough_replicas
    c.resume(followers[0])
    c.resume(followers[1])
    c.advance(3000)
    assert set(c.brokers[1].image.topics["t"].partitions[0].isr) == {1, 2, 3}
    assert stored(c, followers[0], "t") == stored(c, leader, "t") == [b"during"]


def test_pipelined_produces_append_at_once_and_are_answered_in_order() -> None:
    """Produce requests behind a Produce waiting for its replicas are appended at once (the broker
    does not wait one replication round per request); every answer still goes out in request order,
    and a request of another API on the connection waits until the Produces before it are answered."""
    from reference_impl.core.boundary import ConnectionOpened, FrameReceived
    from reference_impl.protocol.codec import decode_response

    c = ClusterHarness(3)
    leader = create(c, "t")
    followers = [n for n in (1, 2, 3) if n != leader]
    for follower in followers:
        c.stop(follower)
    broker, cid = c.brokers[leader], 99_999

    def frame(correlation_id: int, body: Any) -> None:
        c._deliver(
            leader,
            broker.step(FrameReceived(connection_id=cid, frame=c._frame(body, correlation_id)), c.now_ms),
        )
        c._drain()

    c._deliver(
        leader,
        broker.step(ConnectionOpened(connection_id=cid, client_host="client", client_port=1), c.now_ms),
    )
    for i in (1, 2, 3):
        batch = build_batch([(None, f"v{i}".encode())], base_timestamp=START_MS)
        frame(
            i,
            request(
                0,
                9,
                acks=-1,
                timeout=30_000,
                transactional_id=None,
                topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
            ),
        )
    frame(
        4,
        request(
            3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
        ),
    )
    assert stored(c, leader, "t") == [b"v1", b"v2", b"v3"], "the three Produce requests are appended at once"
    assert not c._client_responses.get((leader, cid)), "answered before the followers had the batches"
    for follower in followers:
        c.resume(follower)
    c.advance(2000)  # past replica.fetch.backoff.ms: the followers' failed fetches are retried
    answers = c._client_responses[(leader, cid)]
    assert [int.from_bytes(f[:4], "big") for f in answers] == [
        1,
        2,
        3,
        4,
    ]  # each starts with its correlation id
    produced: list[Any] = [decode_response(0, 9, f)[1] for f in answers[:3]]
    assert [p.responses[0].partition_responses[0].base_offset for p in produced] == [0, 1, 2]
