"""Several log directories (JBOD, ``reference_impl/log/dir_set.py``): placement, identity, moves,
failures, and the shell's reading of ``log.dirs``."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from reference_impl.log.checkpoints import read_meta_properties
from reference_impl.log.dir_set import LogDirSet, next_log_dir, parse_log_dirs
from reference_impl.log.guarded import FailedLog, LogDirOfflineError
from reference_impl.log.manager import LogDirError
from reference_impl.log.testing import make_batch, read_bytes
from reference_impl.server.storage import FileLogStore, log_dir_paths

TOPIC_ID = uuid.UUID(int=7)
SMALL_SEGMENTS = {"internal.segment.bytes": "2000"}
TINY_SEGMENTS = {"internal.segment.bytes": "200"}


def _dirs(tmp_path: Path, n: int = 3) -> list[str]:
    return [str(tmp_path / f"d{i}") for i in range(n)]


def _replace_with_file(path: str) -> None:
    """What Kafka's LogDirFailureTest does to fail a directory: delete it, put a file in its place."""
    shutil.rmtree(path)
    Path(path).write_text("not a directory")


def test_partitions_go_to_the_directory_with_fewest(tmp_path: Path) -> None:
    paths = _dirs(tmp_path)
    dirs = LogDirSet(paths, node_id=1, cluster_id="c1")
    for p in range(7):
        dirs.open_log("t", p, TOPIC_ID, {}, 0)
    counts = [len(dirs.logs_in(p)) for p in paths]
    assert sorted(counts) == [2, 2, 3] and counts[0] == 3  # ties go to the first configured
    assert next_log_dir(paths, {paths[0]: 3, paths[1]: 2, paths[2]: 2}) == paths[1]
    with pytest.raises(LogDirOfflineError):
        next_log_dir([], {})
    dirs.close()


def test_each_directory_has_its_own_identity(tmp_path: Path) -> None:
    paths = _dirs(tmp_path)
    LogDirSet(paths, node_id=4, cluster_id="c1").close()
    metas = [read_meta_properties(p) for p in paths]
    assert all(m is not None and m.node_id == 4 and m.cluster_id == "c1" for m in metas)
    ids = {m.directory_id for m in metas if m is not None}
    assert len(ids) == 3 and None not in ids
    again = LogDirSet(paths, node_id=4)  # the ids survive a restart
    assert {again.directory_id(p) for p in paths} == ids and again.cluster_id == "c1"
    again.close()
    with pytest.raises(LogDirError, match=r"node\.id"):
        LogDirSet(paths, node_id=5)


def test_a_move_copies_then_swaps_and_survives_a_restart(tmp_path: Path) -> None:
    paths = _dirs(tmp_path, 2)
    dirs = LogDirSet(paths, node_id=1, cluster_id="c1")
    log = dirs.open_log("t", 0, TOPIC_ID, SMALL_SEGMENTS, 0)
    for _ in range(30):
        log.append_as_leader(make_batch(3), 0, 0)
    log.advance_log_start_offset(6)
    before = read_bytes(log.read(6, 1 << 22))
    src = dirs.dir_of("t", 0)
    assert src is not None
    dest = next(p for p in paths if p != src)
    dirs.checkpoint({("t", 0): 80})
    moved = dirs.move_log("t", 0, dest, TOPIC_ID, SMALL_SEGMENTS, 0)
    assert dirs.dir_of("t", 0) == dest and not os.path.exists(os.path.join(src, "t-0"))
    assert (moved.log_start_offset, moved.log_end_offset) == (6, 90)
    assert read_bytes(moved.read(6, 1 << 22)) == before
    assert not [n for n in os.listdir(dest) if n.endswith("-future")]
    moved.append_as_leader(make_batch(2), 0, 0)  # the new log takes writes
    dirs.close()
    again = LogDirSet(paths, node_id=1)
    assert again.dir_of("t", 0) == dest
    reopened = again.open_log("t", 0, TOPIC_ID, {}, 0)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (6, 92)
    assert again.high_watermarks()[("t", 0)] == 80
    again.close()


