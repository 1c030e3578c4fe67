"""A partition's durable log in Kafka's on-disk format (Kafka's ``UnifiedLog``, local part).

:class:`FileLog` keeps the :class:`reference_impl.log.api.PartitionLog`
contract on top of a :class:`~reference_impl.log.local_log.LocalLog`. It owns
what spans segments: the log start offset, the leader-epoch cache (persisted
in ``leader-epoch-checkpoint`` after every change), the flush policy
(``flush.messages``, ``flush.ms``) and retention (``retention.ms``,
``retention.bytes``, and segments wholly below the log start offset).

The append path stays at the batch level: parse headers, rewrite offsets and
epochs in place, one write per append, an index entry every
``index.interval.bytes``. Reads return :class:`~reference_impl.log.api.FileRegion`
chunks covering only bytes already written when the read ran.

Durable offsets the data directory tracks (recovery point, log start
offset) are reported through ``on_checkpoint_needed`` whenever they move
down or the log start moves, so the log manager can rewrite its checkpoint
files before anything new lands past the old values. Not thread-safe: the
broker serialises calls to one log.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable

from reference_impl.protocol.records import (
    BatchHeader,
    iter_headers,
    set_base_offset,
    set_partition_leader_epoch,
)

from .api import AppendInfo, EpochEntry, OffsetOutOfRangeError, ReadResult
from .batches import append_info, check_follower_offsets
from .checkpoints import LEADER_EPOCH_CHECKPOINT, read_epochs, write_epochs, write_partition_metadata
from .config import LogConfig
from .epochs import LeaderEpochCache
from .loader import LoadReport, load_segments
from .local_log import LocalLog
from .segment import MAX_RELATIVE_OFFSET, LogSegment

log = logging.getLogger(__name__)


class FileLog:
    """A partition log stored in ``directory``. Open it with :meth:`open`."""

    def __init__(self, directory: str, config: LogConfig, local: LocalLog, log_start_offset: int,
                 epochs: LeaderEpochCache, now_ms: int, load_report: LoadReport) -> None:
        self.directory = directory
        self.config = config
        self.local = local
        self._log_start_offset = log_start_offset
        self._epochs = epochs
        self.version = 0
        """:attr:`PartitionLog.version`: moved by ``_append``, ``_assign``, the truncations and
        ``_set_log_start``, through which every change of offsets or epochs goes."""
        self._last_flush_ms = now_ms
        self._now_ms = now_ms
        """The latest time a caller passed in; calls without a time (follower appends) use it."""
        self.load_report = load_report
        self.on_checkpoint_needed: Callable[[FileLog], None] | None = None
        """Called when the recovery point moved down or the log start offset moved."""
        self._unwritten_topic_id: uuid.UUID | None = None
        self.knows_topic_id = False
        """Whether ``partition.metadata`` names the topic id, or one is recorded to be written."""
        self._closed = False

    @classmethod
    def open(cls, directory: str, config: LogConfig, now_ms: int, *, recovery_point: int = 0,
             log_start_offset: int = 0, clean_shutdown: bool = False) -> FileLog:
        """Load (after a crash: recover) the log in ``directory``, creating it if absent.

        ``recovery_point`` and ``log_start_offset`` are the data directory's
        checkpointed values for this partition; ``clean_shutdown`` says the
        clean-shutdown marker was there, so nothing needs scanning.
        """
        segments, recovered_to, report = load_segments(
            directory, config, recovery_point=recovery_point, clean_shutdown=clean_shutdown,
            start_offset=log_start_offset, now_ms=now_ms)
        local = LocalLog(directory, config, segments, recovered_to)
        end = local.log_end_offset
        start = min(max(log_start_offset, segments.first.base_offset), end)
        epochs = cls._load_epochs(directory, local)
        opened = cls(directory, config, local, start, epochs, now_ms, report)
        changed = epochs.truncate_from_end(end)
        changed = epochs.truncate_from_start(start) or changed
        if changed or (epochs.entries() and not os.path.exists(opened._epoch_path)):
            opened._write_epochs()  # a new, empty log has nothing to keep: no file is an empty cache
        local.recovery_point = max(local.recovery_point, start)
        return opened

    @staticmethod
    def _load_epochs(directory: str, local: LocalLog) -> LeaderEpochCache:
        """The checkpointed cache; rebuilt from the batches' epochs if the file is missing.

        A file that cannot be read raises :class:`CheckpointError`, as Kafka's
        ``LeaderEpochCheckpointFile`` does: the batches do not hold an epoch
        whose leader wrote nothing, and a cache missing it answers
        OffsetsForLeaderEpoch wrongly.
        """
        path = os.path.join(directory, LEADER_EPOCH_CHECKPOINT)
        stored = read_epochs(path)
        if stored is not None:
            return LeaderEpochCache(EpochEntry(epoch, offset) for epoch, offset in stored)
        cache = LeaderEpochCache()
        for segment in local.segments:
            for _, header in segment.scan(0):
                cache.assign(header.partition_leader_epoch, header.base_offset)
        return cache

    # -- offsets -------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.local.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self.local.recovery_point

    @property
    def size_bytes(self) -> int:
        """Bytes in all segments (DescribeLogDirs, ``retention.bytes``)."""
        return self.local.size_bytes

    @property
    def segments(self) -> list[LogSegment]:
        """The segments, oldest first (for tests, ``dump-log`` and DescribeLogDirs)."""
        return list(self.local.segments)

    def update_config(self, config: LogConfig) -> None:
        """Apply changed topic configs (AlterConfigs); they govern the next roll, retention and flush."""
        self.config = config
        self.local.config = config

    # -- appends -------------------------------------------------------------------------------

    def append_as_leader(self, records: bytearray, leader_epoch: int, now_ms: int) -> AppendInfo:
        headers = list(iter_headers(records))
        offset = self.log_end_offset
        rewritten = []
        for h in headers:
            set_base_offset(records, h, offset)
            set_partition_leader_epoch(records, h, leader_epoch)
            rewritten.append(_moved(h, offset, leader_epoch))
            offset += h.last_offset_delta + 1
        if rewritten:
            self._assign(leader_epoch, rewritten[0].base_offset)
        self._now_ms = max(self._now_ms, now_ms)
        return self._append(records, rewritten, now_ms)

    def append_as_follower(self, records: bytes) -> AppendInfo:
        headers = list(iter_headers(records))
        check_follower_offsets(headers, self.log_end_offset)
        for h in headers:
            if h.partition_leader_epoch > self._epochs.latest_epoch:
                self._assign(h.partition_leader_epoch, h.base_offset)
        return self._append(records, headers, self._now_ms)

    def _append(self, data: bytes | bytearray, headers: list[BatchHeader], now_ms: int) -> AppendInfo:
        info = append_info(headers, self.log_end_offset)
        if not headers:
            return info
        self.version += 1
        self.write_topic_id()
        if info.last_offset - info.first_offset > MAX_RELATIVE_OFFSET:
            view = memoryview(data)
            for h in headers:  # offsets too far apart for one segment: place batch by batch
                self.local.append(view[h.position : h.position + h.size], h.base_offset, h.last_offset,
                                  h.max_timestamp, h.last_offset, now_ms)
        else:
            self.local.append(data, info.first_offset, info.last_offset, info.max_timestamp,
                              info.offset_of_max_timestamp, now_ms)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush()
        return info

    def roll(self, now_ms: int) -> None:
        """Start a new segment at the LEO and flush the old ones (Kafka flushes a rolled segment)."""
        self._now_ms = max(self._now_ms, now_ms)
        if self.local.segments.active.size:
            self.local.roll(self.log_end_offset, now_ms)

    # -- reads ---------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> ReadResult:
        if offset < self._log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self.log_end_offset)
        if offset == self.log_end_offset:
            return ReadResult.empty()
        return self.local.read(offset, max_bytes, max_offset, min_one_batch)

    def batch_headers(self, start_offset: int = 0) -> list[BatchHeader]:
        """Headers of batches whose last offset is at or after ``start_offset`` and the log start offset."""
        start = max(start_offset, self._log_start_offset)
        out: list[BatchHeader] = []
        for segment in self.local.segments.from_offset(start):
            out.extend(segment.headers_from(start))
        return out

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        for segment in self.local.segments:
            if segment.max_timestamp < timestamp_ms or segment.next_offset <= self._log_start_offset:
                continue
            found = segment.find_offset_by_timestamp(timestamp_ms, self._log_start_offset)
            if found is not None:
                return found
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset of the first record carrying the largest timestamp, that timestamp), as Kafka 3.8+.

        Only batches at or after the log start offset count.
        """
        best: tuple[int, int, LogSegment] | None = None  # (timestamp, batch last offset, segment)
        start = self._log_start_offset
        for segment in self.local.segments:
            if not segment.size or self.local.segments.upper_bound_of(segment) <= start:
                continue
            if segment.offset_of_max_timestamp >= start and segment.base_offset >= start:
                candidate: tuple[int, int] | None = (segment.max_timestamp, segment.offset_of_max_timestamp)
            else:
                candidate = segment.max_timestamp_from(start)
            if candidate is not None and (best is None or candidate[0] > best[0]):
                best = (candidate[0], candidate[1], segment)
        if best is None:
            return None
        timestamp, last_offset, segment = best
        return segment.record_offset_of_timestamp(timestamp, last_offset, start), timestamp

    # -- truncation and the log start ----------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        self.version += 1
        if offset >= self.log_end_offset:
            # Nothing to cut, but an epoch that starts at the log end (this replica led it and
            # wrote nothing before losing the leadership) conflicts with the leader's log: drop it.
            if self._epochs.truncate_from_end(self.log_end_offset):
                self._write_epochs()
            return
        if offset < self.local.segments.first.base_offset:
            self.truncate_fully_and_start_at(offset)
            return
        self.local.truncate_to(offset)
        self._log_start_offset = min(self._log_start_offset, self.log_end_offset)
        if self._epochs.truncate_from_end(self.log_end_offset):
            self._write_epochs()
        self._notify()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"cannot restart at negative offset {offset}")
        self.version += 1
        self.local.truncate_fully_and_start_at(offset, self._now_ms)
        self._log_start_offset = offset
        self._epochs.clear()
        self._write_epochs()
        self._notify()

    def advance_log_start_offset(self, offset: int) -> None:
        if offset <= self._log_start_offset:
            return
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self.log_end_offset)
        self._set_log_start(offset)

    def _set_log_start(self, offset: int) -> None:
        self.version += 1
        self._log_start_offset = offset
        self.local.recovery_point = max(self.local.recovery_point, offset)
        if self._epochs.truncate_from_start(offset):
            self._write_epochs()
        self._notify()

    # -- retention -----------------------------------------------------------------------------

    def apply_retention(self, now_ms: int, high_watermark: int | None = None) -> int:
        """Delete whole segments as Kafka's ``deleteOldSegments``; returns how many went.

        In Kafka's order: segments wholly below the log start offset (after
        DeleteRecords), then, with ``cleanup.policy=delete``, the oldest
        segments while the log exceeds ``retention.bytes``, then segments
        whose largest timestamp is more than ``retention.ms`` before
        ``now_ms``. Only segments wholly below ``high_watermark`` (default:
        the LEO) go; an active segment that qualifies is rolled first, and
        the log start offset moves to the first remaining segment.
        """
        self._now_ms = max(self._now_ms, now_ms)
        bound = self.log_end_offset if high_watermark is None else min(high_watermark, self.log_end_offset)
        deleted = self._delete_while(bound, now_ms, lambda s, nxt: nxt is not None
                                     and nxt.base_offset <= self._log_start_offset)
        if self.config.delete_enabled and self.config.retention_bytes >= 0:
            excess = [self.size_bytes - self.config.retention_bytes]

            def over_size(segment: LogSegment, _next: LogSegment | None) -> bool:
                if excess[0] - segment.size >= 0:
                    excess[0] -= segment.size
                    return True
                return False

            deleted += self._delete_while(bound, now_ms, over_size)
        if self.config.delete_enabled and self.config.retention_ms >= 0:
            retention_ms = self.config.retention_ms
            deleted += self._delete_while(bound, now_ms, lambda s, _n: now_ms - s.largest_timestamp()
                                          > retention_ms)
        return deleted

    def _delete_while(self, bound: int, now_ms: int,
                      predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        segments = list(self.local.segments)
        count = 0
        for i, segment in enumerate(segments):
            following = segments[i + 1] if i + 1 < len(segments) else None
            upper = following.base_offset if following is not None else self.log_end_offset
            if following is None and segment.size == 0:
                break
            if upper > bound or not predicate(segment, following):
                break
            count += 1
        if count:
            self.local.delete_oldest(count, now_ms)
            log.info("%s: retention deleted %d segment(s)", self.directory, count)
            first = self.local.segments.first.base_offset
            if first > self._log_start_offset:
                self._set_log_start(first)
        return count

    # -- durability ----------------------------------------------------------------------------

    def record_topic_id(self, topic_id: uuid.UUID) -> None:
        """Keep the topic id for ``partition.metadata``, written (durably) before the first append or
        flush, not now. Kafka's ``PartitionMetadataFile.record`` / ``maybeFlush`` do the same
        (storage/.../checkpoint/PartitionMetadataFile.java, UnifiedLog.maybeFlushMetadataFile): a new
        log's two fsyncs stay off the path that creates it. Creating ``__consumer_offsets`` made
        each node of a cluster write 50 of them, with the epoch checkpoints 200 fsyncs, 1.3 s in
        which the event loop answered no quorum fetch: three elections in a row. Until written, a
        crash leaves no file, and the next open writes the id the metadata image names (no record
        was appended under the old one)."""
        self._unwritten_topic_id = topic_id
        self.knows_topic_id = True

    def write_topic_id(self) -> None:
        """Write a recorded topic id to ``partition.metadata`` if it is not written yet."""
        if self._unwritten_topic_id is not None:
            write_partition_metadata(self.directory, self._unwritten_topic_id)
            self._unwritten_topic_id = None

    def flush(self, offset: int | None = None) -> None:
        self.write_topic_id()
        target = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
        self.local.flush(target)
        self._last_flush_ms = self._now_ms

    def maybe_flush(self, now_ms: int) -> bool:
        """Flush if ``flush.ms`` passed since the last flush (Kafka's log flusher); True if it did."""
        self._now_ms = max(self._now_ms, now_ms)
        if now_ms - self._last_flush_ms < self.config.flush_ms:
            return False
        self.flush()
        self._last_flush_ms = now_ms
        return True

    # -- leader epochs -------------------------------------------------------------------------

    @property
    def _epoch_path(self) -> str:
        return os.path.join(self.directory, LEADER_EPOCH_CHECKPOINT)

    def _write_epochs(self) -> None:
        write_epochs(self._epoch_path, ((e.epoch, e.start_offset) for e in self._epochs.entries()))

    def _assign(self, epoch: int, start_offset: int) -> None:
        self.version += 1
        if self._epochs.assign(epoch, start_offset):
            self._write_epochs()

    def epoch_entries(self) -> list[EpochEntry]:
        return self._epochs.entries()

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        self._assign(epoch, start_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    # -- lifecycle -----------------------------------------------------------------------------

    def _notify(self) -> None:
        if self.on_checkpoint_needed is not None:
            self.on_checkpoint_needed(self)

    def close(self) -> None:
        """Flush everything and close the files: the next open needs no recovery."""
        if self._closed:
            return
        self.flush()
        self.local.close()
        self._closed = True

    def abandon(self) -> None:
        """Drop the file handles without flushing or writing anything: what a killed process leaves."""
        if not self._closed:
            self.local.close_without_flush()
            self._closed = True


def _moved(header: BatchHeader, base_offset: int, epoch: int) -> BatchHeader:
    """The header as rewritten in place: new base offset and partition leader epoch."""
    return header._replace(base_offset=base_offset, partition_leader_epoch=epoch)
