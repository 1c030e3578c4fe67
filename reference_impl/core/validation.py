"""Produce-side validation of record batches, as Kafka's ``LogValidator`` does it.

Kafka's order (``ProduceRequest.validateRecords``, ``UnifiedLog.analyzeAndValidateRecords``,
``LogValidator.validateBatch`` then ``validateRecord`` for each record): one
magic-v2 batch per partition, its size, its CRC, the batch-level rules, then
every record. Every batch has its records walked, compressed or not, in one pass
over the record framing that builds nothing per record (:mod:`record_walk`); a
compressed batch is walked as its bounded decompression produces output
(:mod:`inflate`), so a bomb is stopped at :func:`inflation_bound` and never held
whole. Nothing of a refused batch is stored: the caller appends only what this
returns.

Codes: CORRUPT_MESSAGE for a torn batch or CRC mismatch; INVALID_RECORD for a
malformed batch or record (no per-record errors: Kafka's record readers throw);
MESSAGE_TOO_LARGE above ``max.message.bytes`` (and, the reference's own bound,
for a compressed batch that inflates past :func:`inflation_bound`);
RECORD_LIST_TOO_LARGE above ``segment.bytes``; and, naming the records
(``record_errors``, KIP-467), INVALID_RECORD for keyless records on a compacted
topic or INVALID_TIMESTAMP for timestamps outside the topic's window.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from crc32c import crc32c

from reference_impl import defects
from reference_impl.protocol import record_walk
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.inflate import InflatedTooLargeError, inflate_chunks, inflation_bound
from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.record_walk import WalkResult, WalkSpec, wrap64
from reference_impl.protocol.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    InvalidBatchError,
    crc_is_valid,
    iter_headers,
)

_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1

RECORD_ERRORS_MAX = 1000
"""Per-record errors named in one answer. Kafka names them all; a compressed batch of millions of
tiny keyless records would then make an answer of hundreds of megabytes, so the reference names the
first thousand and gives the total in ``error_message``."""


@dataclass(frozen=True, slots=True)
class TopicLimits:
    """The topic configs validation reads, parsed once per config change."""

    max_message_bytes: int
    segment_bytes: int
    log_append_time: bool
    compacted: bool
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int

    @classmethod
    def from_configs(cls, configs: Mapping[str, str]) -> TopicLimits:
        return cls(
            max_message_bytes=int(configs.get("max.message.bytes", "1048588")),
            segment_bytes=int(configs.get("segment.bytes", str(1 << 30))),
            log_append_time=configs.get("message.timestamp.type") == "LogAppendTime",
            compacted="compact" in configs.get("cleanup.policy", "delete"),
            timestamp_before_max_ms=int(configs.get("message.timestamp.before.max.ms", str(2**63 - 1))),
            timestamp_after_max_ms=int(configs.get("message.timestamp.after.max.ms", "3600000")),
        )


class RejectedRecords(KafkaError):
    """Some records of the batch broke a per-record rule: the batch is refused and these are named.

    ``record_errors`` is ``[(batch_index, message)]`` in index order, what Produce v8+ answers in
    ``record_errors`` (``LogValidator.processRecordErrors``)."""

    def __init__(self, code: ErrorCode, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors


def validate_produce_records(
    records: bytes | None,
    limits: TopicLimits,
    now_ms: int,
    *,
    partition_name: str = "",
    from_client: bool = True,
) -> tuple[bytearray, BatchHeader]:
    """Check one partition's produce data; return it as a bytearray to append, and its header.

    ``from_client``: the client-only rules of ``LogValidator.validateBatch``
    (base offset 0, no control batches, a sequence for a producer id) apply;
    a coordinator writing its own batches (Kafka's ``AppendOrigin.COORDINATOR``)
    skips them. Raises :class:`KafkaError` (:class:`RejectedRecords` when
    records are named) with the code Kafka returns.
    """
    if not records:
        raise KafkaError(ErrorCode.invalid_record, "produce request carries no record batch")
    data = bytearray(records)
    try:
        headers = list(iter_headers(data))
    except InvalidBatchError as exc:
        code = ErrorCode.corrupt_message if exc.corrupt else ErrorCode.invalid_record
        raise KafkaError(code, str(exc)) from None
    if len(headers) != 1:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"produce v3+ carries exactly one record batch per partition, got {len(headers)}",
        )
    header = headers[0]
    if header.magic != MAGIC_V2:
        raise KafkaError(ErrorCode.invalid_record, f"record batch magic {header.magic}, need 2")
    if header.size > limits.segment_bytes:
        raise KafkaError(
            ErrorCode.record_list_too_large,
            f"batch of {header.size} bytes exceeds segment.bytes {limits.segment_bytes}",
        )
    if header.size > limits.max_message_bytes:
        raise KafkaError(
            ErrorCode.message_too_large,
            f"batch of {header.size} bytes exceeds max.message.bytes {limits.max_message_bytes}",
        )
    if not crc_is_valid(data, header):
        raise KafkaError(ErrorCode.corrupt_message, "record batch CRC32C mismatch")
    if defects.enabled(defects.UNVALIDATED_RECORDS):
        _old_batch_level_checks(data, header, limits, now_ms)
    else:
        _check_batch(header, from_client)
        _validate_records(data, header, limits, now_ms, partition_name)
    if limits.log_append_time:
        _stamp_log_append_time(data, header, now_ms)
    return data, header


def _check_batch(header: BatchHeader, from_client: bool) -> None:
    """``LogValidator.validateBatch`` for a v2 batch: the offsets its header spans are its records."""
    if header.last_offset_delta + 1 <= 0:
        raise KafkaError(ErrorCode.invalid_record, f"batch has an invalid offset range: last offset delta "
                         f"{header.last_offset_delta}")
    if header.records_count <= 0:
        raise KafkaError(
            ErrorCode.invalid_record, f"invalid reported count for record batch: {header.records_count}"
        )
    if header.last_offset_delta + 1 != header.records_count:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"inconsistent batch offset range [0, {header.last_offset_delta}] and count of records "
            f"{header.records_count}",
        )
    if not from_client:
        return
    if header.base_offset != 0:  # UnifiedLog.analyzeAndValidateRecords, for a client's v2 batch
        raise KafkaError(ErrorCode.invalid_record, f"the base offset of a produced batch must be 0, not "
                         f"{header.base_offset}")
    if header.is_control:
        raise KafkaError(ErrorCode.invalid_record, "clients are not allowed to write control records")
    if header.has_producer_id and header.base_sequence < 0:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"invalid sequence number {header.base_sequence} in a record batch with producer id "
            f"{header.producer_id}",
        )


def _walk_spec(header: BatchHeader, limits: TopicLimits, now_ms: int, record_max: int) -> WalkSpec:
    """What the walk checks: ``LogValidator.validateKey`` and ``validateTimestamp`` for this topic."""
    producer_log_append_time = header.is_log_append_time
    if not limits.log_append_time:
        mode = record_walk.TIMESTAMPS_IN_RANGE
    elif producer_log_append_time:
        mode = record_walk.TIMESTAMPS_ALL_BAD
    else:
        mode = record_walk.TIMESTAMPS_UNCHECKED
    return WalkSpec(
        records_count=header.records_count,
        base_timestamp=header.base_timestamp,
        use_override=producer_log_append_time,
        timestamp_override=header.max_timestamp,
        timestamp_mode=mode,
        ts_low=max(_I64_MIN, now_ms - limits.timestamp_before_max_ms),
        ts_high=min(_I64_MAX, now_ms + limits.timestamp_after_max_ms),
        compacted=limits.compacted,
        record_max=record_max,
        errors_max=RECORD_ERRORS_MAX,
    )


def _validate_records(
    data: bytearray, header: BatchHeader, limits: TopicLimits, now_ms: int, partition_name: str
) -> None:
    bad: list[tuple[int, int, int]] = []
    start = header.position + HEADER_SIZE
    end = header.position + header.size
    if header.compression == 0:
        spec = _walk_spec(header, limits, now_ms, record_max=1 << 31)  # a record past the end: INVALID
        result = record_walk.walk_records(data, start, end, True, 0, 0, bad, spec)
    else:
        spec = _walk_spec(header, limits, now_ms, record_max=limits.max_message_bytes)
        bound = inflation_bound(header.records_count, limits.max_message_bytes)
        try:
            result = _walk_inflated(memoryview(data)[start:end], header.compression, bound, bad, spec)
        except InflatedTooLargeError as exc:
            raise KafkaError(ErrorCode.message_too_large, str(exc)) from None
        except InvalidBatchError as exc:
            raise KafkaError(ErrorCode.invalid_record, str(exc)) from None
    if result.failure == record_walk.TOO_LARGE:
        raise KafkaError(ErrorCode.message_too_large, result.message)
    if result.failure != record_walk.OK:
        raise KafkaError(ErrorCode.invalid_record, result.message)
    if result.bad_total:
        raise _rejected(bad, result.bad_total, now_ms, limits, partition_name)


def _walk_inflated(
    payload: memoryview, codec: int, bound: int, bad: list[tuple[int, int, int]], spec: WalkSpec
) -> WalkResult:
    """Walk a compressed batch's records as the chunks of its bounded inflation arrive.

    Holds one chunk and the unfinished record at its end (at most
    ``spec.record_max`` bytes: the walk refuses a longer record from its length
    prefix), and stops at the first invalid record without inflating the rest.
    """
    pending = bytearray()
    index = bad_total = 0
    for chunk in inflate_chunks(codec, payload, bound):
        pending += chunk
        result = record_walk.walk_records(pending, 0, len(pending), False, index, bad_total, bad, spec)
        if result.failure != record_walk.OK:
            return result
        index, bad_total = result.next_record, result.bad_total
        del pending[: result.position]
    return record_walk.walk_records(pending, 0, len(pending), True, index, bad_total, bad, spec)


def _rejected(
    bad: list[tuple[int, int, int]], bad_total: int, now_ms: int, limits: TopicLimits, partition_name: str
) -> RejectedRecords:
    """Kafka's ``processRecordErrors``: INVALID_TIMESTAMP if any record's timestamp failed, else
    INVALID_RECORD; each named record with ``validateKey``'s or ``validateTimestamp``'s message."""
    low = wrap64(now_ms - limits.timestamp_before_max_ms)  # printed as Java prints the window
    high = wrap64(now_ms + limits.timestamp_after_max_ms)
    named: list[tuple[int, str]] = []
    any_timestamp = False
    for index, kind, timestamp in bad:
        if kind == record_walk.NO_KEY:
            named.append((index, f"Compacted topic cannot accept message without key in topic partition "
                                 f"{partition_name}."))
            continue
        any_timestamp = True
        if kind == record_walk.TIMESTAMP_OUT_OF_RANGE:
            named.append((index, f"Timestamp {timestamp} of message with offset {index} is out of range. "
                                 f"The timestamp should be within [{low}, {high}]"))
        else:
            named.append((index, f"Invalid timestamp type in message with offset {index}. Producer should "
                                 f"not set timestamp type to LogAppendTime."))
    if any_timestamp:
        message = "One or more records have been rejected due to invalid timestamp"
        return RejectedRecords(ErrorCode.invalid_timestamp, message, named)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in named[:3])
    return RejectedRecords(
        ErrorCode.invalid_record,
        f"One or more records have been rejected due to {bad_total} record errors in total, and only "
        f"showing the first three errors at most: [{shown}]",
        named,
    )


def _old_batch_level_checks(data: bytearray, header: BatchHeader, limits: TopicLimits, now_ms: int) -> None:
    """The seeded defect UNVALIDATED_RECORDS: records walked only for a compressed batch or a
    compacted topic, timestamps read from the batch header only, the count checked only as
    ``lastOffsetDelta >= recordsCount - 1``. Kept small and as it was, so the checks can be shown
    to catch it."""
    if header.records_count <= 0 or header.last_offset_delta < header.records_count - 1:
        raise KafkaError(ErrorCode.invalid_record, f"batch claims {header.records_count} records")
    if header.is_control:
        raise KafkaError(ErrorCode.invalid_record, "clients may not produce control batches")
    if header.compression or limits.compacted:
        try:
            for record in iter_records(data, header):
                if limits.compacted and record.key is None:
                    raise KafkaError(
                        ErrorCode.invalid_record, "compacted topic cannot accept a record without a key"
                    )
        except InvalidBatchError as exc:
            raise KafkaError(ErrorCode.invalid_record, str(exc)) from None
    if limits.log_append_time:
        return
    if header.max_timestamp > now_ms + limits.timestamp_after_max_ms:
        raise KafkaError(ErrorCode.invalid_timestamp, f"timestamp {header.max_timestamp} is too far ahead")
    low = min(header.base_timestamp, header.max_timestamp)
    if 0 <= low < now_ms - limits.timestamp_before_max_ms and limits.timestamp_before_max_ms < 2**63 - 1:
        raise KafkaError(ErrorCode.invalid_timestamp, f"timestamp {low} is too far behind")


def _stamp_log_append_time(data: bytearray, header: BatchHeader, now_ms: int) -> None:
    """Set the timestamp type bit and maxTimestamp to the broker's time, then re-sign the batch."""
    pos = header.position
    _I16.pack_into(data, pos + 21, header.attributes | TIMESTAMP_TYPE_BIT)
    _I64.pack_into(data, pos + 35, now_ms)
    _U32.pack_into(
        data, pos + 17, crc32c(memoryview(data)[pos + 21 : pos + LOG_OVERHEAD + header.batch_length])
    )
