"""Every produced batch has its records validated as Kafka's LogValidator does, and a refused batch
stores nothing (issue 17, item 2).

Kafka: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java``
(``validateBatch``, ``validateRecord``, ``validateKey``, ``validateTimestamp``,
``processRecordErrors``), the record readers of
``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java`` and
``DefaultRecord.java`` (their ``InvalidRecordException``s), and
``core/src/main/scala/kafka/server/ReplicaManager.scala`` (record errors and the error message
only for a ``RecordValidationException``). Each case runs uncompressed and with every codec, and
checks the log end offset did not move and that a good batch sent next lands at offset 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reference_impl import defects
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    build_batch,
    compress,
    encode_record,
    records_of,
    seal_batch,
)
from reference_impl.protocol.records import TIMESTAMP_TYPE_BIT

from .harness import START_MS, BrokerHarness
from .test_data_path import create, fetch, produce

CODECS = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}


def _batch(section: bytes, codec: int, count: int, last_delta: int | None = None, **fields: Any) -> bytes:
    """A CRC-valid batch of ``section`` (encoded records), compressed with ``codec``."""
    return seal_batch(
        compress(codec, section),
        records_count=count,
        last_offset_delta=count - 1 if last_delta is None else last_delta,
        attributes=codec | fields.pop("attributes", 0),
        base_timestamp=fields.pop("base_timestamp", START_MS),
        max_timestamp=fields.pop("max_timestamp", START_MS),
        **fields,
    )


def _framed(body: bytes) -> bytes:
    """One record from its body (attributes, deltas, key, value, headers) and a length prefix."""
    assert len(body) < 64
    return bytes([2 * len(body)]) + body


def _records(n: int, *, key: bytes | None = b"k") -> bytes:
    return b"".join(encode_record(i, 0, key, b"value-%d" % i) for i in range(n))


MALFORMED: dict[str, Callable[[int], bytes]] = {
    # DefaultRecordBatch.RecordIterator: "Incorrect declared batch size, premature EOF reached"
    "count above the records present": lambda c: _batch(_records(2), c, 3),
    # DefaultRecordBatch.RecordIterator: "Incorrect declared batch size, records still remaining"
    "count below the records present": lambda c: _batch(_records(3), c, 2),
    # DefaultRecord.readFrom: "Found invalid record structure" / "Invalid record size"
    "garbage record bytes": lambda c: _batch(bytes(range(200, 256)) * 3, c, 2),
    # DefaultRecord.readFrom: "Invalid record size: expected N bytes ... only M remaining"
    "record length past the batch end": lambda c: _batch(_records(1) + b"\x7e" + _records(1)[1:], c, 2),
    # DefaultRecord.readHeaders: "Invalid negative header key size"
    "null header key": lambda c: _batch(_framed(b"\x00\x00\x00\x02k\x02v\x02\x01\x02x"), c, 1),
    # the reference refuses record offsets its batch does not cover (see record_walk.py)
    "offset deltas not increasing": lambda c: _batch(
        encode_record(0, 0, b"k", b"a") + encode_record(0, 0, b"k", b"b"), c, 2
    ),
    # LogValidator.validateBatch: "Inconsistent batch offset range [...] and count of records"
    "lastOffsetDelta inconsistent with the records": lambda c: _batch(
        _records(2), c, 2, last_delta=2**31 - 1
    ),
    # LogValidator.validateBatch: "Invalid reported count for record batch"
    "no records": lambda c: _batch(b"", c, 0, last_delta=-1),
    # LogValidator.validateBatch: "Invalid sequence number ... in record batch with producerId"
    "producer id without a sequence": lambda c: _batch(_records(1), c, 1, producer_id=7, producer_epoch=0),
    # UnifiedLog.analyzeAndValidateRecords: "The baseOffset of the record batch ... should be 0"
    "base offset not 0": lambda c: _batch(_records(1), c, 1, base_offset=5),
}


def _log_end(h: BrokerHarness, topic: str) -> int:
    return h.broker.partition(topic, 0).log.log_end_offset  # type: ignore[union-attr]


def _assert_nothing_stored_then_good_batch_lands(h: BrokerHarness, topic: str) -> None:
    assert _log_end(h, topic) == 0
    good = produce(h, topic, 0, build_batch([(b"k", b"good")], base_timestamp=START_MS))
    assert good.error_code == ErrorCode.none and good.base_offset == 0
    assert [r.value for r in records_of(fetch(h, topic, 0, 0).records)] == [b"good"]


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
@pytest.mark.parametrize("rule", list(MALFORMED))
def test_malformed_batch_is_refused_whole(rule: str, codec: int) -> None:
    """Each framing or batch-level rule: INVALID_RECORD for the whole batch, no per-record errors (Kafka's
    record readers throw InvalidRecordException), the log start offset in the answer (ReplicaManager
    processFailedRecord), and nothing stored."""
    h = BrokerHarness()
    create(h, "t")
    answer = produce(h, "t", 0, MALFORMED[rule](codec))
    assert answer.error_code == ErrorCode.invalid_record, (rule, answer)
    assert answer.record_errors == ()
    assert answer.log_start_offset == 0
    _assert_nothing_stored_then_good_batch_lands(h, "t")


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
def test_keyless_records_on_a_compacted_topic_are_named(codec: int) -> None:
    """LogValidator.validateKey and processRecordErrors: the keyless records of the batch are each named
    in record_errors (KIP-467) with Kafka's message; error_message summarises; nothing is stored."""
    h = BrokerHarness()
    create(h, "c", cleanup_policy="compact")
    section = b"".join(encode_record(i, 0, None if i in (1, 3) else b"k", b"v") for i in range(5))
    answer = produce(h, "c", 0, _batch(section, codec, 5))
    assert answer.error_code == ErrorCode.invalid_record
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
        (i, "Compacted topic cannot accept message without key in topic partition c-0.") for i in (1, 3)
    ]
    assert answer.error_message.startswith("One or more records have been rejected due to 2 record errors")
    _assert_nothing_stored_then_good_batch_lands(h, "c")


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
@pytest.mark.parametrize("side", ["after", "before"])
def test_record_timestamps_outside_the_window_are_named(side: str, codec: int) -> None:
    """LogValidator.validateTimestamp: each record's own timestamp (not the batch header's) must lie
    within [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]; the records
    outside are named and the batch answers INVALID_TIMESTAMP."""
    h = BrokerHarness()
    create(h, "ts", message_timestamp_before_max_ms="60000", message_timestamp_after_max_ms="60000")
    off = 3_600_000 if side == "after" else -3_600_000
    section = b"".join(encode_record(i, off if i == 1 else 0, b"k", b"v") for i in range(3))
    answer = produce(h, "ts", 0, _batch(section, codec, 3))  # header timestamps are within the window
    assert answer.error_code == ErrorCode.invalid_timestamp
    ((index, message),) = [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors]
    assert index == 1
    assert message == (
        f"Timestamp {START_MS + off} of message with offset 1 is out of range. The timestamp should be "
        f"within [{START_MS - 60000}, {START_MS + 60000}]"
    )
    assert answer.error_message == "One or more records have been rejected due to invalid timestamp"
    _assert_nothing_stored_then_good_batch_lands(h, "ts")


