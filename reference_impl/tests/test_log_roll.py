"""When the file log rolls a new segment, and what rolling does (Kafka's LogSegment.shouldRoll)."""

from __future__ import annotations

import os
from pathlib import Path

from reference_impl.log.config import LogConfig
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import make_batch, read_bytes
from reference_impl.protocol.record_set import build_batch, records_of

SEGMENT_MS = 60_000


def _open(tmp_path: Path, config: LogConfig) -> FileLog:
    return FileLog.open(str(tmp_path / "t-0"), config, 0)


def test_rolls_before_exceeding_segment_bytes(tmp_path: Path) -> None:
    """segment.bytes: an append that would push the active segment past it goes to a new segment,
    named by its first offset as 20 zero-padded digits."""
    log = _open(tmp_path, LogConfig(segment_bytes=1_000))
    bases = []
    for _ in range(30):
        bases.append(log.append_as_leader(make_batch(2, value_size=40), 0, 0).first_offset)
    sizes = [s.size for s in log.segments]
    assert len(sizes) > 3 and all(size <= 1_000 for size in sizes)
    for segment, following in zip(log.segments, log.segments[1:], strict=False):
        _, first_batch = next(following.scan(0))
        assert segment.size + first_batch.size > 1_000  # it rolled because the next one would not fit
    names = sorted(n for n in os.listdir(tmp_path / "t-0") if n.endswith(".log"))
    assert names == [f"{s.base_offset:020d}.log" for s in log.segments]
    assert all(s.base_offset in bases for s in log.segments)
    log.close()


def test_a_batch_larger_than_a_segment_gets_a_segment_of_its_own(tmp_path: Path) -> None:
    """A batch bigger than segment.bytes (the broker checks RECORD_LIST_TOO_LARGE) is still stored whole."""
    log = _open(tmp_path, LogConfig(segment_bytes=200))
    log.append_as_leader(make_batch(1), 0, 0)
    log.append_as_leader(make_batch(1, value_size=500), 0, 0)
    log.append_as_leader(make_batch(1), 0, 0)
    assert [s.base_offset for s in log.segments] == [0, 1, 2]
    assert [r.offset for r in records_of(read_bytes(log.read(0, 1 << 20)))] == [0, 1, 2]
    log.close()


def test_segment_ms_counts_from_the_first_record_timestamp(tmp_path: Path) -> None:
    """segment.ms: roll when an incoming batch's max timestamp is more than segment.ms after the
    largest timestamp of the segment's first append (Kafka's timeWaitedForRoll)."""
    log = _open(tmp_path, LogConfig(segment_ms=SEGMENT_MS))
    log.append_as_leader(make_batch(1, timestamp=1_000), 0, 0)
    log.append_as_leader(make_batch(1, timestamp=1_000 + SEGMENT_MS), 0, 0)
    assert len(log.segments) == 1
    log.append_as_leader(make_batch(1, timestamp=1_001 + SEGMENT_MS), 0, 0)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_segment_ms_without_timestamps_counts_from_creation(tmp_path: Path) -> None:
    """Batches without timestamps (-1): the segment's age is the broker's time since it was created."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(segment_ms=SEGMENT_MS), 5_000)
    log.append_as_leader(make_batch(1, timestamp=-1), 0, 5_000)
    log.append_as_leader(make_batch(1, timestamp=-1), 0, 5_000 + SEGMENT_MS)
    assert len(log.segments) == 1
    log.append_as_leader(make_batch(1, timestamp=-1), 0, 5_001 + SEGMENT_MS)
    assert len(log.segments) == 2
    log.close()


def test_a_full_index_rolls_the_segment(tmp_path: Path) -> None:
    """segment.index.bytes: once the offset index (8-byte entries) or the time index (12-byte entries)
    is full, the next append rolls."""
    log = _open(tmp_path, LogConfig(segment_index_bytes=24, index_interval_bytes=0))
    for i in range(20):
        log.append_as_leader(make_batch(1, timestamp=1_000 + i), 0, 0)
    assert len(log.segments) > 3
    for segment in log.segments:
        assert len(segment.offset_index) <= 3 and len(segment.time_index) <= 3
    log.close()


def test_relative_offset_overflow_rolls(tmp_path: Path) -> None:
    """Index entries hold offsets relative to the base as int32: 2**31 past it needs a new segment."""
    log = _open(tmp_path, LogConfig())
    log.append_as_follower(build_batch([(b"k", b"v")], base_offset=0))
    far = 2**31 + 10
    log.append_as_follower(build_batch([(b"k", b"v")], base_offset=far))
    assert [s.base_offset for s in log.segments] == [0, far]
    assert (tmp_path / "t-0" / f"{far:020d}.log").exists()
    assert [r.offset for r in records_of(read_bytes(log.read(0, 1 << 20)))] == [0, far]
    log.close()


def test_index_entry_every_index_interval_bytes(tmp_path: Path) -> None:
    """index.interval.bytes: a new offset index entry once more than that many bytes were appended
    since the last one, mapping the append's last offset to its first byte."""
    log = _open(tmp_path, LogConfig(index_interval_bytes=500))
    positions = []
    for _ in range(20):
        positions.append(log.segments[0].size)
        log.append_as_leader(make_batch(2, value_size=80), 0, 0)
    entries = log.segments[0].offset_index.entries()
    assert len(entries) >= 3
    previous = 0
    for offset, position in entries:
        assert position in positions
        assert offset == 2 * positions.index(position) + 1  # the append's last offset
        assert position - previous > 500 or previous == 0
        previous = position
    log.close()


def test_roll_flushes_the_old_segment(tmp_path: Path) -> None:
    """Kafka flushes a segment when it is rolled: the recovery point moves to the new segment's base."""
    log = _open(tmp_path, LogConfig(segment_bytes=300))
    assert log.recovery_point == 0
    for _ in range(6):
        log.append_as_leader(make_batch(1, value_size=100), 0, 0)
    assert log.recovery_point == log.segments[-1].base_offset > 0
    log.close()


def test_changed_config_applies_to_the_next_append(tmp_path: Path) -> None:
    """AlterConfigs on segment.bytes takes effect on the open log at its next append."""
    log = _open(tmp_path, LogConfig())
    for _ in range(5):
        log.append_as_leader(make_batch(1, value_size=100), 0, 0)
    assert len(log.segments) == 1
    log.update_config(log.config.with_changes({"segment.bytes": "1048576", "internal.segment.bytes": "300"}))
    log.append_as_leader(make_batch(1, value_size=100), 0, 0)
    assert len(log.segments) == 2
    log.close()
