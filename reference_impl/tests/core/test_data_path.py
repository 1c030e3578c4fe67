"""Produce, fetch, list offsets and delete records through the sans-IO broker."""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import GZIP, ZSTD, build_batch, records_of

from .harness import START_MS, BrokerHarness, request


def create(h: BrokerHarness, name: str, partitions: int = 1, **configs: str) -> None:
    response = h.call(
        request(
            19,
            7,
            topics=[
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()],
                }
            ],
            timeout=1000,
            validate_only=False,
        )
    )
    assert response.topics[0].error_code == ErrorCode.none, response


def produce(
    h: BrokerHarness, topic: str, partition: int, batch: bytes | None, acks: int = -1, version: int = 9
) -> Any:
    response = h.call(
        request(
            0,
            version,
            acks=acks,
            timeout=1000,
            transactional_id=None,
            topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
        )
    )
    return response.responses[0].partition_responses[0]


def fetch_request(
    topic: str,
    partition: int,
    offset: int,
    *,
    max_wait: int = 0,
    min_bytes: int = 0,
    version: int = 11,
    max_bytes: int = 1 << 20,
    current_leader_epoch: int = -1,
    isolation_level: int = 0,
) -> Any:
    """A one-partition Fetch request."""
    return request(
        1,
        version,
        replica_id=-1,
        max_wait=max_wait,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=0,
        session_epoch=-1,
        forgotten_topics_data=[],
        rack_id="",
        topics=[
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                        "current_leader_epoch": current_leader_epoch,
                    }
                ],
            }
        ],
    )


def fetch(
    h: BrokerHarness, topic: str, partition: int, offset: int, *, cid: int | None = None, **options: Any
) -> Any:
    """Fetch one partition (``options`` as :func:`fetch_request`'s) and return its answer."""
    response = h.call(fetch_request(topic, partition, offset, **options), cid)
    return response.responses[0].partitions[0]


def values(records: bytes) -> list[bytes | None]:
    return [r.value for r in records_of(records)]


def test_offsets_are_assigned_in_order_and_read_back_byte_exact() -> None:
    """Seed 000: the leader assigns consecutive offsets; a consumer reads the same batches back."""
    h = BrokerHarness()
    create(h, "t")
    firsts = []
    for i, codec in enumerate([0, GZIP, ZSTD]):
        batch = build_batch(
            [(b"k", b"v%d-%d" % (i, j)) for j in range(5)], codec=codec, base_timestamp=START_MS
        )
        answer = produce(h, "t", 0, batch)
        assert answer.error_code == ErrorCode.none
        firsts.append(answer.base_offset)
    assert firsts == [0, 5, 10]
    got = fetch(h, "t", 0, 0)
    assert got.high_watermark == 15 and got.log_start_offset == 0
    assert values(got.records) == [b"v%d-%d" % (i, j) for i in range(3) for j in range(5)]
    assert values(fetch(h, "t", 0, 7).records)[0] == b"v1-0"  # whole batches from the one holding 7


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda b: b[:-1], ErrorCode.corrupt_message),
        (lambda b: b[:30] + bytes([b[30] ^ 1]) + b[31:], ErrorCode.corrupt_message),
        (lambda b: b + b, ErrorCode.invalid_record),
        (lambda b: b[:16] + b"\x01" + b[17:], ErrorCode.invalid_record),
    ],
)
def test_damaged_batches_get_kafkas_error_codes(mutate: Any, code: ErrorCode) -> None:
    """LogValidator: a torn or CRC-damaged batch is CORRUPT_MESSAGE; two batches or magic 1 in
    Produce v3+ are INVALID_RECORD; nothing is appended."""
    h = BrokerHarness()
    create(h, "t")
    batch = build_batch([(None, b"x" * 20)], base_timestamp=START_MS)
    assert produce(h, "t", 0, mutate(batch)).error_code == code
    assert fetch(h, "t", 0, 0).high_watermark == 0


def test_size_and_timestamp_limits() -> None:
    """MESSAGE_TOO_LARGE above max.message.bytes; INVALID_TIMESTAMP beyond
    message.timestamp.after.max.ms (KIP-937)."""
    h = BrokerHarness()
    create(h, "small", max_message_bytes="200")
    assert (
        produce(h, "small", 0, build_batch([(None, b"x" * 300)], base_timestamp=START_MS)).error_code
        == ErrorCode.message_too_large
    )
    future = build_batch([(None, b"x")], base_timestamp=START_MS + 3_600_001)
    assert produce(h, "small", 0, future).error_code == ErrorCode.invalid_timestamp
    assert (
        produce(h, "small", 0, build_batch([(None, b"x")], base_timestamp=START_MS)).error_code
        == ErrorCode.none
    )


