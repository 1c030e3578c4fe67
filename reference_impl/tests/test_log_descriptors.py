"""The log's file descriptors are bounded whatever the partition count (issue 17, item 5).

One CreatePartitions to 100,000 once made the broker open three files per
partition until ``EMFILE`` at 6,662 partitions; every later log open, accept
and restart failed. Segment and index files now open on demand through one
bounded pool (reference_impl/log/descriptors.py).
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from reference_impl import defects
from reference_impl.log.config import LogConfig
from reference_impl.log.descriptors import POOL, FileReplacedError, PooledFile
from reference_impl.log.files import read_region
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import make_batch, read_bytes
from reference_impl.protocol.record_set import records_of

CAPACITY = 8


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture()
def small_pool() -> Iterator[None]:
    """The process-wide pool bounded at ``CAPACITY`` for one test, then as it was."""
    before = POOL.capacity
    POOL.resize(CAPACITY)
    try:
        yield
    finally:
        POOL.resize(before)


def test_many_partitions_hold_at_most_the_pool(tmp_path: Path, small_pool: None) -> None:
    """60 logs (180 files), each written, read, rolled and flushed: never more than the pool's descriptors
    open, and every log reads back its records (files reopen on demand)."""
    before = open_descriptors()
    logs = []
    for p in range(60):
        log = FileLog.open(str(tmp_path / f"t-{p}"), LogConfig(segment_bytes=1024), 0)
        log.append_as_leader(make_batch(3, value_size=400), 0, 0)
        logs.append(log)
        assert POOL.open_count <= CAPACITY
    for log in logs:
        log.append_as_leader(make_batch(3, value_size=400), 0, 0)  # rolls a segment
        log.flush()
    peak = open_descriptors() - before
    for p, log in enumerate(logs):
        assert [r.offset for r in records_of(read_bytes(log.read(0, 1 << 20)))] == list(range(6)), p
    assert peak <= CAPACITY and POOL.open_count <= CAPACITY
    assert POOL.reopened > 0
    for log in logs:
        log.close()


def test_reopened_logs_recover_and_serve(tmp_path: Path, small_pool: None) -> None:
    """A log closed and opened again (a restart) under the same bound reads the same records."""
    for p in range(30):
        log = FileLog.open(str(tmp_path / f"t-{p}"), LogConfig(), 0)
        log.append_as_leader(make_batch(2), 0, 0)
        log.close()
    before = open_descriptors()
    reopened = [FileLog.open(str(tmp_path / f"t-{p}"), LogConfig(), 0) for p in range(30)]
    assert open_descriptors() - before <= CAPACITY
    assert all(log.log_end_offset == 2 for log in reopened)
    for log in reopened:
        log.close()


def test_seeded_defect_keeps_every_file_open(tmp_path: Path, small_pool: None) -> None:
    """``unbounded-partitions`` brings back the old behaviour (three descriptors per partition kept),
    which the bound above catches."""
    with defects.seeded(defects.UNBOUNDED_PARTITIONS):
        logs = [FileLog.open(str(tmp_path / f"t-{p}"), LogConfig(), 0) for p in range(10)]
        assert POOL.open_count >= 30
    for log in logs:
        log.close()


def test_running_out_of_descriptors_closes_idle_files_and_retries(tmp_path: Path) -> None:
    """EMFILE while opening a log file (connections took the rest) is not fatal: the pool closes its
    idle descriptors and opens again. The process's own limit is lowered for the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    before = POOL.capacity
    POOL.resize(10_000)  # the pool alone would never evict: only EMFILE makes it
    logs = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_descriptors() + 24, hard))
        for p in range(20):  # 60 files, far more than the 24 descriptors left
            log = FileLog.open(str(tmp_path / f"t-{p}"), LogConfig(), 0)
            log.append_as_leader(make_batch(1), 0, 0)
            logs.append(log)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        POOL.resize(before)
    assert [log.log_end_offset for log in logs] == [1] * 20
    for log in logs:
        log.close()


def test_a_replaced_file_is_never_read_through_a_reopened_descriptor(tmp_path: Path) -> None:
    """The cleaner renames a new segment over the old name: a pooled file that lost its descriptor must
    not reopen the other file, and a region read from the old file refuses to read the new one."""
    path = tmp_path / "00000000000000000000.log"
    pooled = PooledFile(str(path))
    os.pwrite(pooled.fd(), b"old", 0)
    replacement = tmp_path / "new"
    replacement.write_bytes(b"new")
    os.replace(replacement, path)
    pooled.release()
    with pytest.raises(FileReplacedError):
        pooled.fd()
    with pytest.raises(FileReplacedError):
        POOL.reader(str(path), pooled.file_id)
    pooled.close()


def test_a_pinned_reader_survives_eviction(tmp_path: Path, small_pool: None) -> None:
    """A region being sent stays open while the pool evicts everything else around it."""
    log = FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)
    log.append_as_leader(make_batch(2), 0, 0)
    region = log.read(0, 1 << 20).chunks[0]
    reader = POOL.reader(region.path, region.file_id)  # type: ignore[union-attr]
    with reader.pinned() as fd:
        others = [PooledFile(str(tmp_path / f"other-{i}")) for i in range(3 * CAPACITY)]
        assert reader.is_open and os.fstat(fd).st_ino == region.file_id  # type: ignore[union-attr]
    assert len(read_region(region)) == region.length  # type: ignore[arg-type, union-attr]
    for other in others:
        other.close()
    log.close()
