"""One log segment: ``<base>.log`` with its ``.index`` and ``.timeindex`` (Kafka's ``LogSegment``).

The ``.log`` file holds record batches exactly as appended, back to back.
Every batch in it has offsets at or above the segment's base offset and at
most ``2**31 - 1`` above it, so the indexes can store 4-byte relative
offsets. The segment knows its size in bytes and, once scanned or appended
to, its next offset and largest timestamp.

Reads never copy records: they walk batch *headers* (a small ``pread`` per
step, starting from the offset index's floor entry) to find where a range
starts and ends, and return that byte range. Recovery is the one place that
reads whole batches: it checks each one's length and CRC32C and cuts the
file at the first byte that is not a whole, valid batch.

The files' descriptors come from the bounded pool (:mod:`.descriptors`):
a segment holds none while idle, so the partition count never decides how
many files the broker keeps open. Not thread-safe; the partition log
serialises calls.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass

from reference_impl.protocol.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatchError,
    crc_is_valid,
    parse_header,
)

from .api import FileRegion
from .descriptors import POOL, PooledFile
from .files import pread_exact, pwrite_all, remove_if_exists
from .index import OffsetIndex, TimeIndex
from .timestamps import first_record_at_or_after

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"

MAX_RELATIVE_OFFSET = 2**31 - 1
_SCAN_CHUNK = 8192
_RECOVERY_CHUNK = 1 << 20
_APPEND_MARKS = 64
"""How many recent appends :meth:`LogSegment.locate` remembers the start of."""


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's name for a segment file: the base offset as 20 zero-padded digits."""
    return f"{base_offset:020d}{suffix}"


def base_offset_of(name: str) -> int | None:
    """The base offset a segment file name encodes, or None if it is not one."""
    stem = name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isascii() and stem.isdigit() else None


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    """What recovering a segment found: bytes cut from its tail, and why."""

    truncated_bytes: int
    reason: str


