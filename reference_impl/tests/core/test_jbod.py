"""A broker over several log directories: DescribeLogDirs, AlterReplicaLogDirs and a failed directory,
through the sans-IO broker with the file-backed store (``reference_impl/log/dir_set.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, cast

from reference_impl.core.handlers.k34_alter_replica_log_dirs import MAX_PARTITIONS
from reference_impl.core.ports import MemoryLogStore
from reference_impl.log.dir_set import LogDirSet
from reference_impl.log.testing import make_batch
from reference_impl.protocol.errors import ErrorCode
from reference_impl.server.storage import FileLogStore

from .harness import BrokerHarness, request
from .test_data_path import create, produce


def _broker(tmp_path: Path, n: int = 2) -> tuple[BrokerHarness, list[str]]:
    paths = [str(tmp_path / f"d{i}") for i in range(n)]
    store = FileLogStore(LogDirSet(paths, node_id=1, cluster_id="test-cluster"))
    return BrokerHarness(store=cast(MemoryLogStore, store)), paths  # the harness types its usual store


def _describe(h: BrokerHarness, version: int = 4) -> dict[str, Any]:
    response = h.call(request(35, version, topics=None))
    assert response.error_code == ErrorCode.none
    return {r.log_dir: r for r in response.results}


def _placed(result: Any) -> set[tuple[str, int]]:
    return {(t.name, p.partition_index) for t in result.topics for p in t.partitions}


def _alter(h: BrokerHarness, path: str, topic: str, *partitions: int) -> dict[int, ErrorCode]:
    dirs = [{"path": path, "topics": [{"name": topic, "partitions": partitions}]}]
    response = h.call(request(34, 2, dirs=dirs))
    return {p.partition_index: p.error_code for t in response.results for p in t.partitions}


def test_describe_log_dirs_lists_every_directory_with_its_partitions(tmp_path: Path) -> None:
    h, paths = _broker(tmp_path)
    create(h, "t", partitions=4)
    for p in range(4):
        assert produce(h, "t", p, bytes(make_batch(p + 1))).error_code == ErrorCode.none
    results = _describe(h)
    assert sorted(results) == sorted(paths)
    placed = {path: _placed(r) for path, r in results.items()}
    assert {len(v) for v in placed.values()} == {2}  # fewest partitions first
    assert set().union(*placed.values()) == {("t", p) for p in range(4)}
    for r in results.values():
        assert r.error_code == ErrorCode.none and r.total_bytes >= r.usable_bytes > 0
        for t in r.topics:
            for p in t.partitions:
                assert p.partition_size > 0 and p.offset_lag == 0 and not p.is_future_key
    only = h.call(request(35, 4, topics=[{"topic": "t", "partitions": [3]}]))
    assert set().union(*(_placed(r) for r in only.results)) == {("t", 3)}


def test_alter_replica_log_dirs_moves_a_replica_and_checks_the_path(tmp_path: Path) -> None:
    h, paths = _broker(tmp_path)
    create(h, "t", partitions=2)
    for _ in range(3):
        assert produce(h, "t", 0, bytes(make_batch(2))).error_code == ErrorCode.none
    src = h.store.dir_of("t", 0)
    dest = next(p for p in paths if p != src)
    assert _alter(h, str(tmp_path / "elsewhere"), "t", 0) == {0: ErrorCode.log_dir_not_found}
    assert _alter(h, dest + "/../" + dest.rsplit("/", 1)[1], "t", 0) == {0: ErrorCode.log_dir_not_found}
    assert _alter(h, dest, "nope", 0) == {0: ErrorCode.replica_not_available}
    assert _alter(h, dest, "t", 0) == {0: ErrorCode.none}
    assert h.store.dir_of("t", 0) == dest and ("t", 0) in _placed(_describe(h)[dest])
    assert _alter(h, dest, "t", 0) == {0: ErrorCode.none}  # already there
    assert produce(h, "t", 0, bytes(make_batch(2))).base_offset == 6  # the moved replica keeps serving
    offsets = h.call(
        request(2, 7, replica_id=-1, isolation_level=0, topics=[
            {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}
        ])
    )  # fmt: skip
    assert offsets.topics[0].partitions[0].offset == 8


def test_a_failed_directory_takes_its_partitions_offline_and_only_those(tmp_path: Path) -> None:
    h, paths = _broker(tmp_path)
    create(h, "t", partitions=4)
    where = {p: h.store.dir_of("t", p) for p in range(4)}
    victim = paths[1]
    lost = [p for p in range(4) if where[p] == victim]
    kept = [p for p in range(4) if where[p] != victim]
    assert lost and kept
    shutil.rmtree(victim)
    Path(victim).write_text("not a directory")
    h.advance(60_000)  # maintenance checkpoints meet the missing directory
    assert h.broker.halt_reason is None  # not the metadata log's directory: the broker serves on
    for p in lost:
        assert produce(h, "t", p, bytes(make_batch(1))).error_code == ErrorCode.kafka_storage_error
    for p in kept:
        assert produce(h, "t", p, bytes(make_batch(1))).error_code == ErrorCode.none
    results = _describe(h)
    assert results[victim].error_code == ErrorCode.kafka_storage_error and not results[victim].topics
    assert results[paths[0]].error_code == ErrorCode.none
    assert _alter(h, victim, "t", kept[0]) == {kept[0]: ErrorCode.kafka_storage_error}
    assert _alter(h, paths[0], "t", lost[0]) == {lost[0]: ErrorCode.kafka_storage_error}


def test_the_broker_halts_when_the_metadata_log_directory_fails(tmp_path: Path) -> None:
    """Kafka halts a broker whose metadata log directory (or every log directory) failed; another
    directory's failure is not fatal."""
    h, paths = _broker(tmp_path, 3)
    create(h, "t", partitions=3)
    shutil.rmtree(paths[2])
    Path(paths[2]).write_text("not a directory")
    h.advance(60_000)
    assert h.broker.halt_reason is None
    shutil.rmtree(paths[0])
    Path(paths[0]).write_text("not a directory")
    h.advance(60_000)
    assert h.broker.halt_reason is not None and paths[0] in h.broker.halt_reason


def test_alter_replica_log_dirs_is_bounded(tmp_path: Path) -> None:
    """Hostile input: at most MAX_PARTITIONS partitions are considered (the rest INVALID_REQUEST), and
    a path for replicas the broker does not hold leaves nothing behind."""
    h, paths = _broker(tmp_path)
    many = list(range(MAX_PARTITIONS + 5))
    answer = _alter(h, paths[1], "ghost", *many)
    codes = [answer[p] for p in many]
    assert codes.count(ErrorCode.replica_not_available) == MAX_PARTITIONS
    assert codes.count(ErrorCode.invalid_request) == 5
    assert not cast(FileLogStore, h.store).dirs._preferred  # nothing kept for replicas not placed here