def test_unknown_topic_and_acks() -> None:
    h = BrokerHarness()
    batch = build_batch([(None, b"x")], base_timestamp=START_MS)
    assert produce(h, "missing", 0, batch).error_code == ErrorCode.unknown_topic_or_partition
    create(h, "t")
    assert produce(h, "t", 0, batch, acks=2).error_code == ErrorCode.invalid_required_acks
    create(h, "strict", min_insync_replicas="2")
    assert produce(h, "strict", 0, batch, acks=-1).error_code == ErrorCode.not_enough_replicas
    assert produce(h, "strict", 0, batch, acks=1).error_code == ErrorCode.none


def test_acks_zero_gets_no_response_but_is_appended() -> None:
    h = BrokerHarness()
    create(h, "t")
    cid = h.connect()
    h.send(
        cid,
        request(
            0,
            9,
            acks=0,
            timeout=1000,
            transactional_id=None,
            topic_data=[
                {"name": "t", "partition_data": [{"index": 0, "records": build_batch([(None, b"x")])}]}
            ],
        ),
    )
    assert not h.responses.get(cid)
    assert fetch(h, "t", 0, 0).high_watermark == 1


def test_log_append_time_topics_stamp_the_broker_time() -> None:
    h = BrokerHarness()
    create(h, "lat", message_timestamp_type="LogAppendTime")
    answer = produce(h, "lat", 0, build_batch([(None, b"x")], base_timestamp=5))
    assert answer.log_append_time is not None
    (record,) = records_of(fetch(h, "lat", 0, 0).records)
    assert record.timestamp == h.now_ms


def test_long_poll_waits_for_min_bytes_or_max_wait() -> None:
    """A fetch with min_bytes waits in the purgatory: a produce completes it at once, otherwise it
    returns empty at max_wait (seed 001, delayed operations)."""
    h = BrokerHarness()
    create(h, "t")
    cid = h.connect()
    h.send(cid, fetch_request("t", 0, 0, max_wait=1000, min_bytes=1))
    h.advance(999)
    assert not h.responses.get(cid)
    produce(h, "t", 0, build_batch([(None, b"wake")], base_timestamp=START_MS))
    assert len(h.responses[cid]) == 1
    started = h.now_ms
    cid2 = h.connect()
    h.send(cid2, fetch_request("t", 0, 1, max_wait=1000, min_bytes=1))
    assert h.next_wakeup_ms is not None and h.next_wakeup_ms <= started + 1000  # the shell wakes in time
    h.advance(999)
    assert not h.responses.get(cid2)
    h.advance(1)
    assert len(h.responses[cid2]) == 1


def test_offset_out_of_range_and_leader_epoch_fencing() -> None:
    """OFFSET_OUT_OF_RANGE beyond the log end; KIP-320 epochs: older is FENCED, newer is UNKNOWN."""
    h = BrokerHarness()
    create(h, "t")
    produce(h, "t", 0, build_batch([(None, b"x")], base_timestamp=START_MS))
    assert fetch(h, "t", 0, 5).error_code == ErrorCode.offset_out_of_range
    assert fetch(h, "t", 0, 0, current_leader_epoch=0).error_code == ErrorCode.none
    assert fetch(h, "t", 0, 0, current_leader_epoch=1).error_code == ErrorCode.unknown_leader_epoch


