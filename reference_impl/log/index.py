"""A segment's sparse indexes, ``.index`` and ``.timeindex``, in Kafka's binary format.

``.index`` maps offsets to file positions: 8-byte entries (relative offset
int32, position int32, big-endian), one per append once more than
``index.interval.bytes`` were written since the last entry. A lookup returns
the *floor* entry, the largest offset at or below the target, so the reader
scans forward from that position to the batch holding the target.

``.timeindex`` maps timestamps to offsets: 12-byte entries (timestamp int64,
relative offset int32), appended next to offset-index entries and when the
segment is rolled or closed, only when the timestamp is larger than the last
entry's: the last entry holds the segment's largest timestamp.

Kafka memory-maps preallocated index files; these are plain files that
grow one entry at a time and are held in memory as arrays, which gives the
same on-disk bytes once Kafka trims its files at roll. Their descriptors come
from the bounded pool (:mod:`.descriptors`), opened again when needed, so an
idle partition holds none. Neither class is thread-safe.
"""

from __future__ import annotations

import bisect
import os
import struct
import sys
from array import array

from .descriptors import PooledFile
from .files import pread_exact, pwrite_all

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


class IndexCorruptError(ValueError):
    """An index file that cannot belong to its segment; the loader rebuilds it."""


class _IndexFile:
    """An append-only file of fixed-size entries, written through a pooled descriptor."""

    entry_size: int

    def __init__(self, path: str, base_offset: int) -> None:
        self.base_offset = base_offset
        self._file = PooledFile(path)
        self._count = 0

    @property
    def path(self) -> str:
        return self._file.path

    def __len__(self) -> int:
        return self._count

    def _raw_entries(self) -> bytes:
        """The file's bytes for loading; a size that is not a whole number of entries is corrupt."""
        size = os.fstat(self._file.fd()).st_size
        if size % self.entry_size:
            raise IndexCorruptError(f"{self.path}: {size} bytes is not a multiple of {self.entry_size}")
        return pread_exact(self._file.fd(), size, 0)

    def _write_entry(self, data: bytes) -> None:
        pwrite_all(self._file.fd(), data, self._count * self.entry_size)
        self._count += 1

    def _truncate_entries(self, count: int) -> None:
        os.ftruncate(self._file.fd(), count * self.entry_size)
        self._count = count

    def flush(self) -> None:
        """fsync, through a reopened descriptor if the pool closed it: on Linux fsync writes back the
        file's dirty pages whichever descriptor wrote them."""
        os.fsync(self._file.fd())

    def close(self) -> None:
        self._file.close()

    def rename(self, path: str) -> None:
        self._file.rename(path)


def _int32_pairs(data: bytes) -> tuple[array[int], array[int]]:
    values = array("i")
    values.frombytes(data)
    if sys.byteorder == "little":
        values.byteswap()
    return values[0::2], values[1::2]


