"""A clean killed after any file operation reopens as the old segment set or the new one, never a mix.

The executor reports each step (group written, each ``.cleaned`` → ``.swap``
rename, the commit, each old file → ``.deleted``, each ``.swap`` → final
rename). The kill is a ``BaseException`` raised there: like a killed process
it runs no clean-up code. The directory is then reopened through
``FileLog.open`` (and once through a new ``LogManager``), whose loader
finishes or undoes the clean.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from reference_impl.log.cleaning.cleaner import LogCleaner
from reference_impl.log.cleaning.executor import clean_log
from reference_impl.log.config import LogConfig
from reference_impl.log.manager import LogManager
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import read_bytes
from reference_impl.protocol.record_set import build_batch, build_control_batch, records_of

CONFIG = LogConfig(segment_bytes=1500, cleanup_policy=("compact",), index_interval_bytes=64,
                   delete_retention_ms=1_000, min_cleanable_dirty_ratio=0.0)
NOW = 50_000
LEFTOVERS = (".cleaned", ".swap", ".deleted")


class Killed(BaseException):
    """The process died here."""


class KillAt:
    """A step hook that kills the clean after ``count`` steps."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.seen = 0

    def __call__(self, step: str) -> None:
        if self.seen == self.count:
            raise Killed(step)
        self.seen += 1


Original = tuple[Path, int, list[str], list[object], list[object]]


def _fill(directory: Path) -> int:
    """Keys overwritten many times, tombstones, an aborted and a committed transaction; several segments."""
    log = FileLog.open(str(directory), CONFIG, 0)
    for i in range(120):
        key = b"k%d" % (i % 9)
        value = None if i % 17 == 0 else b"v%d" % i
        log.append_as_leader(bytearray(build_batch([(key, value)], base_timestamp=1000 + i)), 0, 1000 + i)
        if i in (40, 80):
            for commit in (False, True):
                pid = 5 if commit else 6
                data = build_batch([(b"k1", b"txn-%d-%d" % (i, commit))], base_timestamp=2000 + i,
                                   producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)
                log.append_as_leader(bytearray(data), 0, 2000 + i)
                marker = build_control_batch(commit=commit, producer_id=pid, producer_epoch=0,
                                             coordinator_epoch=0, timestamp=2000 + i)
                log.append_as_leader(bytearray(marker), 0, 2000 + i)
    log.roll(5000)
    log.append_as_leader(bytearray(build_batch([(b"k0", b"tail")], base_timestamp=5000)), 0, 5000)
    end = log.log_end_offset
    log.close()
    return end


def _open(directory: Path, end: int) -> FileLog:
    return FileLog.open(str(directory), CONFIG, NOW, recovery_point=end)


def _records(log: FileLog) -> list[tuple[int, bytes | None, bytes | None]]:
    data = read_bytes(log.read(log.log_start_offset, 1 << 30))
    return [(r.offset, r.key, r.value) for r in records_of(data)]


def _clean(log: FileLog, on_step: object = None) -> None:
    plan = LogCleaner(log.directory).plan(("t", 0), log, log.log_end_offset, NOW)
    assert plan is not None and plan.cleanable
    clean_log(log, plan, NOW, map_capacity=1000, on_step=on_step)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Original:
    """The filled directory, its end offset, the clean's step names, and the records before and after."""
    root = tmp_path_factory.mktemp("crash")
    source = root / "t-0"
    end = _fill(source)
    work = root / "reference" / "t-0"
    shutil.copytree(source, work)
    log = _open(work, end)
    old = _records(log)
    steps: list[str] = []
    _clean(log, steps.append)
    new = _records(log)
    log.close()
    assert len(new) < len(old)
    return source, end, steps, list(old), list(new)


def test_the_clean_reports_every_phase(original: Original) -> None:
    _source, _end, steps, _old, _new = original
    phases = [s.split(" ")[0] for s in steps]
    assert phases[0] == "wrote" and phases[-1] == "done"
    assert phases.index("cleaned") < phases.index("swap") < phases.index("committed")
    assert phases.index("committed") < phases.index("delete") < phases.index("replace")


def test_a_kill_after_any_step_reopens_as_old_or_new(
    original: Original, tmp_path: Path
) -> None:
    source, end, steps, old, new = original
    outcomes = []
    for k, name in enumerate(steps):
        work = tmp_path / f"kill-{k}" / "t-0"
        shutil.copytree(source, work)
        log = _open(work, end)
        with pytest.raises(Killed):
            _clean(log, KillAt(k))
        log.abandon()
        reopened = _open(work, end)
        got = _records(reopened)
        assert got in (old, new), f"killed after {k} steps (at {name!r}): neither the old nor the new records"
        assert not [n for n in os.listdir(work) if n.endswith(LEFTOVERS)], name
        assert reopened.log_end_offset == end
        outcomes.append("new" if got == new and got != old else "old")
        if got == old:  # the next clean gets there
            _clean(reopened)
            assert _records(reopened) == new
        reopened.close()
    committed = max(i for i, name in enumerate(steps) if name.startswith("swap "))  # the commit point
    assert outcomes[:committed] == ["old"] * committed
    assert outcomes[committed:] == ["new"] * (len(steps) - committed)


def test_a_log_manager_restart_finishes_a_committed_clean(
    original: Original, tmp_path: Path
) -> None:
    """Through the broker's storage: a kill right after the commit point, then a new LogManager."""
    _source, _end, _steps, old, new = original
    data_dir = tmp_path / "data"
    end = _fill(data_dir / "t-0")
    configs = {**CONFIG.to_kafka(), "internal.segment.bytes": "1500"}
    manager = LogManager(str(data_dir), node_id=1)
    log = manager.open_log("t", 0, None, configs, NOW)
    assert _records(log) == old

    def kill(step: str) -> None:
        if step == "committed":
            raise Killed(step)

    with pytest.raises(Killed):
        _clean(log, kill)
    manager.abandon()
    manager = LogManager(str(data_dir), node_id=1)
    reopened = manager.open_log("t", 0, None, configs, NOW)
    assert _records(reopened) == new and reopened.log_end_offset == end
    manager.close()