def test_producer_may_not_set_log_append_time() -> None:
    """LogValidator.validateTimestamp: on a LogAppendTime topic, a batch the producer marked
    LogAppendTime has every record refused with INVALID_TIMESTAMP."""
    h = BrokerHarness()
    create(h, "lat", message_timestamp_type="LogAppendTime")
    answer = produce(h, "lat", 0, _batch(_records(2), NONE, 2, attributes=TIMESTAMP_TYPE_BIT))
    assert answer.error_code == ErrorCode.invalid_timestamp
    assert [e.batch_index for e in answer.record_errors] == [0, 1]
    _assert_nothing_stored_then_good_batch_lands(h, "lat")


@pytest.mark.parametrize("version", [3, 7, 8, 9])
def test_record_errors_only_from_v8(version: int) -> None:
    """ProduceResponse.json: record_errors and error_message exist from v8; before, the same code alone."""
    h = BrokerHarness()
    create(h, "c", cleanup_policy="compact")
    answer = produce(h, "c", 0, build_batch([(None, b"v")], base_timestamp=START_MS), version=version)
    assert answer.error_code == ErrorCode.invalid_record
    assert (len(getattr(answer, "record_errors", ())) == 1) == (version >= 8)


def test_huge_last_offset_delta_does_not_move_the_log_end() -> None:
    """The defect of issue 17: 2 records with lastOffsetDelta 2^31-1 moved the log end offset by 2^31."""
    h = BrokerHarness()
    create(h, "t")
    produce(h, "t", 0, MALFORMED["lastOffsetDelta inconsistent with the records"](NONE))
    assert _log_end(h, "t") == 0


def test_record_errors_are_capped() -> None:
    """Kafka names every failing record; the reference names the first RECORD_ERRORS_MAX and gives the
    total in error_message, so an answer does not grow with a hostile record count."""
    from reference_impl.core.validation import RECORD_ERRORS_MAX

    h = BrokerHarness()
    create(h, "c", cleanup_policy="compact")
    n = RECORD_ERRORS_MAX + 5
    answer = produce(h, "c", 0, _batch(_records(n, key=None), ZSTD, n))
    assert answer.error_code == ErrorCode.invalid_record
    assert len(answer.record_errors) == RECORD_ERRORS_MAX
    assert f"due to {n} record errors in total" in answer.error_message


@pytest.mark.parametrize("rule", ["count above the records present", "garbage record bytes",
                                  "lastOffsetDelta inconsistent with the records", "null header key"])
def test_seeded_defect_stores_what_the_fix_refuses(rule: str) -> None:
    """With defects.UNVALIDATED_RECORDS switched on, the old batch-level checks let these batches in:
    the checks above are what catches that defect."""
    h = BrokerHarness()
    create(h, "t")
    with defects.seeded(defects.UNVALIDATED_RECORDS):
        answer = produce(h, "t", 0, MALFORMED[rule](NONE))
    assert answer.error_code == ErrorCode.none
    assert _log_end(h, "t") > 0


def test_the_python_walker_gives_the_same_answers() -> None:
    """The reference walker, selected as KH_RECORD_WALKER=python selects it, refuses the same batches."""
    from reference_impl.protocol import record_walk

    before = record_walk.active_walker()
    try:
        record_walk.select_walker("python")
        for rule, make in MALFORMED.items():
            h = BrokerHarness()
            create(h, "t")
            assert produce(h, "t", 0, make(GZIP)).error_code == ErrorCode.invalid_record, rule
    finally:
        record_walk.select_walker(before)


def test_header_timestamps_alone_no_longer_decide() -> None:
    """A batch whose header timestamps are in the window but whose records are not is refused (the old
    check read only baseTimestamp and maxTimestamp)."""
    h = BrokerHarness()
    create(h, "ts", message_timestamp_after_max_ms="1000")
    section = encode_record(0, 10_000_000, b"k", b"v")  # the header's max timestamp still says START_MS
    answer = produce(h, "ts", 0, _batch(section, NONE, 1))
    assert answer.error_code == ErrorCode.invalid_timestamp
