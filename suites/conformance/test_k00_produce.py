"""Produce (key 0): offset assignment, validation errors, acks, codecs, timestamps.

Rules from the protocol guide (Produce API, Record Batch), KIP-32 (timestamps,
LogAppendTime), KIP-98 (record batch v2 and its CRC-32C), KIP-110 (zstd, Produce v7+),
KIP-1150-era defaults for message.timestamp.after.max.ms, and the error table of
Kafka's Errors.java (CORRUPT_MESSAGE 2, MESSAGE_TOO_LARGE 10, INVALID_REQUIRED_ACKS 21,
INVALID_TIMESTAMP 32, INVALID_RECORD 87).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from fixtures.wire import Capabilities, Router, ops
from reference_impl.protocol.record_set import GZIP, LZ4, SNAPPY, ZSTD, build_batch

from .expect import expect, expect_code, expect_equal

FEATURE = "Produce"


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.mark.versions("produce")
def test_offsets_are_assigned_in_order(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """Protocol guide, Produce: the leader assigns consecutive offsets; base_offset of each batch follows
    the last."""
    bases = []
    for i in range(3):
        answer = ops.produce_batch(
            router,
            caps,
            topic,
            build_batch([(None, b"r%d-%d" % (i, j)) for j in range(4)], base_timestamp=now_ms()),
            version=version,
        )
        expect_code(answer.error_code, "NONE", rule="Protocol guide, Produce")
        bases.append(int(answer.base_offset))
    expect_equal(bases, [0, 4, 8], "Protocol guide, Produce", "base offsets of three 4-record batches")
    _r, part = ops.fetch(router, caps, topic, 0)
    expect_equal(
        [r.value for r in ops.data_records(part)],
        [b"r%d-%d" % (i, j) for i in range(3) for j in range(4)],
        "Protocol guide, Produce",
        "values read back in order",
    )


def test_corrupt_crc_is_rejected(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-98, Record Batch: the CRC-32C covers attributes to the end; a batch whose CRC does not match is
    refused with CORRUPT_MESSAGE and nothing is appended."""
    batch = bytearray(build_batch([(None, b"payload")], base_timestamp=now_ms()))
    batch[-1] ^= 0xFF  # flip the last byte of the record: the stored CRC no longer matches
    answer = ops.produce_batch(router, caps, topic, bytes(batch))
    expect_code(answer.error_code, "CORRUPT_MESSAGE", rule="KIP-98 record batch CRC")
    latest = ops.list_offset(router, caps, topic, ops.LATEST_TIMESTAMP)
    expect_equal(int(latest.offset), 0, "KIP-98 record batch CRC", "log end offset after the refused batch")


