"""Produce (key 0): every record of a batch is validated, and a refused batch stores nothing.

Issue 17, item 2: CRC-valid batches whose records are malformed were stored. Kafka's broker reads
every record of a produced batch before it appends anything:

* ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java``:
  ``validateBatch`` (the offsets a v2 header spans equal its record count), ``validateRecord``,
  ``validateKey`` (compacted topics), ``validateTimestamp`` (KIP-937's
  ``message.timestamp.before.max.ms`` / ``after.max.ms``), ``processRecordErrors`` (the failing
  records named, INVALID_TIMESTAMP if any of them is a timestamp, else INVALID_RECORD);
* ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java`` and
  ``DefaultRecord.java``: the record readers throw ``InvalidRecordException`` (INVALID_RECORD, the
  whole batch, no record named) for a count that does not match the records, bytes that are not
  records, a record longer than what is left, a negative header key length;
* ``core/src/main/scala/kafka/server/ReplicaManager.scala``: ``record_errors`` and ``error_message``
  (Produce v8+, KIP-467) are filled only for the per-record rules (``RecordValidationException``).

Each case runs at every Produce version the target advertises, and checks that nothing was stored:
ListOffsets latest is still 0, and a good batch produced next is read back by Fetch at offset 0.
Compressed variants use gzip, which every Produce version allows (zstd needs v7, KIP-110).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from fixtures.wire import Capabilities, Router, ops
from reference_impl.protocol.record_set import GZIP, NONE, build_batch, compress, encode_record, seal_batch

from .expect import expect, expect_code, expect_equal

FEATURE = "Produce"
LOG_VALIDATOR = "LogValidator.java"
RECORD_READERS = "DefaultRecordBatch.java / DefaultRecord.java"
CODECS = pytest.mark.parametrize("codec", [NONE, GZIP], ids=["uncompressed", "gzip"])
WINDOW_MS = 60_000
TIMESTAMP_CONFIGS = {
    "message.timestamp.before.max.ms": str(WINDOW_MS),
    "message.timestamp.after.max.ms": str(WINDOW_MS),
}


def now_ms() -> int:
    return int(time.time() * 1000)


def sealed(section: bytes, codec: int, count: int, last_delta: int | None = None) -> bytes:
    """A batch with a valid CRC around ``section`` (encoded records), whatever its header claims."""
    ts = now_ms()
    return seal_batch(
        compress(codec, section),
        records_count=count,
        last_offset_delta=count - 1 if last_delta is None else last_delta,
        attributes=codec,
        base_timestamp=ts,
        max_timestamp=ts,
    )


def records(
    n: int, *, keyless: frozenset[int] = frozenset(), shift_ms: dict[int, int] | None = None
) -> bytes:
    """``n`` encoded records with offset deltas 0..n-1; ``keyless`` indexes have a null key and
    ``shift_ms`` moves a record's timestamp away from the batch's."""
    shift = shift_ms or {}
    return b"".join(
        encode_record(i, shift.get(i, 0), None if i in keyless else b"k%d" % i, b"value-%d" % i)
        for i in range(n)
    )


def framed(body: bytes) -> bytes:
    """One record from its body and a one-byte length prefix (bodies here are short)."""
    return bytes([2 * len(body)]) + body


def refused(
    router: Router,
    caps: Capabilities,
    topic: str,
    batch: bytes,
    version: int,
    code: str,
    rule: str,
    named: list[int] | None = None,
) -> None:
    """``batch`` is refused with ``code``; at v8+ exactly ``named`` records are in record_errors (none
    for a whole-batch rule) with a summary in error_message; and nothing of it was stored."""
    answer = ops.produce_batch(router, caps, topic, batch, version=version)
    expect_code(answer.error_code, code, rule=rule)
    if version >= 8:
        indexes = [int(e.batch_index) for e in answer.record_errors]
        expect_equal(indexes, named or [], rule, "record_errors batch indexes (KIP-467)")
        if named:
            expect(all(e.batch_index_error_message for e in answer.record_errors), rule,
                   "a named record without batch_index_error_message")
            expect(bool(answer.error_message), rule, "record_errors without an error_message")
    nothing_stored(router, caps, topic, rule)


def nothing_stored(router: Router, caps: Capabilities, topic: str, rule: str, at: int = 0) -> None:
    """The log end offset is ``at`` and a good batch produced now lands there and reads back."""
    latest = ops.list_offset(router, caps, topic, ops.LATEST_TIMESTAMP)
    expect_equal(int(latest.offset), at, rule, "log end offset after the refused batch")
    good = ops.produce_batch(router, caps, topic, build_batch([(b"k", b"good")], base_timestamp=now_ms()))
    expect_code(good.error_code, "NONE", rule=rule, where="a good batch after the refused one")
    expect_equal(int(good.base_offset), at, rule, "base offset of the good batch")
    _r, part = ops.fetch(router, caps, topic, at)
    got = [(r.offset, r.value) for r in ops.data_records(part)]
    expect_equal(got[:1], [(at, b"good")], rule, "the good batch read back by Fetch")


@CODECS
@pytest.mark.versions("produce")
@pytest.mark.parametrize(("present", "declared"), [(2, 3), (3, 2)], ids=["count-above", "count-below"])
def test_record_count_differs_from_the_records_present(
    version: int, codec: int, present: int, declared: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """DefaultRecordBatch.java (RecordIterator): a header counting 3 records over 2 is "Incorrect declared
    batch size, premature EOF reached", 3 records under a header counting 2 "records still remaining in
    file": INVALID_RECORD, whole batch, nothing stored."""
    batch = sealed(records(present), codec, declared)
    refused(router, caps, topic, batch, version, "INVALID_RECORD", RECORD_READERS)


