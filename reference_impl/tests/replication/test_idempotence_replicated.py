"""Idempotent produce on a replicated partition: what the broker answers across an isolated ISR
member and a leader change, request by request, as Kafka's ProducerStateManager does.

The first test replays the chaos finding ``seed 2`` (3 brokers, RF=3, min.insync.replicas=2,
librdkafka 2.16 idempotent producer, message.timeout.ms=10000) from the broker's side. The
duplicates it reported come from the client: after message.timeout.ms expired for the head of a
retried, possibly persisted batch, librdkafka bumped the epoch locally and re-sent the batch's
tail under the new epoch from sequence 0. A new epoch starting at 0 is valid to Kafka's broker
too, so the broker appends it; it cannot be deduplicated against the old epoch's sequences.
"""

from __future__ import annotations

import uuid

import pytest

from reference_impl.core.partition import AppendOutcome, Partition
from reference_impl.log.memory import MemoryLog
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import build_batch

from .test_partition_replication import _bytes, fetch_round, values

TOPIC_ID = uuid.UUID(int=11)
PID = 0
ALL = (1, 2, 3)


def replica(node: int) -> Partition:
    return Partition("t", 2, TOPIC_ID, MemoryLog(), {"min.insync.replicas": "2"}, node, _bytes)


def batch(epoch: int, seq: int, *vals: bytes) -> bytes:
    return build_batch(
        [(None, v) for v in vals], base_timestamp=1, producer_id=PID, producer_epoch=epoch, base_sequence=seq
    )


def produce(leader: Partition, records: bytes) -> AppendOutcome:
    return leader.append_as_leader(records, -1, 0)


def cluster() -> tuple[Partition, Partition, Partition]:
    a, b, c = replica(1), replica(2), replica(3)
    b.become_leader(0, 0, ALL, ALL)
    a.become_follower(2, 0, 0, ALL, ALL)
    c.become_follower(2, 0, 0, ALL, ALL)
    return a, b, c


def test_a_client_epoch_bump_over_a_possibly_persisted_batch_is_appended_as_kafka_would() -> None:
    """Seed 2, partition 2, producer 0 (leader broker 2, broker 3 isolated on every link):

    1. epoch 0, seq 130, MsgIds 131..404 is appended at 534..807; broker 3 is still in the ISR,
       so the high watermark stays and the acks=all answer is REQUEST_TIMED_OUT after 5 s.
    2. The retry (same epoch and sequence) is a duplicate: the original offsets, nothing appended;
       it waits for the high watermark like the first attempt (the client timed it out locally).
    3. message.timeout.ms expires for MsgIds 131..254; librdkafka bumps to epoch 2 and re-bases the
       partition on MsgId 255, the first message left in its queue, and sends MsgIds 255..1087 as
       epoch 2, seq 0: MsgIds 255..404 are stored a second time (808..957).
    """
    a, b, c = cluster()
    head = produce(b, batch(0, 0, b"0-0", b"0-3"))  # seq 0..1 (the 130 earlier records)
    for f in (a, c, a, c):
        fetch_round(b, f)
    assert b.committed(head.last_offset)

    sent = produce(b, batch(0, 2, b"0-6", b"0-9", b"0-12", b"0-764", b"0-767"))  # MsgIds 131..404
    fetch_round(b, a)
    fetch_round(b, a)  # broker 3 fetches nothing: it is isolated
    assert not b.committed(sent.last_offset), "acks=all waits for broker 3: REQUEST_TIMED_OUT"

    retry = produce(b, batch(0, 2, b"0-6", b"0-9", b"0-12", b"0-764", b"0-767"))
    assert retry == AppendOutcome(sent.first_offset, sent.last_offset, duplicate=True)
    assert b.log.log_end_offset == sent.last_offset + 1

    fetch_round(b, c)  # the fault heals
    fetch_round(b, c)
    assert b.committed(sent.last_offset), "the first attempt is stored and committed"

    bumped = produce(b, batch(2, 0, b"0-764", b"0-767", b"0-770"))  # the tail, re-based on MsgId 255
    assert not bumped.duplicate and bumped.first_offset == sent.last_offset + 1
    assert values(b).count(b"0-764") == 2, "a new epoch from sequence 0 is a new series to the broker"
    again = produce(b, batch(2, 0, b"0-764", b"0-767", b"0-770"))
    assert again == AppendOutcome(bumped.first_offset, bumped.last_offset, duplicate=True)

    with pytest.raises(KafkaError) as old:
        produce(b, batch(0, 2, b"0-6", b"0-9", b"0-12", b"0-764", b"0-767"))
    assert old.value.code == ErrorCode.invalid_producer_epoch


def test_a_retry_reaching_the_new_leader_is_deduplicated_and_one_below_the_window_refused() -> None:
    """Candidate (a)/(b) of the finding: followers apply every replicated batch to their producer
    state, so the new leader after a failover answers a retry of any of the producer's last five
    batches with its original offsets; a same-epoch retry older than those five is
    OUT_OF_ORDER_SEQUENCE_NUMBER and is never appended."""
    a, b, c = cluster()
    outcomes = [produce(b, batch(0, 2 * i, b"%d-a" % i, b"%d-b" % i)) for i in range(7)]
    for f in (a, c, a, c):
        fetch_round(b, f)
    assert b.committed(outcomes[-1].last_offset)

    a.become_leader(1, 1, ALL, (1, 3))  # broker 2 isolated: broker 1 takes over
    end = a.log.log_end_offset
    for i in range(2, 7):
        retry = produce(a, batch(0, 2 * i, b"%d-a" % i, b"%d-b" % i))
        assert retry == AppendOutcome(outcomes[i].first_offset, outcomes[i].last_offset, duplicate=True)
    with pytest.raises(KafkaError) as below:
        produce(a, batch(0, 2, b"1-a", b"1-b"))
    assert below.value.code == ErrorCode.out_of_order_sequence_number
    assert a.log.log_end_offset == end

    nxt = produce(a, batch(0, 14, b"7-a"))
    assert not nxt.duplicate and nxt.first_offset == end