def list_offset(h: BrokerHarness, topic: str, timestamp: int, version: int = 7) -> tuple[int, int, int]:
    response = h.call(
        request(
            2,
            version,
            replica_id=-1,
            isolation_level=0,
            topics=[{"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp}]}],
        )
    )
    p = response.topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp


def test_list_offsets_by_special_value_and_by_time() -> None:
    """ListOffsets: -2 log start, -1 high watermark, -3 max timestamp, a time finds the first record
    at or after it, a time after every record finds nothing."""
    h = BrokerHarness()
    create(h, "t")
    for i, ts in enumerate([100, 300, 200]):
        produce(h, "t", 0, build_batch([(None, b"%d" % i)], base_timestamp=START_MS + ts))
    assert list_offset(h, "t", -2) == (ErrorCode.none, 0, -1)
    assert list_offset(h, "t", -1) == (ErrorCode.none, 3, -1)
    assert list_offset(h, "t", -3) == (ErrorCode.none, 1, START_MS + 300)
    assert list_offset(h, "t", START_MS + 150) == (ErrorCode.none, 1, START_MS + 300)
    assert list_offset(h, "t", START_MS + 301) == (ErrorCode.none, -1, -1)


def test_delete_records_moves_the_log_start() -> None:
    """DeleteRecords: -1 means the HW; beyond the HW is OFFSET_OUT_OF_RANGE; reads below fail."""
    h = BrokerHarness()
    create(h, "t")
    for i in range(4):
        produce(h, "t", 0, build_batch([(None, b"%d" % i)], base_timestamp=START_MS))

    def delete(offset: int) -> tuple[int, int]:
        r = h.call(
            request(
                21,
                2,
                timeout=1000,
                topics=[{"name": "t", "partitions": [{"partition_index": 0, "offset": offset}]}],
            )
        )
        p = r.topics[0].partitions[0]
        return p.error_code, p.low_watermark

    assert delete(2) == (ErrorCode.none, 2)
    assert delete(9) == (ErrorCode.offset_out_of_range, -1)
    assert fetch(h, "t", 0, 1).error_code == ErrorCode.offset_out_of_range
    assert values(fetch(h, "t", 0, 2).records) == [b"2", b"3"]
    assert list_offset(h, "t", -2)[1] == 2
    assert delete(-1) == (ErrorCode.none, 4)


def test_incremental_fetch_session_reports_only_changes() -> None:
    """KIP-227: epoch 0 opens a session answering every partition; the next epoch answers only
    partitions that changed; a wrong epoch is INVALID_FETCH_SESSION_EPOCH."""
    h = BrokerHarness()
    create(h, "t", partitions=2)
    cid = h.connect()

    def session_fetch(session_id: int, epoch: int, offsets: dict[int, int]) -> Any:
        return h.call(
            request(
                1,
                11,
                replica_id=-1,
                max_wait=0,
                min_bytes=0,
                max_bytes=1 << 20,
                isolation_level=0,
                session_id=session_id,
                session_epoch=epoch,
                forgotten_topics_data=[],
                rack_id="",
                topics=[
                    {
                        "topic": "t",
                        "partitions": [
                            {
                                "partition": p,
                                "fetch_offset": o,
                                "log_start_offset": -1,
                                "partition_max_bytes": 1 << 20,
                            }
                            for p, o in offsets.items()
                        ],
                    }
                ]
                if offsets
                else [],
            ),
            cid,
        )

    opened = session_fetch(0, 0, {0: 0, 1: 0})
    assert opened.session_id != 0
    assert sorted(p.partition_index for p in opened.responses[0].partitions) == [0, 1]
    produce(h, "t", 1, build_batch([(None, b"x")], base_timestamp=START_MS))
    later = session_fetch(opened.session_id, 1, {})
    assert [p.partition_index for t in later.responses for p in t.partitions] == [1]
    assert session_fetch(opened.session_id, 1, {}).error_code == ErrorCode.invalid_fetch_session_epoch
    assert session_fetch(12345, 1, {}).error_code == ErrorCode.fetch_session_id_not_found


def test_offset_for_leader_epoch_answers_from_the_epoch_cache() -> None:
    """KIP-101 (Kafka's LeaderEpochFileCache.endOffsetFor): the latest epoch ends at the log end;
    an epoch above every cached one, or -1, answers (-1, -1); a current_leader_epoch from the
    future is UNKNOWN_LEADER_EPOCH."""
    h = BrokerHarness()
    create(h, "t")
    for _ in range(3):
        produce(h, "t", 0, build_batch([(None, b"x")], base_timestamp=START_MS))

    def ask(epoch: int, current: int = -1) -> tuple[int, int, int]:
        r = h.call(
            request(
                23,
                4,
                replica_id=-1,
                topics=[
                    {
                        "topic": "t",
                        "partitions": [
                            {"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}
                        ],
                    }
                ],
            )
        )
        p = r.topics[0].partitions[0]
        return int(p.error_code), int(p.leader_epoch), int(p.end_offset)

    assert ask(0) == (ErrorCode.none, 0, 3)
    assert ask(5) == (ErrorCode.none, -1, -1)
    assert ask(-1) == (ErrorCode.none, -1, -1)
    assert ask(0, current=3)[0] == ErrorCode.unknown_leader_epoch
