"""Produce-side validation of record batches, as Kafka's ``LogValidator`` does it.

Batch level only, on the hot path: magic, length, CRC32C, size limits,
timestamps from the header. Records are walked only when a feature needs
it: a compressed batch (Kafka decompresses to validate), a compacted topic
(every record needs a key), a LogAppendTime topic (timestamps rewritten,
CRC recomputed).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from crc32c import crc32c

from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.records import (
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


def validate_produce_records(
    records: bytes | None, limits: TopicLimits, now_ms: int
) -> tuple[bytearray, BatchHeader]:
    """Check one partition's produce data; return it as a bytearray to append, and its header.

    Raises :class:`KafkaError` with the code Kafka returns: CORRUPT_MESSAGE
    for a torn batch or CRC mismatch, INVALID_RECORD for anything else
    malformed (Produce v3+ carries exactly one magic-v2 batch),
    MESSAGE_TOO_LARGE above ``max.message.bytes``, RECORD_LIST_TOO_LARGE
    above ``segment.bytes``, INVALID_TIMESTAMP outside the allowed window.
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
    if header.records_count <= 0 or header.last_offset_delta < header.records_count - 1:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"batch claims {header.records_count} records in {header.last_offset_delta + 1} offsets",
        )
    if header.is_control:
        raise KafkaError(ErrorCode.invalid_record, "clients may not produce control batches")
    if header.compression or limits.compacted:
        _validate_records(data, header, limits)
    if limits.log_append_time:
        _stamp_log_append_time(data, header, now_ms)
    else:
        _check_timestamps(header, limits, now_ms)
    return data, header


def _validate_records(data: bytearray, header: BatchHeader, limits: TopicLimits) -> None:
    try:
        for record in iter_records(data, header):
            if limits.compacted and record.key is None:
                raise KafkaError(
                    ErrorCode.invalid_record, "compacted topic cannot accept a record without a key"
                )
    except InvalidBatchError as exc:
        raise KafkaError(ErrorCode.invalid_record, str(exc)) from None


def _check_timestamps(header: BatchHeader, limits: TopicLimits, now_ms: int) -> None:
    """KIP-937: CreateTime must lie within [now - before.max, now + after.max]."""
    if header.max_timestamp > now_ms + limits.timestamp_after_max_ms:
        raise KafkaError(
            ErrorCode.invalid_timestamp,
            f"timestamp {header.max_timestamp} is more than "
            f"message.timestamp.after.max.ms ahead of the broker's {now_ms}",
        )
    low = min(header.base_timestamp, header.max_timestamp)
    if (
        low >= 0
        and limits.timestamp_before_max_ms < 2**63 - 1
        and low < now_ms - limits.timestamp_before_max_ms
    ):
        raise KafkaError(
            ErrorCode.invalid_timestamp,
            f"timestamp {low} is more than message.timestamp.before.max.ms behind the broker",
        )


def _stamp_log_append_time(data: bytearray, header: BatchHeader, now_ms: int) -> None:
    """Set the timestamp type bit and maxTimestamp to the broker's time, then re-sign the batch."""
    pos = header.position
    _I16.pack_into(data, pos + 21, header.attributes | TIMESTAMP_TYPE_BIT)
    _I64.pack_into(data, pos + 35, now_ms)
    _U32.pack_into(
        data, pos + 17, crc32c(memoryview(data)[pos + 21 : pos + LOG_OVERHEAD + header.batch_length])
    )
