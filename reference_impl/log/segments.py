"""The ordered set of a log's segments, by base offset (Kafka's ``LogSegments``).

Floor and range lookups are binary searches over the sorted base offsets.
The last segment is the *active* one, the only one appended to. Not
thread-safe.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from .segment import LogSegment


class LogSegments:
    def __init__(self) -> None:
        self._bases: list[int] = []
        self._segments: dict[int, LogSegment] = {}

    def __len__(self) -> int:
        return len(self._bases)

    def __iter__(self) -> Iterator[LogSegment]:
        return (self._segments[base] for base in list(self._bases))

    def add(self, segment: LogSegment) -> None:
        """Add or replace the segment at its base offset."""
        if segment.base_offset not in self._segments:
            bisect.insort(self._bases, segment.base_offset)
        self._segments[segment.base_offset] = segment

    def remove(self, base_offset: int) -> LogSegment:
        segment = self._segments.pop(base_offset)
        del self._bases[bisect.bisect_left(self._bases, base_offset)]
        return segment

    def clear(self) -> list[LogSegment]:
        removed = list(self)
        self._bases.clear()
        self._segments.clear()
        return removed

    @property
    def first(self) -> LogSegment:
        return self._segments[self._bases[0]]

    @property
    def active(self) -> LogSegment:
        return self._segments[self._bases[-1]]

    def floor(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset at or below ``offset``."""
        i = bisect.bisect_right(self._bases, offset) - 1
        return self._segments[self._bases[i]] if i >= 0 else None

    def following(self, segment: LogSegment) -> LogSegment | None:
        """The segment after ``segment``, if any."""
        i = bisect.bisect_right(self._bases, segment.base_offset)
        return self._segments[self._bases[i]] if i < len(self._bases) else None

    def upper_bound_of(self, segment: LogSegment) -> int:
        """The offset after the last ``segment`` can hold: the next base offset, else its next offset."""
        after = self.following(segment)
        return after.base_offset if after is not None else segment.next_offset

    def from_offset(self, offset: int) -> Iterator[LogSegment]:
        """Segments that may hold ``offset`` or anything after it, oldest first."""
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        return (self._segments[base] for base in self._bases[i:])

    def above(self, offset: int) -> list[LogSegment]:
        """Segments whose base offset is strictly above ``offset``."""
        i = bisect.bisect_right(self._bases, offset)
        return [self._segments[base] for base in self._bases[i:]]

    def total_size(self) -> int:
        return sum(segment.size for segment in self._segments.values())
