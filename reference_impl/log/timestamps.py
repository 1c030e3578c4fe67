"""Record-level timestamp lookups: the rare path behind ListOffsets by time.

Batch headers carry only the max timestamp, so finding the *first* record at
or after a timestamp means opening the one batch the time index points at.
"""

from __future__ import annotations

from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.records import parse_header


def first_record_at_or_after(
    batch: bytes | bytearray | memoryview, timestamp_ms: int, min_offset: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record in ``batch`` at or after ``timestamp_ms``.

    Records below ``min_offset`` (the log start offset) are skipped: they may
    sit in a batch that DeleteRecords cut through.
    """
    header = parse_header(batch, 0)
    if header.is_log_append_time:
        if header.max_timestamp >= timestamp_ms:
            return max(header.base_offset, min_offset), header.max_timestamp
        return None
    for record in iter_records(batch, header):
        if record.offset >= min_offset and record.timestamp >= timestamp_ms:
            return record.offset, record.timestamp
    return None