class LogSegment:
    """A segment's files and what is known about them in memory."""

    def __init__(self, directory: str, base_offset: int, created_ms: int) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log_path = os.path.join(directory, file_name(base_offset, LOG_SUFFIX))
        self._file = PooledFile(self.log_path)
        self.size = os.fstat(self._file.fd()).st_size
        self.file_id = self._file.file_id
        """The inode: a cleaned segment reuses the name, never the file (see :class:`FileRegion`)."""
        self.offset_index = OffsetIndex(os.path.join(directory, file_name(base_offset, INDEX_SUFFIX)),
                                        base_offset)
        self.time_index = TimeIndex(os.path.join(directory, file_name(base_offset, TIME_INDEX_SUFFIX)),
                                    base_offset)
        self.created_ms = created_ms
        self.next_offset = base_offset
        """Offset after the last batch; exact for a segment that was appended to, scanned or recovered."""
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self._bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        self._first_timestamp_known = False
        self._mark_offsets: list[int] = []
        self._mark_positions: list[int] = []
        """The latest appends' (offset before the append, first byte), oldest first: an in-memory
        floor finer than the offset index, so reading at the tail (followers, caught-up consumers,
        every acks=all round trip) walks one batch header instead of up to ``index.interval.bytes``
        of them. Appends only grow both; truncation and recovery forget them."""

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path!r}, size={self.size})"

    # -- appending -----------------------------------------------------------------------------

    def can_hold_offset(self, offset: int) -> bool:
        """Whether ``offset`` fits the indexes' 4-byte relative offsets."""
        return 0 <= offset - self.base_offset <= MAX_RELATIVE_OFFSET

    def append(self, data: bytes | bytearray | memoryview, last_offset: int, max_timestamp: int,
               offset_of_max_timestamp: int, index_interval_bytes: int) -> None:
        """Write batches at the end; index them if ``index.interval.bytes`` passed since the last entry.

        One entry maps the append's last offset to its first byte, as
        Kafka's ``LogSegment.append`` does; a lookup's floor is still a batch start.
        """
        if not data:
            return
        position = self.size
        if position == 0:
            self._rolling_based_timestamp = max_timestamp
            self._first_timestamp_known = True
        try:
            pwrite_all(self._file.fd(), data, position)
        except OSError:
            os.ftruncate(self._file.fd(), position)  # no half-written batch stays behind (ENOSPC, EIO)
            raise
        self.size = position + len(data)
        if len(self._mark_offsets) >= 2 * _APPEND_MARKS:
            del self._mark_offsets[:_APPEND_MARKS], self._mark_positions[:_APPEND_MARKS]
        self._mark_offsets.append(self.next_offset)  # every batch before ``position`` ends below it
        self._mark_positions.append(position)
        self.next_offset = last_offset + 1
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, offset_of_max_timestamp
        if self._bytes_since_last_index_entry > index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += len(data)

    def rolling_based_timestamp(self) -> int | None:
        """The largest timestamp of the segment's first append (``segment.ms`` counts from it)."""
        if not self._first_timestamp_known:
            self._first_timestamp_known = True
            first = next(self.scan(0), None)
            self._rolling_based_timestamp = first[1].max_timestamp if first else None
        return self._rolling_based_timestamp

    def time_waited_for_roll(self, now_ms: int, incoming_max_timestamp: int) -> int:
        """Kafka's ``timeWaitedForRoll``: by record timestamps when there are any, else since creation."""
        first = self.rolling_based_timestamp()
        if first is not None and first >= 0:
            return incoming_max_timestamp - first
        return now_ms - self.created_ms

    def on_become_inactive(self) -> None:
        """A rolled segment's time index ends with its largest timestamp, as Kafka's does."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    # -- walking batch headers ---------------------------------------------------------------

    def scan(self, position: int, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(file position, header) of each whole batch from ``position`` (a batch start) to ``end``.

        Reads headers only, a chunk at a time. Stops quietly at anything that
        is not a whole batch: only recovery judges the bytes.
        """
        end = self.size if end is None else min(end, self.size)
        buf = b""
        buf_start = position
        while position + LOG_OVERHEAD <= end:
            rel = position - buf_start
            if rel + HEADER_SIZE > len(buf):
                buf = pread_exact(self._file.fd(), min(_SCAN_CHUNK, end - position), position)
                buf_start, rel = position, 0
            try:
                header = parse_header(buf, rel)
            except InvalidBatchError:
                return
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + header.size > end:
                return
            yield position, header
            position += header.size

    def locate(self, offset: int) -> tuple[int, int] | None:
        """(position, base offset) of the first batch whose last offset is at or after ``offset``."""
        _, start = self.offset_index.lookup(offset)
        i = bisect.bisect_right(self._mark_offsets, offset) - 1
        if i >= 0 and self._mark_positions[i] > start:
            start = self._mark_positions[i]
        for position, header in self.scan(start):
            if header.last_offset >= offset:
                return position, header.base_offset
        return None

    def read_region(self, start: int, max_bytes: int, max_offset: int | None,
                    min_one_batch: bool) -> tuple[FileRegion | None, bool]:
        """Whole batches from ``start`` (a batch position) within ``max_bytes``, below ``max_offset``.

        Returns the region (None if nothing fits) and whether the walk
        stopped early (size or offset limit) rather than at the segment end.
        The end is found from the offset index's entry nearest the size
        limit, so a large read walks a few headers, not all of them.
        """
        size_now = self.size
        limit = size_now if max_bytes >= size_now - start else start + max(max_bytes, 0)
        stopped = limit < size_now
        if max_offset is not None:
            barrier = self._first_position_at_or_after(max_offset, start)
            if barrier < limit:
                limit, stopped = barrier, True
        end = max(start, self.offset_index.floor_position(limit))
        for position, header in self.scan(end, limit):
            end = position + header.size
        if end == start and min_one_batch:
            first = next(self.scan(start), None)
            if first is not None and (max_offset is None or first[1].base_offset < max_offset):
                end = start + first[1].size
        if end == start:
            return None, stopped
        return FileRegion(self.log_path, start, end - start, self.file_id), stopped or end < size_now

    def _first_position_at_or_after(self, offset: int, start: int) -> int:
        """Position of the first batch (from ``start``) whose base offset is at or above ``offset``."""
        _, from_index = self.offset_index.lookup(offset)
        for position, header in self.scan(max(start, from_index)):
            if header.base_offset >= offset:
                return position
        return self.size

    def headers_from(self, offset: int) -> list[BatchHeader]:
        """Headers (position 0, as parsed alone) of batches whose last offset is at or after ``offset``."""
        found = self.locate(offset)
        if found is None:
            return []
        return [header._replace(position=0) for _, header in self.scan(found[0])]

    # -- timestamps --------------------------------------------------------------------------

    def load_tail(self, *, from_time_entry: bool = False) -> None:
        """Next offset and largest timestamp from the indexes plus the batches after their last entries.

        After a clean close the time index's last entry is the segment's
        largest timestamp, so only the batches after the offset index's last
        entry are read (Kafka's ``readNextOffset``). ``from_time_entry``
        re-reads from the time index's last entry instead, as Kafka's
        ``loadLargestTimestamp`` does after a truncation.
        """
        ts, ts_offset = self.time_index.last_entry
        self.max_timestamp, self.offset_of_max_timestamp = ts, ts_offset
        start = self.offset_index.lookup(ts_offset)[1] if from_time_entry else self.offset_index.last_entry[1]
        self.next_offset = self.base_offset
        for _, header in self.scan(start):
            self.next_offset = header.next_offset
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset

    def largest_timestamp(self) -> int:
        """For ``retention.ms``: the largest record timestamp, else the file's modification time."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def find_offset_by_timestamp(self, timestamp: int, min_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``timestamp`` and ``min_offset``."""
        _, indexed_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(indexed_offset, min_offset))
        for batch_position, header in self.scan(position):
            if header.max_timestamp < timestamp or header.last_offset < min_offset:
                continue
            batch = pread_exact(self._file.fd(), header.size, batch_position)
            found = first_record_at_or_after(batch, timestamp, min_offset)
            if found is not None:
                return found
        return None

    def max_timestamp_from(self, offset: int) -> tuple[int, int] | None:
        """(largest timestamp, last offset of its first batch) over batches ending at or after ``offset``."""
        found = self.locate(offset)
        best: tuple[int, int] | None = None
        for _, header in self.scan(found[0]) if found is not None else ():
            if best is None or header.max_timestamp > best[0]:
                best = (header.max_timestamp, header.last_offset)
        return best

    def record_offset_of_timestamp(self, timestamp: int, batch_last_offset: int, min_offset: int) -> int:
        """Offset of the first record at or after ``min_offset`` carrying ``timestamp`` in the batch
        ending at ``batch_last_offset``; that last offset if no record qualifies."""
        found = self.locate(batch_last_offset)
        if found is None:
            return batch_last_offset
        header = parse_header(pread_exact(self._file.fd(), HEADER_SIZE, found[0]))
        batch = pread_exact(self._file.fd(), header.size, found[0])
        hit = first_record_at_or_after(batch, timestamp, min_offset)
        return hit[0] if hit is not None and hit[1] == timestamp else batch_last_offset

    # -- truncation and recovery -------------------------------------------------------------

    def _forget_marks(self) -> None:
        self._mark_offsets.clear()
        self._mark_positions.clear()

    def truncate_to(self, offset: int) -> int:
        """Drop batches whose last offset is at or after ``offset``; returns the bytes removed."""
        found = self.locate(offset)
        position = self.size if found is None else found[0]
        self._forget_marks()
        self.offset_index.truncate_to(offset)
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to(offset)
        removed = self.size - position
        if removed:
            os.ftruncate(self._file.fd(), position)
            self.size = position
        if self.size == 0:
            self._rolling_based_timestamp = None
            self._first_timestamp_known = True
        self._bytes_since_last_index_entry = 0
        self.load_tail(from_time_entry=True)
        return removed

    def recover(self, index_interval_bytes: int) -> RecoveryResult:
        """Rebuild both indexes by scanning every batch; cut the file at the first bad byte.

        A batch is kept when its header is whole, its length fits the file,
        its CRC32C matches, its offsets continue the segment's (at or above
        the previous batch's next offset) and fit 4-byte relative offsets.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self._forget_marks()
        file_size = os.fstat(self._file.fd()).st_size
        valid = 0
        last_entry_position = 0
        expected = self.base_offset
        max_ts, offset_of_max_ts = -1, self.base_offset
        buf = b""
        buf_start = 0
        reason = ""
        while valid < file_size:
            rel = valid - buf_start
            if rel + HEADER_SIZE > len(buf):
                buf = pread_exact(self._file.fd(), min(_RECOVERY_CHUNK, file_size - valid), valid)
                buf_start, rel = valid, 0
            try:
                header = parse_header(buf, rel)
            except InvalidBatchError as exc:
                reason = str(exc)
                break
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or valid + header.size > file_size:
                reason = f"batch at {valid} declares {header.size} bytes, {file_size - valid} remain"
                break
            if rel + header.size > len(buf):
                buf = pread_exact(self._file.fd(), max(_RECOVERY_CHUNK, header.size), valid)
                buf_start, rel = valid, 0
                header = parse_header(buf, 0)
            if not crc_is_valid(buf, header):
                reason = f"batch at {valid} fails its CRC32C"
                break
            if (header.base_offset < expected or header.last_offset_delta < 0
                    or not self.can_hold_offset(header.last_offset)):
                reason = f"batch at {valid} has offsets {header.base_offset}-{header.last_offset}"
                break
            if header.max_timestamp > max_ts:
                max_ts, offset_of_max_ts = header.max_timestamp, header.last_offset
            if valid - last_entry_position > index_interval_bytes:
                self.offset_index.append(header.last_offset, valid)
                self.time_index.maybe_append(max_ts, offset_of_max_ts)
                last_entry_position = valid
            expected = header.next_offset
            valid += header.size
        truncated = file_size - valid
        if truncated:
            os.ftruncate(self._file.fd(), valid)
        self.size = valid
        self.next_offset = expected
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, offset_of_max_ts
        if max_ts >= 0:
            self.time_index.maybe_append(max_ts, offset_of_max_ts)
        self._bytes_since_last_index_entry = valid - last_entry_position
        self._first_timestamp_known = False
        return RecoveryResult(truncated, reason)

    # -- durability and lifecycle ------------------------------------------------------------

    def flush(self) -> None:
        os.fsync(self._file.fd())
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        """Close the files, ending the time index with the largest timestamp (a clean close)."""
        if self._file.closed:
            return
        self.on_become_inactive()
        self.close_without_flush()

    def close_without_flush(self) -> None:
        """Drop the file handles and write nothing more (a crash, or before deleting).

        Every way a segment ends passes here: :meth:`close`, :meth:`delete`
        (retention, DeleteRecords, truncation, a roll over an empty segment),
        the cleaner's swap and a deleted topic's :meth:`FileLog.abandon
        <reference_impl.log.partition_log.FileLog.abandon>`. So the shared
        readers the fetch path opened on the ``.log`` file (``sendfile``,
        :func:`~.files.read_region`) are closed here too, pinned ones when
        their send ends: a removed file is never held open.
        """
        self._file.close()
        self.offset_index.close()
        self.time_index.close()
        POOL.close_readers(self.log_path, self.file_id)

    def delete(self) -> None:
        """Remove the segment's files (retention, truncation, topic deletion)."""
        self.close_without_flush()
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            remove_if_exists(path)
