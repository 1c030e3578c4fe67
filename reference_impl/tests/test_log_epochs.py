"""The leader-epoch cache (KIP-101, KIP-279) in both logs, and its checkpoint file."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference_impl.log.api import EpochEntry, PartitionLog
from reference_impl.log.config import LogConfig
from reference_impl.log.epochs import LeaderEpochCache
from reference_impl.log.memory import MemoryLog
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import make_batch


def _cache() -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for epoch, start in [(1, 0), (3, 100), (5, 250)]:
        cache.assign(epoch, start)
    return cache


@pytest.mark.parametrize("epoch, expected", [
    (5, (5, 400)),  # the latest epoch ends at the log end offset
    (3, (3, 250)),  # an older epoch ends where the next one starts
    (4, (3, 250)),  # an epoch never seen: the largest one below it, ending at the next start
    (0, (0, 0)),  # below every entry: the requested epoch, ending at the first start offset
    (6, (-1, -1)),  # above every entry: undefined
    (-1, (-1, -1)),  # undefined epoch
])
def test_end_offset_for_epoch_is_kafkas(epoch: int, expected: tuple[int, int]) -> None:
    """LeaderEpochFileCache.endOffsetFor, case by case, as OffsetsForLeaderEpoch answers."""
    assert _cache().end_offset_for(epoch, log_end_offset=400) == expected


def test_empty_cache_answers_undefined() -> None:
    """With no epoch recorded, OffsetsForLeaderEpoch answers UNDEFINED_EPOCH and offset -1."""
    assert LeaderEpochCache().end_offset_for(0, 10) == (-1, -1)


def test_assign_only_newer_epochs_and_keeps_start_offsets_increasing() -> None:
    """Entries increase in epoch and start offset; a newer epoch at an earlier offset replaces later ones."""
    cache = _cache()
    assert not cache.assign(5, 300)  # not newer
    assert not cache.assign(2, 500)  # older
    assert cache.assign(7, 250)  # newer, starting where epoch 5 started: 5 goes
    assert cache.entries() == [EpochEntry(1, 0), EpochEntry(3, 100), EpochEntry(7, 250)]


def test_truncations_from_both_ends() -> None:
    """truncateFromEnd drops entries at or after the new end; truncateFromStart moves the epoch in force."""
    cache = _cache()
    cache.truncate_from_end(250)
    assert cache.entries() == [EpochEntry(1, 0), EpochEntry(3, 100)]
    cache = _cache()
    cache.truncate_from_start(120)
    assert cache.entries() == [EpochEntry(3, 120), EpochEntry(5, 250)]
    assert not cache.truncate_from_start(120)


@pytest.fixture(params=["memory", "file"])
def any_log(request: pytest.FixtureRequest, tmp_path: Path) -> PartitionLog:
    if request.param == "memory":
        return MemoryLog()
    return FileLog.open(str(tmp_path / "t-0"), LogConfig(), 0)


def test_leader_appends_record_epoch_starts(any_log: PartitionLog) -> None:
    """A leader's first append in a new epoch records (epoch, LEO) in the cache (both logs)."""
    any_log.append_as_leader(make_batch(3), 2, 10)
    any_log.append_as_leader(make_batch(2), 2, 11)
    any_log.append_as_leader(make_batch(4), 5, 12)
    assert any_log.epoch_entries() == [EpochEntry(2, 0), EpochEntry(5, 5)]
    assert any_log.end_offset_for_epoch(2) == (2, 5)
    any_log.advance_log_start_offset(7)
    assert any_log.epoch_entries() == [EpochEntry(5, 7)]
    any_log.truncate_to(7)
    assert any_log.epoch_entries() == []


def test_truncating_at_the_log_end_drops_an_epoch_that_starts_there(any_log: PartitionLog) -> None:
    """A replica that led an epoch without writing holds (epoch, LEO) in its cache; truncating to
    its log end (the leader's answer to its fetch) cuts no record but drops that entry (both logs),
    as Kafka's ``UnifiedLog.truncateTo`` does."""
    any_log.append_as_leader(make_batch(3), 0, 10)
    any_log.assign_epoch(1, 3)
    any_log.truncate_to(5)
    assert any_log.log_end_offset == 3
    assert any_log.epoch_entries() == [EpochEntry(0, 0)]


def test_epoch_cache_survives_reopen_in_its_checkpoint(tmp_path: Path) -> None:
    """The file log writes leader-epoch-checkpoint on every change; a reopen reads the same cache."""
    directory = str(tmp_path / "t-0")
    log = FileLog.open(directory, LogConfig(), 0)
    log.append_as_leader(make_batch(3), 4, 10)
    log.append_as_leader(make_batch(3), 9, 10)
    log.abandon()
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n2\n4 0\n9 3\n"
    again = FileLog.open(directory, LogConfig(), 0)
    assert again.epoch_entries() == [EpochEntry(4, 0), EpochEntry(9, 3)]
    again.close()


def test_missing_epoch_checkpoint_is_rebuilt_from_batches(tmp_path: Path) -> None:
    """Each stored batch carries its partitionLeaderEpoch, so a lost checkpoint is rebuilt from them."""
    directory = tmp_path / "t-0"
    log = FileLog.open(str(directory), LogConfig(), 0)
    log.append_as_leader(make_batch(3), 4, 10)
    log.append_as_leader(make_batch(3), 9, 10)
    log.close()
    (directory / "leader-epoch-checkpoint").unlink()
    again = FileLog.open(str(directory), LogConfig(), 0, clean_shutdown=True)
    assert again.epoch_entries() == [EpochEntry(4, 0), EpochEntry(9, 3)]
    again.close()
