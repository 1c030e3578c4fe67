"""Batch-level rules both logs share: what an append reports, what a follower may append.

Kept apart so the file-backed log and the memory log cannot drift: the
simulator's answers must be the broker's answers.
"""

from __future__ import annotations

from collections.abc import Sequence

from reference_impl.protocol.records import TIMESTAMP_TYPE_BIT, BatchHeader

from .api import AppendInfo


def append_info(headers: Sequence[BatchHeader], next_offset: int) -> AppendInfo:
    """What an append of ``headers`` did (shared by both logs): offsets, timestamps, LogAppendTime."""
    if not headers:
        return AppendInfo(next_offset, next_offset - 1, -1, -1, -1, ())
    max_ts, max_ts_offset = -1, -1
    for h in headers:
        if h.max_timestamp > max_ts:
            max_ts, max_ts_offset = h.max_timestamp, h.last_offset
    stamped = headers[-1].attributes & TIMESTAMP_TYPE_BIT
    return AppendInfo(headers[0].base_offset, headers[-1].last_offset, max_ts, max_ts_offset,
                      headers[-1].max_timestamp if stamped else -1, tuple(headers))


def check_follower_offsets(headers: Sequence[BatchHeader], log_end_offset: int) -> None:
    """A follower append starts at or after the LEO and its offsets increase (Kafka's checks)."""
    expected = log_end_offset
    for h in headers:
        if h.base_offset < expected or h.last_offset_delta < 0:
            raise ValueError(f"follower append has offsets {h.base_offset}-{h.last_offset} where "
                             f"{expected} or later was expected (log end {log_end_offset})")
        expected = h.next_offset