def test_batch_larger_than_max_message_bytes_is_rejected(
    router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """Topic config max.message.bytes: a batch larger than it is refused with MESSAGE_TOO_LARGE."""
    name = topic_factory(configs={"max.message.bytes": "1024"})
    answer = ops.produce_batch(
        router, caps, name, build_batch([(None, b"x" * 4096)], base_timestamp=now_ms())
    )
    expect_code(answer.error_code, "MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", rule="max.message.bytes")


def test_timestamp_too_far_in_the_future_is_rejected(
    router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """KIP-937 (message.timestamp.after.max.ms): with CreateTime, a record stamped further ahead than the
    topic
    allows is refused with INVALID_TIMESTAMP."""
    name = topic_factory(configs={"message.timestamp.after.max.ms": "60000"})
    answer = ops.produce_batch(
        router, caps, name, build_batch([(None, b"future")], base_timestamp=now_ms() + 86_400_000)
    )
    expect_code(answer.error_code, "INVALID_TIMESTAMP", rule="KIP-937 message.timestamp.after.max.ms")


def test_unknown_topic_is_not_auto_created_by_produce(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """Protocol guide, Produce: producing to a topic that does not exist is answered
    UNKNOWN_TOPIC_OR_PARTITION
    (Produce never creates topics; clients ask Metadata first)."""
    name = unique("absent")
    v = caps.best("produce", hi=12)  # v13 addresses topics by id, which an unknown topic has none of
    answer = ops.produce_batch(
        router, caps, name, build_batch([(None, b"v")], base_timestamp=now_ms()), version=v
    )
    expect_code(answer.error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule="Protocol guide, Produce")


def test_unknown_partition_is_rejected(router: Router, caps: Capabilities, topic: str) -> None:
    """Protocol guide, Produce: a partition index the topic does not have is answered
    UNKNOWN_TOPIC_OR_PARTITION."""
    answer = ops.produce_batch(
        router, caps, topic, build_batch([(None, b"v")], base_timestamp=now_ms()), partition=7
    )
    expect_code(answer.error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule="Protocol guide, Produce")


def test_invalid_acks_value_is_rejected(router: Router, caps: Capabilities, topic: str) -> None:
    """ProduceRequest.json, acks: only -1, 0 and 1 are valid; anything else is INVALID_REQUIRED_ACKS."""
    answer = ops.produce_batch(
        router, caps, topic, build_batch([(None, b"v")], base_timestamp=now_ms()), acks=2
    )
    expect_code(answer.error_code, "INVALID_REQUIRED_ACKS", rule="ProduceRequest.json acks")


def test_acks_zero_gets_no_answer_but_appends(router: Router, caps: Capabilities, topic: str) -> None:
    """Protocol guide, Produce: with acks=0 the broker sends no response at all, and still appends the
    records;
    the next request on the connection is answered normally."""
    ops.produce_batch(
        router, caps, topic, build_batch([(None, b"fire-and-forget")], base_timestamp=now_ms()), acks=0
    )
    latest = ops.list_offset(router, caps, topic, ops.LATEST_TIMESTAMP)  # answered next, same connection
    expect_equal(
        int(latest.offset), 1, "Protocol guide, Produce acks=0", "log end offset after an acks=0 batch"
    )


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_round_trip(codec: int, router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-110 (zstd, Produce v7+) and the Record Batch spec: compressed batches are accepted and read back
    record for record with their offsets."""
    values = [b"value-%03d" % i * 5 for i in range(50)]
    answer = ops.produce_batch(
        router, caps, topic, build_batch([(b"k", v) for v in values], base_timestamp=now_ms(), codec=codec)
    )
    expect_code(answer.error_code, "NONE", rule="Record Batch compression")
    _r, part = ops.fetch(router, caps, topic, 0)
    got = ops.data_records(part)
    expect_equal([r.value for r in got], values, "Record Batch compression", "values read back")
    expect_equal([r.offset for r in got], list(range(50)), "Record Batch compression", "offsets read back")


def test_log_append_time_replaces_create_time(
    router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """KIP-32: with message.timestamp.type=LogAppendTime the broker stamps the batch, returns that time as
    log_append_time (v2+) and marks the batch's timestamp type."""
    name = topic_factory(configs={"message.timestamp.type": "LogAppendTime"})
    before = now_ms()
    answer = ops.produce_batch(router, caps, name, build_batch([(None, b"v")], base_timestamp=1_000))
    expect_code(answer.error_code, "NONE", rule="KIP-32")
    stamp = answer.log_append_time
    stamp_ms = int(stamp.timestamp() * 1000) if stamp is not None else -1
    expect(stamp_ms >= before - 1000, "KIP-32", f"log_append_time {stamp_ms} is not the append time")
    _r, part = ops.fetch(router, caps, name, 0)
    ((header, records),) = ops.batches(part)
    expect(header.is_log_append_time, "KIP-32", "fetched batch is not marked LogAppendTime")
    expect(
        records[0].timestamp >= before - 1000,
        "KIP-32",
        f"record timestamp {records[0].timestamp} is still the producer's",
    )


@pytest.mark.versions("produce", lo=5)
def test_log_start_offset_is_reported(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-107: Produce v5+ answers carry the partition's log start offset (0 for a fresh topic)."""
    answer = ops.produce_batch(
        router, caps, topic, build_batch([(None, b"v")], base_timestamp=now_ms()), version=version
    )
    expect_equal(int(answer.log_start_offset), 0, "KIP-107", "log_start_offset")


def test_record_count_beyond_the_batch_is_rejected(router: Router, caps: Capabilities, topic: str) -> None:
    """Record Batch spec: the declared record count must match the records present; a batch claiming more
    records than it holds is refused as corrupt (CORRUPT_MESSAGE or INVALID_RECORD)."""
    import struct

    from crc32c import crc32c

    batch = bytearray(build_batch([(None, b"one")], base_timestamp=now_ms()))
    struct.pack_into(">i", batch, 57, 5)  # records count
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))  # keep the CRC valid
    answer = ops.produce_batch(router, caps, topic, bytes(batch))
    expect_code(answer.error_code, "CORRUPT_MESSAGE", "INVALID_RECORD", rule="Record Batch record count")
