"""An in-memory partition log with crash semantics, for the simulator and as a model.

Same contract as the file-backed log (:mod:`reference_impl.log.api`), held as a
list of batches. :meth:`MemoryLog.crash` forgets everything past the flushed
offset, as a machine losing its page cache would; the epoch cache survives
only as far as it was flushed too. Offsets, epochs and timestamps follow the
same rules as :class:`reference_impl.log.partition_log.FileLog` (shared in
:mod:`.batches` and :mod:`.epochs`), and the model-based tests hold the two
side by side.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from reference_impl.protocol.records import (
    BatchHeader,
    iter_headers,
    parse_header,
    set_base_offset,
    set_partition_leader_epoch,
)

from .api import AppendInfo, EpochEntry, OffsetOutOfRangeError, ReadResult
from .batches import append_info, check_follower_offsets
from .epochs import LeaderEpochCache
from .timestamps import first_record_at_or_after


@dataclass(slots=True)
class _Batch:
    base_offset: int
    next_offset: int
    max_timestamp: int
    data: bytes


class MemoryLog:
    """A partition log held in memory. See :class:`reference_impl.log.api.PartitionLog`."""

    def __init__(self, start_offset: int = 0) -> None:
        self._batches: list[_Batch] = []
        self._bases: list[int] = []  # base offsets, for bisect
        self._log_start_offset = start_offset
        self._log_end_offset = start_offset
        self._flushed_offset = start_offset
        self._epochs = LeaderEpochCache()
        self._flushed_epochs: list[EpochEntry] = []
        self.version = 0
        """:attr:`PartitionLog.version`: moved by ``_store`` and every method that changes the
        offsets or the epochs."""

    # -- offsets ---------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._flushed_offset

    # -- appends ---------------------------------------------------------------------------

    def append_as_leader(self, records: bytearray, leader_epoch: int, now_ms: int) -> AppendInfo:
        headers = list(iter_headers(records))
        offset = self._log_end_offset
        for h in headers:
            set_base_offset(records, h, offset)
            set_partition_leader_epoch(records, h, leader_epoch)
            offset += h.last_offset_delta + 1
        if headers:
            self.assign_epoch(leader_epoch, self._log_end_offset)
        return self._store(bytes(records), [parse_header(records, h.position) for h in headers])

    def append_as_follower(self, records: bytes) -> AppendInfo:
        headers = list(iter_headers(records))
        check_follower_offsets(headers, self._log_end_offset)
        for h in headers:
            if h.partition_leader_epoch > self._epochs.latest_epoch:
                self.assign_epoch(h.partition_leader_epoch, h.base_offset)
        return self._store(bytes(records), headers)

    def _store(self, data: bytes, headers: list[BatchHeader]) -> AppendInfo:
        for h in headers:
            self._batches.append(
                _Batch(h.base_offset, h.next_offset, h.max_timestamp,
                       data[h.position : h.position + h.size])
            )
            self._bases.append(h.base_offset)
        if headers:
            self.version += 1
            self._log_end_offset = headers[-1].next_offset
        return append_info(headers, self._log_end_offset)

    # -- reads -----------------------------------------------------------------------------

    def _index_of(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (or the first after it)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        if self._batches[i].next_offset <= offset:
            return i + 1
        return i

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        if offset < self._log_start_offset or offset > self._log_end_offset:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self._log_end_offset)
        chunks: list[bytes] = []
        size = 0
        first = -1
        for batch in self._batches[self._index_of(offset) :]:
            if max_offset is not None and batch.base_offset >= max_offset:
                break
            if size + len(batch.data) > max_bytes and not (min_one_batch and not chunks):
                break
            chunks.append(batch.data)
            size += len(batch.data)
            if first < 0:
                first = batch.base_offset
        return ReadResult(tuple(chunks), size, first)

    def batch_headers(self, start_offset: int = 0) -> list[BatchHeader]:
        return [parse_header(b.data) for b in self._batches[self._index_of(start_offset) :]]

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        for batch in self._batches:
            if batch.max_timestamp >= timestamp_ms and batch.next_offset > self._log_start_offset:
                found = first_record_at_or_after(batch.data, timestamp_ms, self._log_start_offset)
                if found is not None:
                    return found
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset of the first record carrying the largest timestamp, that timestamp), as Kafka 3.8+."""
        best: _Batch | None = None
        for batch in self._batches:
            if best is None or batch.max_timestamp > best.max_timestamp:
                best = batch
        if best is None:
            return None
        hit = first_record_at_or_after(best.data, best.max_timestamp, self._log_start_offset)
        if hit is not None and hit[1] == best.max_timestamp:
            return hit
        return (best.next_offset - 1, best.max_timestamp)

    # -- truncation and retention -----------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        self.version += 1
        if offset >= self._log_end_offset:
            # Nothing to cut, but an epoch that starts at the log end (this replica led it and
            # wrote nothing before losing the leadership) conflicts with the leader's log: drop it.
            self._epochs.truncate_from_end(self._log_end_offset)
            self._flushed_epochs = [e for e in self._flushed_epochs if e.start_offset < self._log_end_offset]
            return
        if offset < self._log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        i = self._index_of(offset)
        # As Kafka: a batch straddling ``offset`` goes whole, and the log ends at ``offset``.
        new_end = offset
        del self._batches[i:]
        del self._bases[i:]
        self._log_end_offset = new_end
        self._log_start_offset = min(self._log_start_offset, new_end)
        self._flushed_offset = min(self._flushed_offset, new_end)
        self._epochs.truncate_from_end(new_end)
        self._flushed_epochs = [e for e in self._flushed_epochs if e.start_offset < new_end]

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.version += 1
        self._batches.clear()
        self._bases.clear()
        self._log_start_offset = self._log_end_offset = self._flushed_offset = offset
        self._epochs.clear()
        self._flushed_epochs.clear()

    def advance_log_start_offset(self, offset: int) -> None:
        if offset <= self._log_start_offset:
            return
        if offset > self._log_end_offset:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self._log_end_offset)
        self.version += 1
        self._log_start_offset = offset
        self._flushed_offset = max(self._flushed_offset, offset)
        self._epochs.truncate_from_start(offset)
        keep = self._index_of(offset)
        del self._batches[:keep]
        del self._bases[:keep]

    def flush(self, offset: int | None = None) -> None:
        target = self._log_end_offset if offset is None else min(offset, self._log_end_offset)
        self._flushed_offset = max(self._flushed_offset, target)
        self._flushed_epochs = self._epochs.entries()

    # -- leader epochs ---------------------------------------------------------------------

    def epoch_entries(self) -> list[EpochEntry]:
        return self._epochs.entries()

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        self.version += 1
        self._epochs.assign(epoch, start_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self._epochs.end_offset_for(epoch, self._log_end_offset)

    # -- lifecycle -------------------------------------------------------------------------

    def crash(self) -> None:
        """Lose the unflushed suffix, as an unclean stop would."""
        self.truncate_to(self._flushed_offset)
        self.version += 1
        self._epochs = LeaderEpochCache(e for e in self._flushed_epochs
                                        if e.start_offset < self._log_end_offset)

    def restart(self) -> None:
        """What reopening does after a clean stop: Kafka's load trims the epoch cache to the log
        end, dropping an epoch that starts exactly there (no record written in it yet)."""
        self.version += 1
        self._epochs.truncate_from_end(self._log_end_offset)

    def close(self) -> None:
        self.flush()