@CODECS
@pytest.mark.versions("produce")
def test_garbage_record_bytes(
    version: int, codec: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """DefaultRecord.java (readFrom): bytes that are not records ("Found invalid record structure", a
    varint longer than 5 bytes) are INVALID_RECORD, nothing stored."""
    garbage = bytes(range(200, 256)) * 3
    refused(router, caps, topic, sealed(garbage, codec, 2), version, "INVALID_RECORD", RECORD_READERS)


@pytest.mark.versions("produce")
def test_record_length_past_the_batch_end(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """DefaultRecord.java (readFrom): a record whose length is more than the batch has left is "Invalid
    record size: expected N bytes in record payload, but instead the buffer has only M remaining bytes":
    INVALID_RECORD, nothing stored. (Uncompressed: Kafka's in-place path for compressed batches skips
    fields without checking record lengths.)"""
    second = records(1)
    section = records(1) + b"\x7e" + second[1:]  # the second record claims 63 bytes
    refused(router, caps, topic, sealed(section, NONE, 2), version, "INVALID_RECORD", RECORD_READERS)


@CODECS
@pytest.mark.versions("produce")
def test_null_header_key(version: int, codec: int, router: Router, caps: Capabilities, topic: str) -> None:
    """DefaultRecord.java (readHeaders, readPartiallyFrom): "Invalid negative header key size":
    INVALID_RECORD, nothing stored."""
    record = framed(b"\x00\x00\x00\x02k\x02v\x02\x01\x02x")  # one header, key length -1, value "x"
    refused(router, caps, topic, sealed(record, codec, 1), version, "INVALID_RECORD", RECORD_READERS)


@pytest.mark.versions("produce")
def test_last_offset_delta_inconsistent_with_the_records(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """LogValidator.java (validateBatch): "Inconsistent batch offset range ... and count of records": 2
    records with lastOffsetDelta 2^31-1 are INVALID_RECORD and the log end offset does not move (a broker
    that trusted the header moved it by 2^31)."""
    batch = sealed(records(2), NONE, 2, last_delta=2**31 - 1)
    refused(router, caps, topic, batch, version, "INVALID_RECORD", LOG_VALIDATOR)


@pytest.mark.versions("produce")
def test_offset_deltas_not_increasing(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """Two records both at offset delta 0 in a batch that spans two offsets. Kafka's LogValidator.java
    (assignOffsetsNonCompressed) never reads record offsets of an uncompressed batch, so Kafka stores it;
    the reference refuses it with INVALID_RECORD rather than store records at offsets their batch does not
    cover. Either way the log must stay consistent: refused and nothing stored, or stored spanning
    exactly its two offsets, with the next batch at offset 2."""
    section = encode_record(0, 0, b"k", b"a") + encode_record(0, 0, b"k", b"b")
    answer = ops.produce_batch(router, caps, topic, sealed(section, NONE, 2), version=version)
    expect_code(answer.error_code, "INVALID_RECORD", "NONE", rule=LOG_VALIDATOR)
    nothing_stored(router, caps, topic, LOG_VALIDATOR, at=0 if int(answer.error_code) else 2)


@CODECS
@pytest.mark.versions("produce")
def test_keyless_records_on_a_compacted_topic_are_named(
    version: int, codec: int, router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """LogValidator.java (validateKey, processRecordErrors): on a compacted topic each record without a key
    is named in record_errors (v8+, KIP-467) and the batch is INVALID_RECORD; nothing is stored, the keyed
    records of the same batch included."""
    topic = topic_factory(configs={"cleanup.policy": "compact"})
    batch = sealed(records(5, keyless=frozenset({1, 3})), codec, 5)
    refused(router, caps, topic, batch, version, "INVALID_RECORD", LOG_VALIDATOR, named=[1, 3])


@CODECS
@pytest.mark.versions("produce")
@pytest.mark.parametrize("side", ["after", "before"])
def test_record_timestamp_outside_the_window_is_named(
    version: int, codec: int, side: str, router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """LogValidator.java (validateTimestamp): each record's own timestamp must lie within
    [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms] (KIP-937), not only the
    batch header's; the record outside is named and the batch is INVALID_TIMESTAMP."""
    topic = topic_factory(configs=TIMESTAMP_CONFIGS)
    shift = 86_400_000 if side == "after" else -86_400_000
    batch = sealed(records(3, shift_ms={1: shift}), codec, 3)  # the header's timestamps are now
    refused(router, caps, topic, batch, version, "INVALID_TIMESTAMP", LOG_VALIDATOR, named=[1])
