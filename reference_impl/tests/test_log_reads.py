"""Appends and reads of the file log: file regions, whole batches, offsets, timestamps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reference_impl.log.api import FileRegion, OffsetOutOfRangeError
from reference_impl.log.config import LogConfig
from reference_impl.log.files import RegionReadError, read_region
from reference_impl.log.memory import MemoryLog
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import make_batch, read_bytes
from reference_impl.protocol.record_set import build_batch, records_of
from reference_impl.protocol.records import TIMESTAMP_TYPE_BIT, iter_headers, parse_header

SMALL = LogConfig(segment_bytes=2_000, index_interval_bytes=300)


def _filled(tmp_path: Path, config: LogConfig = SMALL) -> tuple[FileLog, MemoryLog]:
    file_log = FileLog.open(str(tmp_path / "t-0"), config, 0)
    model = MemoryLog()
    for i in range(40):
        batch = make_batch(1 + i % 5, timestamp=10_000 + (i * 37) % 50, value_size=5 + (i * 13) % 90)
        assert file_log.append_as_leader(bytearray(batch), 1 + i // 15, 5_000) == model.append_as_leader(
            bytearray(batch), 1 + i // 15, 5_000
        )
    return file_log, model


def test_segment_log_file_holds_batches_exactly_as_appended(tmp_path: Path) -> None:
    """Kafka stores RecordBatch v2 bytes as written, only baseOffset and partitionLeaderEpoch rewritten."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)
    produced = make_batch(3, timestamp=1234)
    log.append_as_leader(bytearray(make_batch(2)), 7, 0)
    log.append_as_leader(bytearray(produced), 7, 0)
    stored = (tmp_path / "t-0" / "00000000000000000000.log").read_bytes()
    second = stored[parse_header(stored).size :]
    header = parse_header(second)
    assert header.base_offset == 2 and header.partition_leader_epoch == 7
    assert second[17:] == bytes(produced[17:])  # CRC and everything it covers, untouched
    log.close()


def test_reads_match_the_memory_log_at_every_offset_and_size(tmp_path: Path) -> None:
    """Fetch semantics: whole batches from the one holding the offset, within max_bytes (KIP-74: at
    least one batch), below max_offset; the file log returns the memory log's bytes."""
    file_log, model = _filled(tmp_path)
    assert len(file_log.segments) > 3
    for offset in range(model.log_end_offset + 1):
        for max_bytes in (0, 60, 250, 700, 5_000, 1 << 30):
            for max_offset in (None, offset, offset + 4):
                for min_one in (True, False):
                    got = file_log.read(offset, max_bytes, max_offset, min_one)
                    want = model.read(offset, max_bytes, max_offset, min_one)
                    assert read_bytes(got) == b"".join(c for c in want.chunks if isinstance(c, bytes))
                    assert (got.size, got.first_batch_offset) == (want.size, want.first_batch_offset)
                    assert all(isinstance(c, FileRegion) for c in got.chunks)
    file_log.close()


def test_reads_outside_the_log_are_out_of_range(tmp_path: Path) -> None:
    """Kafka answers OFFSET_OUT_OF_RANGE below the log start offset and above the log end offset."""
    file_log, _ = _filled(tmp_path)
    file_log.advance_log_start_offset(10)
    with pytest.raises(OffsetOutOfRangeError):
        file_log.read(9, 1000)
    with pytest.raises(OffsetOutOfRangeError):
        file_log.read(file_log.log_end_offset + 1, 1000)
    assert file_log.read(file_log.log_end_offset, 1000).chunks == ()
    file_log.close()


def test_read_regions_stop_at_what_was_written_when_read(tmp_path: Path) -> None:
    """A fetch answer covers the batches present at the read; later appends do not leak into it."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)
    log.append_as_leader(make_batch(2), 0, 0)
    result = log.read(0, 1 << 20)
    log.append_as_leader(make_batch(2), 0, 0)
    assert [r.offset for r in records_of(read_bytes(result))] == [0, 1]
    log.close()


def test_region_of_a_truncated_segment_fails_clearly(tmp_path: Path) -> None:
    """A region read after truncation removed its bytes raises instead of returning short data."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)
    log.append_as_leader(make_batch(2), 0, 0)
    log.append_as_leader(make_batch(2), 0, 0)
    result = log.read(0, 1 << 20)
    log.truncate_to(2)
    with pytest.raises(RegionReadError, match="truncated"):
        read_bytes(result)
    log.close()
    os.remove(log.segments[0].log_path)
    region = result.chunks[0]
    assert isinstance(region, FileRegion)
    with pytest.raises(RegionReadError, match="deleted"):
        read_region(region)


