"""The leader-epoch cache: which leader epoch began at which offset (KIP-101, KIP-279).

Pure and in memory; both logs use it. The file-backed log persists it as
``leader-epoch-checkpoint`` after every change; the memory log keeps a copy
as of its last flush. The rules are Kafka's ``LeaderEpochFileCache``:

* entries strictly increase in epoch and in start offset;
* truncating the log's end drops entries starting at or after the new end;
* moving the log start drops entries wholly below it and moves the last of
  them up to the new start, so the epoch in force there is still known;
* ``end_offset_for`` answers OffsetsForLeaderEpoch as Kafka does, including
  its two edge answers (an epoch older than every entry gets the first start
  offset; an epoch newer than every entry gets "undefined").
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from .api import EpochEntry

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """An ordered list of :class:`EpochEntry`. Not thread-safe: its log serialises calls."""

    def __init__(self, entries: Iterable[EpochEntry] = ()) -> None:
        self._entries: list[EpochEntry] = []
        for entry in entries:
            self.assign(entry.epoch, entry.start_offset)

    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        Ignored unless ``epoch`` is newer than the latest entry (the contract
        of :meth:`reference_impl.log.api.PartitionLog.assign_epoch`). Older
        entries starting at or after ``start_offset`` are dropped first, so
        start offsets stay increasing.
        """
        if epoch < 0 or start_offset < 0:
            return False
        if self._entries and epoch <= self._entries[-1].epoch:
            return False
        while self._entries and self._entries[-1].start_offset >= start_offset:
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        keep = len(self._entries)
        while keep and self._entries[keep - 1].start_offset >= end_offset:
            keep -= 1
        if keep == len(self._entries):
            return False
        del self._entries[keep:]
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: the epoch in force there starts there."""
        starts = [e.start_offset for e in self._entries]
        below = bisect.bisect_right(starts, start_offset)
        if below == 0:
            return False
        last = self._entries[below - 1]
        if below == 1 and last.start_offset == start_offset:
            return False
        self._entries[:below] = [EpochEntry(last.epoch, start_offset)]
        return True

    def clear(self) -> bool:
        changed = bool(self._entries)
        self._entries.clear()
        return changed

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch found, its end offset) for OffsetsForLeaderEpoch, as Kafka's ``endOffsetFor``.

        The end offset of an epoch is the start offset of the next larger
        epoch, or the log end offset for the latest epoch.
        """
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if epoch == self._entries[-1].epoch:
            return (epoch, log_end_offset)
        epochs = [e.epoch for e in self._entries]
        higher = bisect.bisect_right(epochs, epoch)
        if higher == len(self._entries):
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if higher == 0:
            return (epoch, self._entries[0].start_offset)
        return (self._entries[higher - 1].epoch, self._entries[higher].start_offset)
