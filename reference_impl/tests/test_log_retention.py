"""Retention (Kafka's deleteOldSegments) and the flush policy of the file log."""

from __future__ import annotations

from pathlib import Path

from reference_impl.log.api import EpochEntry
from reference_impl.log.config import LogConfig
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import make_batch

HOUR = 3_600_000


def _log(tmp_path: Path, **overrides: object) -> FileLog:
    config = LogConfig(segment_bytes=400, **overrides)  # type: ignore[arg-type]
    return FileLog.open(str(tmp_path / "t-0"), config, 0)


def _fill(log: FileLog, timestamps: list[int]) -> None:
    """One 2-record batch per timestamp; about three batches per 400-byte segment."""
    for ts in timestamps:
        log.append_as_leader(make_batch(2, timestamp=ts, value_size=30), 0, ts)


def test_retention_ms_deletes_segments_whose_newest_record_is_too_old(tmp_path: Path) -> None:
    """retention.ms: a segment goes when now - its largest timestamp > retention.ms; the log start
    offset moves to the first remaining segment."""
    log = _log(tmp_path, retention_ms=HOUR)
    _fill(log, [1_000 + i * 60_000 for i in range(12)])
    segments = log.segments
    assert len(segments) >= 4
    cutoff_segment = segments[2]
    now = cutoff_segment.max_timestamp + HOUR  # not *more* than retention.ms after segment 2
    deleted = log.apply_retention(now)
    assert deleted == 2
    assert log.log_start_offset == cutoff_segment.base_offset == log.segments[0].base_offset
    assert not (tmp_path / "t-0" / f"{segments[0].base_offset:020d}.log").exists()
    log.close()


def test_an_expired_active_segment_is_rolled_then_deleted(tmp_path: Path) -> None:
    """Kafka rolls the active segment when it must go too: the log keeps one empty segment at the LEO."""
    log = _log(tmp_path, retention_ms=HOUR)
    _fill(log, [1_000] * 7)
    end = log.log_end_offset
    assert log.apply_retention(1_000 + HOUR + 1) >= 2
    assert [s.base_offset for s in log.segments] == [end]
    assert log.log_start_offset == end == log.log_end_offset
    log.append_as_leader(make_batch(1), 0, 0)
    assert log.log_end_offset == end + 1
    log.close()


def test_retention_bytes_keeps_the_log_at_most_that_size(tmp_path: Path) -> None:
    """retention.bytes: delete the oldest segments while the log would still be at least that big
    without them."""
    log = _log(tmp_path, retention_bytes=900)
    _fill(log, [1_000] * 15)
    total = log.size_bytes
    sizes = [s.size for s in log.segments]
    log.apply_retention(2_000)
    expected_left = total
    for size in sizes:
        if expected_left - size < 900:
            break
        expected_left -= size
    assert log.size_bytes == expected_left and log.size_bytes >= 900
    assert log.log_start_offset == log.segments[0].base_offset
    log.close()


def test_segments_below_the_log_start_go_after_delete_records(tmp_path: Path) -> None:
    """DeleteRecords moves the log start; retention then deletes segments wholly below it (whatever
    the cleanup policy), keeping the one the log start falls in."""
    log = _log(tmp_path, cleanup_policy=("compact",))
    _fill(log, [1_000] * 12)
    third = log.segments[2]
    log.advance_log_start_offset(third.base_offset + 1)
    assert log.apply_retention(10**12) == 2
    assert log.segments[0].base_offset == third.base_offset
    assert log.log_start_offset == third.base_offset + 1
    log.close()


def test_compacted_topics_skip_size_and_time_retention(tmp_path: Path) -> None:
    """cleanup.policy=compact without delete: retention.ms and retention.bytes do not apply."""
    log = _log(tmp_path, cleanup_policy=("compact",), retention_ms=1, retention_bytes=1)
    _fill(log, [1_000] * 9)
    before = len(log.segments)
    assert log.apply_retention(10**12) == 0 and len(log.segments) == before
    log.close()


def test_retention_never_passes_the_high_watermark(tmp_path: Path) -> None:
    """Kafka deletes only segments whose offsets are all below the high watermark, so the log start
    offset never exceeds it."""
    log = _log(tmp_path, retention_ms=0)
    _fill(log, [1_000] * 12)
    second = log.segments[1]
    following = log.segments[2]
    assert log.apply_retention(10**12, high_watermark=following.base_offset - 1) == 1
    assert log.segments[0].base_offset == second.base_offset
    assert log.apply_retention(10**12, high_watermark=following.base_offset) == 1
    log.close()


def test_infinite_retention_keeps_everything(tmp_path: Path) -> None:
    """retention.ms=-1 and retention.bytes=-1 mean keep forever."""
    log = _log(tmp_path, retention_ms=-1, retention_bytes=-1)
    _fill(log, [1] * 9)
    before = len(log.segments)
    assert log.apply_retention(10**15) == 0 and len(log.segments) == before
    log.close()


def test_retention_trims_the_epoch_cache_from_the_start(tmp_path: Path) -> None:
    """When the log start moves, the epoch in force there restarts there (truncateFromStart)."""
    log = _log(tmp_path, retention_ms=HOUR)
    for i in range(9):
        log.append_as_leader(make_batch(2, timestamp=1_000 + i, value_size=30), i // 3, 0)
    log.apply_retention(1_003 + HOUR + 1)
    start = log.log_start_offset
    assert start > 0
    assert log.epoch_entries()[0].start_offset == start
    assert all(isinstance(e, EpochEntry) for e in log.epoch_entries())
    log.close()


def test_flush_messages_flushes_after_that_many_messages(tmp_path: Path) -> None:
    """flush.messages: once LEO - recovery point reaches it, the log fsyncs and the recovery point
    moves to the LEO."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(flush_messages=5), 0)
    log.append_as_leader(make_batch(2), 0, 0)
    log.append_as_leader(make_batch(2), 0, 0)
    assert log.recovery_point == 0
    log.append_as_leader(make_batch(2), 0, 0)
    assert log.recovery_point == 6
    log.close()


def test_flush_ms_flushes_when_due(tmp_path: Path) -> None:
    """flush.ms: the periodic flusher fsyncs a log when that long has passed since its last flush."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(flush_ms=1_000), 10_000)
    log.append_as_leader(make_batch(3), 0, 10_000)
    assert not log.maybe_flush(10_999) and log.recovery_point == 0
    assert log.maybe_flush(11_000) and log.recovery_point == 3
    log.append_as_leader(make_batch(3), 0, 11_500)
    assert not log.maybe_flush(11_999)
    log.close()


def test_default_flush_policy_leaves_it_to_the_os(tmp_path: Path) -> None:
    """Kafka's defaults (flush.messages and flush.ms at Long.MAX_VALUE) never force an fsync."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)
    for _ in range(50):
        log.append_as_leader(make_batch(2), 0, 0)
    assert not log.maybe_flush(10**15)
    assert log.recovery_point == 0
    log.close()
