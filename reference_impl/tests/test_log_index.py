"""The sparse offset index and the time index: Kafka's byte format and floor lookups."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.log.index import IndexCorruptError, OffsetIndex, TimeIndex


def test_offset_index_bytes_are_kafkas(tmp_path: Path) -> None:
    """Kafka's OffsetIndex entry: relative offset int32 then position int32, big-endian, 8 bytes."""
    index = OffsetIndex(str(tmp_path / "00000000000000000100.index"), 100)
    index.append(105, 4200)
    index.append(130, 9000)
    index.close()
    raw = (tmp_path / "00000000000000000100.index").read_bytes()
    assert raw == struct.pack(">ii", 5, 4200) + struct.pack(">ii", 30, 9000)


def test_time_index_bytes_are_kafkas(tmp_path: Path) -> None:
    """Kafka's TimeIndex entry: timestamp int64 then relative offset int32, big-endian, 12 bytes."""
    index = TimeIndex(str(tmp_path / "00000000000000000100.timeindex"), 100)
    index.maybe_append(1_700_000_000_000, 107)
    index.close()
    raw = (tmp_path / "00000000000000000100.timeindex").read_bytes()
    assert raw == struct.pack(">qi", 1_700_000_000_000, 7)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=0, max_size=30, unique=True), st.integers(0, 1700))
def test_offset_lookup_is_the_floor_entry(tmp_path_factory: pytest.TempPathFactory, gaps: list[int],
                                          target: int) -> None:
    """OffsetIndex.lookup returns the largest entry at or below the target, else (base offset, 0)."""
    path = tmp_path_factory.mktemp("idx") / "00000000000000000010.index"
    index = OffsetIndex(str(path), 10)
    entries = []
    offset, position = 10, 0
    for gap in sorted(gaps):
        offset += gap
        position += gap * 7
        index.append(offset, position)
        entries.append((offset, position))
    floor = [e for e in entries if e[0] <= target]
    assert index.lookup(target) == (floor[-1] if floor else (10, 0))
    index.close()


def test_offset_index_loads_back_and_truncates(tmp_path: Path) -> None:
    """An index file reloads to the same entries; truncateTo(offset) drops entries at or above it."""
    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0)
    for i in range(1, 6):
        index.append(i * 10, i * 100)
    index.close()
    again = OffsetIndex(path, 0)
    again.load(log_size=1000)
    assert again.entries() == [(10, 100), (20, 200), (30, 300), (40, 400), (50, 500)]
    again.truncate_to(30)
    assert again.entries() == [(10, 100), (20, 200)]
    assert Path(path).stat().st_size == 16
    again.close()


def test_out_of_order_offset_entries_are_not_written(tmp_path: Path) -> None:
    """Index entries strictly increase in offset and position, or the floor lookup breaks."""
    index = OffsetIndex(str(tmp_path / "00000000000000000000.index"), 0)
    index.append(10, 100)
    index.append(10, 200)
    index.append(5, 300)
    assert index.entries() == [(10, 100)]
    index.close()


@pytest.mark.parametrize("raw, log_size", [
    (b"\x00" * 7, 100),  # not a whole entry
    (struct.pack(">ii", 5, 100) + struct.pack(">ii", 4, 200), 1000),  # offsets go backwards
    (struct.pack(">ii", 5, 100), 50),  # points past the end of the log file
    (struct.pack(">ii", -1, 0), 50),  # negative relative offset
])
def test_corrupt_offset_index_is_detected(tmp_path: Path, raw: bytes, log_size: int) -> None:
    """Kafka's index sanity check: entry-sized file, increasing entries, positions inside the segment."""
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(raw)
    index = OffsetIndex(str(path), 0)
    with pytest.raises(IndexCorruptError):
        index.load(log_size)
    index.close()


def test_time_index_keeps_only_increasing_timestamps_and_looks_up_the_floor(tmp_path: Path) -> None:
    """TimeIndex.maybeAppend skips a timestamp not above the last; lookup gives the floor, else (-1, base)."""
    index = TimeIndex(str(tmp_path / "00000000000000000050.timeindex"), 50)
    index.maybe_append(1000, 55)
    index.maybe_append(900, 60)  # not larger: skipped
    index.maybe_append(2000, 70)
    assert index.entries() == [(1000, 55), (2000, 70)]
    assert index.lookup(999) == (-1, 50)
    assert index.lookup(1500) == (1000, 55)
    assert index.lookup(2000) == (2000, 70)
    assert index.last_entry == (2000, 70)
    index.truncate_to(70)
    assert index.entries() == [(1000, 55)]
    index.close()


def test_time_index_with_offset_outside_segment_is_corrupt(tmp_path: Path) -> None:
    """A time index entry must point below the next segment's base offset."""
    path = tmp_path / "00000000000000000000.timeindex"
    path.write_bytes(struct.pack(">qi", 5, 500))
    index = TimeIndex(str(path), 0)
    with pytest.raises(IndexCorruptError):
        index.load(next_offset_bound=100)
    index.close()