def test_offset_for_timestamp_matches_the_memory_log(tmp_path: Path) -> None:
    """ListOffsets by time: the first record with timestamp ≥ target at or after the log start (time
    index floor, offset index floor, then the batches)."""
    file_log, model = _filled(tmp_path)
    for start in (0, 23):
        file_log.advance_log_start_offset(start)
        model.advance_log_start_offset(start)
        for target in range(9_990, 10_060):
            assert file_log.offset_for_timestamp(target) == model.offset_for_timestamp(target), target
    file_log.close()


def test_max_timestamp_is_the_first_record_carrying_it(tmp_path: Path) -> None:
    """ListOffsets MAX_TIMESTAMP (-3): the offset of the first record with the largest timestamp
    (KAFKA-16310), counted from the log start offset."""
    log = FileLog.open(str(tmp_path / "t-0"), SMALL, 0)
    model = MemoryLog()
    for stamps in ([5, 9, 7], [3, 4], [9, 1, 9], [8]):
        batch = build_batch([(b"k", b"v")] * len(stamps), timestamps=stamps)
        log.append_as_leader(bytearray(batch), 0, 0)
        model.append_as_leader(bytearray(batch), 0, 0)
    assert log.max_timestamp() == model.max_timestamp() == (1, 9)
    log.advance_log_start_offset(3)
    model.advance_log_start_offset(3)
    assert log.max_timestamp() == model.max_timestamp() == (5, 9)
    log.close()


def test_log_append_time_is_reported(tmp_path: Path) -> None:
    """Produce responses carry log_append_time when the batch was stamped LogAppendTime, else -1."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)
    plain = log.append_as_leader(make_batch(1), 0, 0)
    stamped = bytearray(build_batch([(b"k", b"v")], base_timestamp=777, log_append_time=True))
    info = log.append_as_leader(stamped, 0, 0)
    assert plain.log_append_time_ms == -1
    assert info.log_append_time_ms == 777 and info.batches[0].attributes & TIMESTAMP_TYPE_BIT
    log.close()


def test_follower_appends_keep_offsets_and_reject_going_back(tmp_path: Path) -> None:
    """A follower stores the leader's offsets and epochs; offsets below the LEO are refused (Kafka's
    UnexpectedAppendOffsetException), gaps above it are allowed (compacted leaders)."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)
    model = MemoryLog()
    first = build_batch([(b"a", b"1")] * 3, base_offset=0, partition_leader_epoch=2)
    later = build_batch([(b"b", b"2")] * 2, base_offset=10, partition_leader_epoch=4)
    for target in (log, model):
        target.append_as_follower(first)
        target.append_as_follower(later)
        with pytest.raises(ValueError, match="follower append"):
            target.append_as_follower(build_batch([(b"c", b"3")], base_offset=11))
    assert log.log_end_offset == model.log_end_offset == 12
    assert log.epoch_entries() == model.epoch_entries()
    assert [h.base_offset for h in iter_headers(read_bytes(log.read(0, 1 << 20)))] == [0, 10]
    log.close()


def test_batch_headers_from_an_offset(tmp_path: Path) -> None:
    """batch_headers(start) lists the batches ending at or after start, as the memory log does."""
    file_log, model = _filled(tmp_path)
    for start in (0, 7, 50, file_log.log_end_offset):
        got = [(h.base_offset, h.last_offset, h.crc) for h in file_log.batch_headers(start)]
        want = [(h.base_offset, h.last_offset, h.crc) for h in model.batch_headers(start)]
        assert got == want
    file_log.close()


def test_a_failed_write_leaves_the_log_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails half-way (disk full) leaves no partial batch behind: the next append and
    every read see the log as before the failed one (Kafka would fail the log dir; we roll back)."""
    import errno

    from reference_impl.log import files, segment

    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)
    log.append_as_leader(make_batch(2), 0, 0)
    size = log.segments[0].size
    real = files.pwrite_all

    def half_then_full(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
        real(fd, memoryview(data)[: len(data) // 2], position)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segment, "pwrite_all", half_then_full)
    with pytest.raises(OSError, match="No space"):
        log.append_as_leader(make_batch(3), 0, 0)
    monkeypatch.undo()
    assert os.path.getsize(log.segments[0].log_path) == size and log.log_end_offset == 2
    log.append_as_leader(make_batch(1), 0, 0)
    assert [r.offset for r in records_of(read_bytes(log.read(0, 1 << 20)))] == [0, 1, 2]
    log.close()
