"""Opening a log after a crash or a clean stop (Kafka's LogLoader and LogSegment.recover)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference_impl.log.api import EpochEntry
from reference_impl.log.config import LogConfig
from reference_impl.log.partition_log import FileLog
from reference_impl.log.segment import LogSegment
from reference_impl.log.testing import make_batch, read_bytes
from reference_impl.protocol.records import iter_headers

CONFIG = LogConfig(segment_bytes=1_500, index_interval_bytes=200)


def _written(tmp_path: Path, batches: int = 20, config: LogConfig = CONFIG) -> tuple[str, bytes, FileLog]:
    """A log with ``batches`` appended and abandoned (nothing flushed); its bytes as read before."""
    directory = str(tmp_path / "t-0")
    log = FileLog.open(directory, config, 0)
    for i in range(batches):
        log.append_as_leader(make_batch(1 + i % 3, timestamp=1_000 + i, value_size=20 + i), i // 7, 0)
    before = read_bytes(log.read(0, 1 << 30))
    log.abandon()
    return directory, before, log


def _reopen(directory: str, recovery_point: int = 0, clean: bool = False) -> FileLog:
    return FileLog.open(directory, CONFIG, 0, recovery_point=recovery_point, clean_shutdown=clean)


def _batch_ends(data: bytes) -> list[int]:
    return [h.position + h.size for h in iter_headers(data)]


def test_torn_tail_is_cut_at_the_last_whole_batch(tmp_path: Path) -> None:
    """A batch cut short by a crash is removed; every batch before it is kept byte for byte."""
    directory, before, abandoned = _written(tmp_path)
    last = abandoned.segments[-1]
    with open(last.log_path, "r+b") as handle:
        handle.truncate(last.size - 7)
    log = _reopen(directory)
    after = read_bytes(log.read(0, 1 << 30))
    assert before.startswith(after) and len(before) - len(after) > 7
    assert len(after) in _batch_ends(before)
    assert log.load_report.truncated_bytes > 0
    log.close()


def test_corrupt_crc_in_the_last_segment_cuts_from_that_batch(tmp_path: Path) -> None:
    """A batch whose CRC32C fails is cut with everything after it; nothing before its first byte is lost."""
    directory, before, abandoned = _written(tmp_path)
    last = abandoned.segments[-1]
    positions = [position for position, _ in LogSegment(directory, last.base_offset, 0).scan(0)]
    assert len(positions) >= 3
    with open(last.log_path, "r+b") as handle:
        handle.seek(positions[1] + 70)  # inside the second batch's records
        byte = handle.read(1)
        handle.seek(positions[1] + 70)
        handle.write(bytes([byte[0] ^ 0xFF]))
    log = _reopen(directory)
    assert log.segments[-1].size == positions[1]
    after = read_bytes(log.read(0, 1 << 30))
    assert before.startswith(after)
    log.close()


def test_corruption_in_an_earlier_unflushed_segment_drops_the_later_ones(tmp_path: Path) -> None:
    """Kafka's recoverLog: the first segment with a bad byte is cut and every later segment deleted."""
    directory, before, abandoned = _written(tmp_path, batches=40)
    assert len(abandoned.segments) >= 4
    victim = abandoned.segments[1]
    with open(victim.log_path, "r+b") as handle:
        handle.truncate(victim.size - 3)
    log = _reopen(directory)
    assert log.segments[-1].base_offset == victim.base_offset
    assert log.load_report.deleted_segments == [s.base_offset for s in abandoned.segments[2:]]
    assert before.startswith(read_bytes(log.read(0, 1 << 30)))
    log.close()


def test_zero_filled_tail_is_cut(tmp_path: Path) -> None:
    """A file system may leave zeros where unwritten pages were: not a batch, so it is cut."""
    directory, before, abandoned = _written(tmp_path)
    with open(abandoned.segments[-1].log_path, "ab") as handle:
        handle.write(b"\x00" * 300)
    log = _reopen(directory)
    assert read_bytes(log.read(0, 1 << 30)) == before
    assert log.load_report.truncated_bytes == 300
    log.close()


def test_offset_gaps_between_segments_survive_recovery(tmp_path: Path) -> None:
    """Segments need not be contiguous in offsets (a follower copies a compacted leader's gaps); recovery
    keeps every valid batch of every segment."""
    from reference_impl.protocol.record_set import build_batch

    directory = str(tmp_path / "t-0")
    log = FileLog.open(directory, LogConfig(segment_bytes=200), 0)
    for base in (0, 5, 9, 30, 31, 50):
        log.append_as_follower(build_batch([(b"k", b"v" * 60)], base_offset=base, partition_leader_epoch=1))
    assert len(log.segments) >= 3
    before = read_bytes(log.read(0, 1 << 30))
    log.abandon()
    again = _reopen(directory)
    assert read_bytes(again.read(0, 1 << 30)) == before
    assert again.log_end_offset == 51 and again.load_report.truncated_bytes == 0
    again.close()


def test_recovery_starts_at_the_recovery_point(tmp_path: Path) -> None:
    """Only segments from the one holding the recovery point are scanned; flushed ones are trusted."""
    directory, _, abandoned = _written(tmp_path, batches=40)
    third = abandoned.segments[2]
    log = _reopen(directory, recovery_point=third.base_offset + 1)
    assert log.load_report.recovered_segments == [s.base_offset for s in abandoned.segments[2:]]
    assert log.recovery_point == third.base_offset + 1  # recovered bytes may be in the page cache only
    log.close()


