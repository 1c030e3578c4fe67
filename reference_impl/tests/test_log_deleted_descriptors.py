"""No descriptor outlives the file it names (issue 17, item 5: descriptors bounded whatever happens).

``kafka-harness fuzz --target reference --seed 1`` found the broker's
descriptors growing about 0.5 per 1,000 requests, some of them segment files
already deleted ("(deleted)" in ``/proc/PID/fd``): the fetch path's shared
readers (reference_impl/log/descriptors.py, ``DescriptorPool.reader``) of a
segment were closed only by retention's ``LogSegment.delete`` and only when
idle, so a topic deletion, a compaction, or a deletion while a ``sendfile``
was in flight left them open until the pool evicted them, which a pool far
below its 4,096 descriptors never does. The disk space stayed taken too.

Kafka closes a segment's files as it deletes them
(storage/src/main/java/org/apache/kafka/storage/internals/log/LocalLog.java,
``deleteSegmentFiles``: renamed ``.deleted``, then ``LogSegment.deleteIfExists``,
whose ``FileRecords.deleteIfExists`` closes the channel before deleting the
file); here the shared readers go with the segment
(``LogSegment.close_without_flush``), a pinned one as its send ends.
"""

from __future__ import annotations

import os
from pathlib import Path

from reference_impl.log.api import FileRegion
from reference_impl.log.cleaning.cleaner import LogCleaner
from reference_impl.log.cleaning.executor import clean_log
from reference_impl.log.config import LogConfig
from reference_impl.log.descriptors import POOL
from reference_impl.log.files import read_region
from reference_impl.log.manager import LogManager
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import make_batch, read_bytes
from reference_impl.protocol.record_set import build_batch, records_of

SMALL_SEGMENTS = LogConfig(segment_bytes=1024)


def held_under(root: Path) -> tuple[list[str], list[str]]:
    """(deleted, live) files under ``root`` this process holds a descriptor of, from ``/proc/self/fd``."""
    deleted: list[str] = []
    live: list[str] = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        if target.startswith(str(root)):
            (deleted if target.endswith(" (deleted)") else live).append(target)
    return deleted, live


def fill(log: FileLog, batches: int = 6) -> None:
    """``batches`` batches of three 400-byte records: one segment each under SMALL_SEGMENTS."""
    for _ in range(batches):
        log.append_as_leader(make_batch(3, value_size=400), 0, 0)


def fetch_every_segment(log: FileLog) -> list[FileRegion]:
    """Read each segment as a fetch does (a region, then its bytes through the pool's shared reader)."""
    regions = []
    for segment in log.segments:
        for chunk in log.read(segment.base_offset, 1 << 20).chunks[:1]:
            assert isinstance(chunk, FileRegion)
            assert len(read_region(chunk)) == chunk.length
            regions.append(chunk)
    return regions


def readers_of(regions: list[FileRegion]) -> int:
    return sum(1 for r in regions if POOL.has_reader(r.path, r.file_id))


def test_retention_after_delete_records_closes_the_readers_of_deleted_segments(tmp_path: Path) -> None:
    log = FileLog.open(str(tmp_path / "t-0"), SMALL_SEGMENTS, 0)
    fill(log)
    regions = fetch_every_segment(log)
    assert len(log.segments) == 6 and readers_of(regions) == 6
    log.advance_log_start_offset(log.log_end_offset - 1)  # DeleteRecords
    assert log.apply_retention(0) == 5
    assert held_under(tmp_path)[0] == []
    assert readers_of(regions) == 1  # the remaining segment's reader stays for the next fetch
    log.close()
    assert held_under(tmp_path) == ([], [])


def test_a_deleted_topic_leaves_no_descriptor(tmp_path: Path) -> None:
    """DeleteTopics: the log is abandoned and its directory removed; its segments' readers go too."""
    manager = LogManager(str(tmp_path / "data"), node_id=1, default_config=SMALL_SEGMENTS)
    log = manager.open_log("gone", 0, None, {}, 0)
    fill(log)
    regions = fetch_every_segment(log)
    manager.delete_log("gone", 0)
    assert held_under(tmp_path)[0] == []
    assert readers_of(regions) == 0
    manager.close()
    assert held_under(tmp_path) == ([], [])


def test_a_follower_truncation_closes_the_readers_of_the_segments_it_drops(tmp_path: Path) -> None:
    log = FileLog.open(str(tmp_path / "t-0"), SMALL_SEGMENTS, 0)
    fill(log)
    regions = fetch_every_segment(log)
    log.truncate_to(3)
    assert held_under(tmp_path)[0] == []
    log.truncate_fully_and_start_at(100)
    assert held_under(tmp_path)[0] == [] and readers_of(regions) == 0
    log.close()


def test_a_send_in_flight_keeps_its_descriptor_until_it_ends_then_closes_it(tmp_path: Path) -> None:
    """A segment deleted while its region is being sent: the pinned descriptor stays valid (the send
    completes with the old bytes, as a ``sendfile`` from an unlinked file does), then closes at once."""
    log = FileLog.open(str(tmp_path / "t-0"), SMALL_SEGMENTS, 0)
    fill(log)
    regions = fetch_every_segment(log)
    first = regions[0]
    expected = read_region(first)
    reader = POOL.reader(first.path, first.file_id)
    with reader.pinned() as fd:
        log.advance_log_start_offset(log.log_end_offset - 1)
        log.apply_retention(0)
        assert not os.path.exists(first.path)
        assert os.pread(fd, first.length, first.position) == expected
        assert held_under(tmp_path)[0] == [first.path + " (deleted)"]
        assert readers_of(regions) == 1  # the remaining segment's; the pinned one left the table
    assert held_under(tmp_path)[0] == []
    assert not reader.is_open and reader.closed
    log.close()


def test_compaction_closes_the_readers_of_the_segments_it_replaces(tmp_path: Path) -> None:
    """The cleaner renames the old segments to ``.deleted`` and removes them: their readers go too."""
    config = LogConfig(segment_bytes=1024, cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0)
    log = FileLog.open(str(tmp_path / "t-0"), config, 0)
    for i in range(40):
        log.append_as_leader(bytearray(build_batch([(b"k%d" % (i % 3), b"v" * 100)], base_timestamp=i)), 0, i)
    log.roll(100)
    regions = fetch_every_segment(log)
    plan = LogCleaner(log.directory).plan(("t", 0), log, log.log_end_offset, 1000)
    assert plan is not None and plan.cleanable
    clean_log(log, plan, 1000, map_capacity=100)
    assert not {r.file_id for r in regions} & {s.file_id for s in log.segments}  # all swapped out
    assert held_under(tmp_path)[0] == []
    assert readers_of(regions) == 0  # every old segment was replaced (the active one was empty)
    kept = [r.key for r in records_of(read_bytes(log.read(log.log_start_offset, 1 << 20)))]
    assert sorted(k for k in kept if k is not None) == [b"k0", b"k1", b"k2"]
    log.close()
    assert held_under(tmp_path) == ([], [])
