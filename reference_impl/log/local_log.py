"""The sequence of a partition's local segments (Kafka's ``LocalLog``).

Appends go to the active segment, rolling a new one first when Kafka would:
the append would push the segment past ``segment.bytes``; ``segment.ms``
has passed since the segment's first timestamp; an index is full; or the
append's last offset no longer fits 4-byte relative offsets. Reads walk the
segments in order and return one file region per segment touched. The
recovery point (everything below it is on disk) moves up on flush and down
on truncation.

Knows nothing of the log start offset, leader epochs or retention rules:
the partition log on top owns those. Not thread-safe.
"""

from __future__ import annotations

import logging
import os

from .api import Chunk, ReadResult
from .config import LogConfig
from .files import fsync_dir, remove_if_exists
from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment, file_name
from .segments import LogSegments

log = logging.getLogger(__name__)


class LocalLog:
    def __init__(self, directory: str, config: LogConfig, segments: LogSegments, recovery_point: int) -> None:
        if not len(segments):
            raise ValueError(f"{directory}: a local log needs at least one segment")
        self.directory = directory
        self.config = config
        self.segments = segments
        self.recovery_point = recovery_point

    @property
    def log_end_offset(self) -> int:
        return self.segments.active.next_offset

    @property
    def size_bytes(self) -> int:
        return self.segments.total_size()

    # -- appends and rolls ---------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, first_offset: int, last_offset: int,
               max_timestamp: int, offset_of_max_timestamp: int, now_ms: int) -> list[LogSegment]:
        """Write batches already carrying their offsets, rolling first if Kafka would.

        Returns the segment rolled for this append (empty if none).
        """
        segment = self.segments.active
        rolled: list[LogSegment] = []
        if self.should_roll(segment, len(data), last_offset, max_timestamp, now_ms):
            segment = self.roll(first_offset, now_ms)
            rolled.append(segment)
        segment.append(data, last_offset, max_timestamp, offset_of_max_timestamp,
                       self.config.index_interval_bytes)
        return rolled

    def should_roll(self, segment: LogSegment, incoming_bytes: int, last_offset: int,
                    max_timestamp: int, now_ms: int) -> bool:
        """Kafka's ``LogSegment.shouldRoll``, never rolling an empty segment into another empty one."""
        if not segment.can_hold_offset(last_offset):
            return True
        if segment.size == 0:
            return False
        config = self.config
        return (segment.size > config.segment_bytes - incoming_bytes
                or segment.time_waited_for_roll(now_ms, max_timestamp) > config.max_segment_ms
                or len(segment.offset_index) >= config.max_offset_index_entries
                or len(segment.time_index) >= config.max_time_index_entries)

    def roll(self, base_offset: int, now_ms: int) -> LogSegment:
        """Start a new active segment at ``max(base_offset, LEO)``; the old one becomes read-only.

        Kafka flushes a rolled segment (asynchronously, right after the roll);
        here it is flushed before the new segment takes any data, so only the
        active segment can ever hold bytes a crash may lose, and recovery
        yields a prefix of what was written.
        """
        base_offset = max(base_offset, self.log_end_offset)
        old = self.segments.active
        if old.base_offset == base_offset and old.size == 0:
            return old
        if old.base_offset == base_offset:
            raise ValueError(f"{self.directory}: cannot roll onto the non-empty segment {old.base_offset}")
        if old.size == 0:
            self.segments.remove(old.base_offset)
            old.delete()
        else:
            old.on_become_inactive()
            self.flush(self.log_end_offset)
        segment = self.new_segment(base_offset, now_ms)
        self.segments.add(segment)
        log.debug("%s: rolled a new segment at offset %d", self.directory, base_offset)
        return segment

    def new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        """Fresh files for a segment at ``base_offset``, replacing leftovers of an older one."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            remove_if_exists(os.path.join(self.directory, file_name(base_offset, suffix)))
        segment = LogSegment(self.directory, base_offset, now_ms)
        segment.next_offset = base_offset
        return segment

    # -- reads ---------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool) -> ReadResult:
        """Whole batches from the one holding ``offset``: one region per segment touched."""
        chunks: list[Chunk] = []
        size = 0
        first = -1
        position: int | None = None
        for segment in self.segments.from_offset(offset):
            if position is None:
                found = segment.locate(offset)
                if found is None:
                    continue
                position, first = found
            if not segment.size:
                position = 0
                continue  # emptied by the cleaner: the next segment holds what follows
            region, stopped = segment.read_region(position, max_bytes - size, max_offset,
                                                  min_one_batch and not chunks)
            if region is not None:
                chunks.append(region)
                size += region.length
            if region is None or stopped:
                break
            position = 0
        if not chunks:
            return ReadResult.empty()
        return ReadResult(tuple(chunks), size, first)

    # -- truncation and deletion ---------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Drop every batch whose last offset is at or after ``offset``; the LEO becomes ``offset``.

        As Kafka's ``LocalLog.truncateTo``: a batch straddling ``offset`` goes
        whole, and the log end is ``offset`` even if the data now ends below
        it (a gap, or that batch); a reopen counts the LEO from the data.
        """
        doomed = self.segments.above(offset)
        for segment in doomed:
            self.segments.remove(segment.base_offset)
            segment.delete()
        active = self.segments.active
        active.truncate_to(offset)
        active.next_offset = offset
        fsync_dir(self.directory)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        """Delete every segment; the log restarts empty at ``offset``."""
        for segment in self.segments.clear():
            segment.delete()
        self.segments.add(self.new_segment(offset, now_ms))
        fsync_dir(self.directory)
        self.recovery_point = offset

    def delete_oldest(self, count: int, now_ms: int) -> list[LogSegment]:
        """Delete the ``count`` oldest segments, rolling first if that would leave none."""
        if count >= len(self.segments):
            self.roll(self.log_end_offset, now_ms)
        doomed = list(self.segments)[:count]
        for segment in doomed:
            self.segments.remove(segment.base_offset)
            segment.delete()
        return doomed

    # -- durability ----------------------------------------------------------------------------

    def flush(self, offset: int) -> None:
        """fsync the segments holding offsets in [recovery point, ``offset``); the recovery point moves up.

        The directory is fsynced too when a flushed segment was created since
        the last flush, so its name survives a crash (Kafka's ``LocalLog.flush``).
        """
        offset = min(offset, self.log_end_offset)
        if offset <= self.recovery_point:
            return
        new_files = False
        for segment in self.segments.from_offset(self.recovery_point):
            if segment.base_offset >= offset:
                break
            segment.flush()
            new_files = new_files or segment.base_offset >= self.recovery_point
        if new_files:
            fsync_dir(self.directory)
        self.recovery_point = offset

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    def close_without_flush(self) -> None:
        for segment in self.segments:
            segment.close_without_flush()