def test_a_partition_in_two_directories_refuses_to_start(tmp_path: Path) -> None:
    paths = _dirs(tmp_path, 2)
    dirs = LogDirSet(paths, node_id=1, cluster_id="c1")
    dirs.open_log("t", 0, TOPIC_ID, {}, 0).append_as_leader(make_batch(1), 0, 0)
    src = dirs.dir_of("t", 0)
    assert src is not None
    dirs.close()
    other = next(p for p in paths if p != src)
    shutil.copytree(os.path.join(src, "t-0"), os.path.join(other, "t-0"))
    with pytest.raises(LogDirError, match="in both"):
        LogDirSet(paths, node_id=1)


def test_a_failed_directory_goes_offline_and_the_others_keep_serving(tmp_path: Path) -> None:
    paths = _dirs(tmp_path, 2)
    dirs = LogDirSet(paths, node_id=1, cluster_id="c1")
    logs = {p: dirs.open_log("t", p, TOPIC_ID, {}, 0) for p in range(4)}
    for log in logs.values():
        log.append_as_leader(make_batch(2), 0, 0)
    victim = paths[1]
    lost = [p for p in range(4) if dirs.dir_of("t", p) == victim]
    kept = [p for p in range(4) if p not in lost]
    _replace_with_file(victim)
    dirs.checkpoint({("t", p): 2 for p in range(4)})  # the next checkpoint meets the missing directory
    assert dirs.failure_count == 1 and not dirs.is_online(victim) and dirs.is_online(paths[0])
    assert dirs.error(victim)
    for p in lost:
        assert isinstance(dirs.open_log("t", p, TOPIC_ID, {}, 0), FailedLog)
        with pytest.raises(LogDirOfflineError):
            dirs.open_log("t", p, TOPIC_ID, {}, 0).append_as_leader(make_batch(1), 0, 0)
    for p in kept:
        assert logs[p].append_as_leader(make_batch(1), 0, 0).last_offset == 2
    dirs.open_log("t", 9, TOPIC_ID, {}, 0)  # new partitions go to the directories left
    assert dirs.dir_of("t", 9) == paths[0]
    with pytest.raises(LogDirOfflineError):
        dirs.move_log("t", kept[0], victim, TOPIC_ID, {}, 0)
    dirs.close()
    again = LogDirSet(paths, node_id=1)  # still broken at the next start: offline from the start
    assert not again.is_online(victim) and again.failure_count == 1
    again.close()


def test_an_io_error_inside_a_log_takes_its_directory_offline(tmp_path: Path) -> None:
    paths = _dirs(tmp_path, 2)
    dirs = LogDirSet(paths, node_id=1, cluster_id="c1")
    log = dirs.open_log("t", 0, TOPIC_ID, TINY_SEGMENTS, 0)
    where = dirs.dir_of("t", 0)
    assert where is not None
    _replace_with_file(where)
    with pytest.raises(LogDirOfflineError):
        for _ in range(20):  # rolls a segment: a new file in the missing directory
            log.append_as_leader(make_batch(5), 0, 0)
    assert not dirs.is_online(where) and dirs.failure_count == 1
    dirs.close()


def test_the_shell_reads_log_dirs(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert log_dir_paths(a, None, None) == [a]
    assert log_dir_paths(None, f"{a},{b},{a}", None) == [a, b]
    assert log_dir_paths(None, None, b) == [b]  # log.dir when log.dirs is not set
    assert log_dir_paths(b, f"{a}, {b}", "ignored") == [b, a]  # --data-dir: the metadata directory first
    with pytest.raises(ValueError, match="not one of"):
        log_dir_paths(str(tmp_path / "c"), f"{a},{b}", None)
    with pytest.raises(ValueError):
        log_dir_paths(None, None, None)
    with pytest.raises(ValueError, match="at most"):
        parse_log_dirs(",".join(f"/x{i}" for i in range(65)))
    store = FileLogStore(LogDirSet([a, b], node_id=1))
    infos = store.log_dirs()
    assert [i.path for i in infos] == [a, b] and all(i.online and i.total_bytes > 0 for i in infos)
    store.close()