def test_recovered_log_reads_the_same_after_a_second_open(tmp_path: Path) -> None:
    """After recovery, the files are consistent: a second open (crash or clean) reads the same bytes."""
    directory, _, abandoned = _written(tmp_path, batches=30)
    with open(abandoned.segments[-1].log_path, "r+b") as handle:
        handle.truncate(abandoned.segments[-1].size - 11)
    first = _reopen(directory)
    recovered = read_bytes(first.read(0, 1 << 30))
    end = first.log_end_offset
    first.abandon()
    second = _reopen(directory)
    assert read_bytes(second.read(0, 1 << 30)) == recovered and second.log_end_offset == end
    assert second.load_report.truncated_bytes == 0
    second.close()
    third = _reopen(directory, recovery_point=end, clean=True)
    assert read_bytes(third.read(0, 1 << 30)) == recovered
    third.close()


def test_clean_open_scans_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a clean shutdown (the .kafka_cleanshutdown marker), Kafka opens without recovering."""
    directory = str(tmp_path / "t-0")
    log = FileLog.open(directory, CONFIG, 0)
    for _ in range(30):
        log.append_as_leader(make_batch(2, value_size=50), 0, 0)
    before = read_bytes(log.read(0, 1 << 30))
    end = log.log_end_offset
    log.close()

    def forbidden(self: LogSegment, index_interval_bytes: int) -> None:
        raise AssertionError(f"segment {self.base_offset} was recovered after a clean shutdown")

    monkeypatch.setattr(LogSegment, "recover", forbidden)
    again = _reopen(directory, recovery_point=end, clean=True)
    assert again.log_end_offset == end and again.recovery_point == end
    assert read_bytes(again.read(0, 1 << 30)) == before
    again.close()


@pytest.mark.parametrize("damage", ["delete offset index", "delete time index", "garble offset index"])
def test_missing_or_corrupt_indexes_are_rebuilt(tmp_path: Path, damage: str) -> None:
    """Kafka rebuilds an index that is missing or fails its sanity check, even after a clean stop."""
    directory = str(tmp_path / "t-0")
    log = FileLog.open(directory, CONFIG, 0)
    for i in range(40):
        log.append_as_leader(make_batch(2, timestamp=5_000 + i, value_size=50), 0, 0)
    victim = log.segments[1]
    original_entries = victim.offset_index.entries()
    assert original_entries
    before = read_bytes(log.read(0, 1 << 30))
    log.close()
    if damage == "delete offset index":
        Path(victim.offset_index.path).unlink()
    elif damage == "delete time index":
        Path(victim.time_index.path).unlink()
    else:
        Path(victim.offset_index.path).write_bytes(b"\x7f" * 13)
    again = _reopen(directory, recovery_point=log.log_end_offset, clean=True)
    assert again.load_report.rebuilt_indexes == [victim.base_offset]
    rebuilt = again.segments[1]
    assert rebuilt.offset_index.entries() and Path(rebuilt.time_index.path).exists()
    assert read_bytes(again.read(0, 1 << 30)) == before
    for offset in range(victim.base_offset, again.segments[2].base_offset):
        assert again.read(offset, 1).first_batch_offset <= offset
    assert again.offset_for_timestamp(5_000 + 20) is not None
    again.close()
    third = _reopen(directory, recovery_point=again.log_end_offset, clean=True)
    assert third.load_report.rebuilt_indexes == []  # the rebuilt files replaced the damaged ones
    third.close()


def test_epoch_cache_is_trimmed_to_the_recovered_end(tmp_path: Path) -> None:
    """Entries of the epoch cache starting at or after the recovered log end are dropped (and the
    leader-epoch-checkpoint rewritten)."""
    directory = str(tmp_path / "t-0")
    log = FileLog.open(directory, LogConfig(), 0)
    log.append_as_leader(make_batch(3), 1, 0)
    log.append_as_leader(make_batch(3), 2, 0)
    segment = log.segments[0]
    first_end = next(segment.scan(0))[1].size
    log.abandon()
    with open(segment.log_path, "r+b") as handle:
        handle.truncate(first_end + 10)
    again = _reopen(directory)
    assert again.log_end_offset == 3
    assert again.epoch_entries() == [EpochEntry(1, 0)]
    assert (Path(directory) / "leader-epoch-checkpoint").read_text() == "0\n1\n1 0\n"
    again.close()


def test_leftover_files_are_removed(tmp_path: Path) -> None:
    """Kafka removes .deleted/.cleaned/.swap segment files and index files whose .log is gone."""
    directory, before, _ = _written(tmp_path, batches=3)
    leftovers = [
        "00000000000000000500.log.deleted",
        "00000000000000000600.index",
        "00000000000000000600.timeindex",
        "leader-epoch-checkpoint.tmp",
    ]
    for name in leftovers:
        (Path(directory) / name).write_bytes(b"junk")
    log = _reopen(directory)
    assert sorted(log.load_report.removed_files) == sorted(leftovers)
    assert read_bytes(log.read(0, 1 << 30)) == before
    log.close()


def test_a_rebuilt_index_replaces_every_byte_of_the_damaged_file(tmp_path: Path) -> None:
    """Rebuilding starts from an empty file: leftover bytes of a torn index must not survive it."""
    directory = str(tmp_path / "t-0")
    log = FileLog.open(directory, CONFIG, 0)
    log.append_as_leader(make_batch(1), 0, 0)  # one batch: the rebuilt offset index has no entry
    log.close()
    index = Path(directory) / "00000000000000000000.index"
    index.write_bytes(b"\x01" * 7)
    again = _reopen(directory, recovery_point=1, clean=True)
    assert again.load_report.rebuilt_indexes == [0]
    assert index.stat().st_size == 0
    again.close()
