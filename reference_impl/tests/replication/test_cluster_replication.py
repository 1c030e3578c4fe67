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