class OffsetIndex(_IndexFile):
    """``<base>.index``: (relative offset, position) pairs, strictly increasing in both."""

    entry_size = OFFSET_ENTRY.size

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self._relative: array[int] = array("i")
        self._positions: array[int] = array("i")

    def load(self, log_size: int) -> None:
        """Read the entries from the file; :class:`IndexCorruptError` if they cannot be right.

        An entry must point inside the log file (below ``log_size``) and both
        columns must strictly increase; otherwise the index is rebuilt.
        """
        relative, positions = _int32_pairs(self._raw_entries())
        for i in range(len(relative)):
            if relative[i] < 0 or positions[i] < 0 or positions[i] >= log_size:
                raise IndexCorruptError(f"{self.path}: entry {i} ({relative[i]}, {positions[i]}) is "
                                        f"outside a {log_size}-byte segment")
            if i and (relative[i] <= relative[i - 1] or positions[i] <= positions[i - 1]):
                raise IndexCorruptError(f"{self.path}: entry {i} does not increase")
        self._relative, self._positions = relative, positions
        self._count = len(relative)

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self._count and (relative <= self._relative[-1] or position <= self._positions[-1]):
            return  # never out of order: a lookup floor must stay a floor
        self._write_entry(OFFSET_ENTRY.pack(relative, position))
        self._relative.append(relative)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry at or below ``offset``; (base, 0) if none."""
        i = bisect.bisect_right(self._relative, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._relative[i], self._positions[i]

    def floor_position(self, position: int) -> int:
        """The largest indexed batch position at or below ``position`` (0 if none)."""
        i = bisect.bisect_right(self._positions, position) - 1
        return self._positions[i] if i >= 0 else 0

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets at or above ``offset``."""
        keep = bisect.bisect_left(self._relative, offset - self.base_offset)
        self.truncate_to_position(self._positions[keep] if keep < self._count else -1)

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or after ``position`` (-1: keep all)."""
        keep = self._count if position < 0 else bisect.bisect_left(self._positions, position)
        if keep < self._count:
            del self._relative[keep:]
            del self._positions[keep:]
            self._truncate_entries(keep)

    def reset(self) -> None:
        """Empty the index, file included (before a rebuild; the file may hold garbage not loaded)."""
        self._relative, self._positions = array("i"), array("i")
        self._truncate_entries(0)

    @property
    def last_entry(self) -> tuple[int, int]:
        if not self._count:
            return self.base_offset, 0
        return self.base_offset + self._relative[-1], self._positions[-1]

    def entries(self) -> list[tuple[int, int]]:
        """(absolute offset, position) pairs, for tests and ``dump-log``."""
        return [(self.base_offset + r, p) for r, p in zip(self._relative, self._positions, strict=True)]


class TimeIndex(_IndexFile):
    """``<base>.timeindex``: (timestamp, relative offset) pairs, strictly increasing in timestamp."""

    entry_size = TIME_ENTRY.size

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self._timestamps: list[int] = []
        self._relative: list[int] = []

    def load(self, next_offset_bound: int) -> None:
        """Read the entries; :class:`IndexCorruptError` if an offset or timestamp is out of order."""
        timestamps: list[int] = []
        relative: list[int] = []
        for ts, rel in TIME_ENTRY.iter_unpack(self._raw_entries()):
            if rel < 0 or self.base_offset + rel >= next_offset_bound:
                raise IndexCorruptError(
                    f"{self.path}: offset {self.base_offset + rel} is outside the segment")
            if timestamps and (ts <= timestamps[-1] or rel < relative[-1]):
                raise IndexCorruptError(f"{self.path}: entry {len(timestamps)} does not increase")
            timestamps.append(ts)
            relative.append(rel)
        self._timestamps, self._relative = timestamps, relative
        self._count = len(timestamps)

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append unless ``timestamp`` is not larger than the last entry's (Kafka's ``maybeAppend``)."""
        relative = offset - self.base_offset
        if self._count and (timestamp <= self._timestamps[-1] or relative < self._relative[-1]):
            return
        self._write_entry(TIME_ENTRY.pack(timestamp, relative))
        self._timestamps.append(timestamp)
        self._relative.append(relative)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry at or below ``timestamp``; (-1, base) if none."""
        i = bisect.bisect_right(self._timestamps, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._timestamps[i], self.base_offset + self._relative[i]

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets at or above ``offset``."""
        keep = bisect.bisect_left(self._relative, offset - self.base_offset)
        if keep < self._count:
            del self._timestamps[keep:]
            del self._relative[keep:]
            self._truncate_entries(keep)

    def reset(self) -> None:
        """Empty the index, file included (before a rebuild; the file may hold garbage not loaded)."""
        self._timestamps, self._relative = [], []
        self._truncate_entries(0)

    @property
    def last_entry(self) -> tuple[int, int]:
        """(largest indexed timestamp, its offset); (-1, base) when empty."""
        if not self._count:
            return -1, self.base_offset
        return self._timestamps[-1], self.base_offset + self._relative[-1]

    def entries(self) -> list[tuple[int, int]]:
        return [(ts, self.base_offset + r) for ts, r in zip(self._timestamps, self._relative, strict=True)]
