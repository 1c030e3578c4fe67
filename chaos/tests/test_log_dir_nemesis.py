"""The log-dir-fail nemesis (:mod:`chaos.nemesis.log_dirs`) on a reference broker with two log
directories: partition 0 is moved (AlterReplicaLogDirs) into the second directory, which fails: its
partition answers KAFKA_STORAGE_ERROR while the partition in the other directory keeps taking
writes; when the window ends the broker is restarted with the directory back and every acknowledged
record is there."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaos.history import Recorder
from chaos.nemesis.faults import Nemesis
from chaos.nemesis.log_dirs import LOG_DIRS_CONFIG
from chaos.nemesis.schedule import Planned
from chaos.nemesis.topology import Topology
from fixtures.targets import launch
from fixtures.wire import WireClient
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch

WAIT_S = 20.0


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_S:.0f} s: {what}")
        time.sleep(0.2)


def _produce(address: str, topic: str, partition: int) -> ErrorCode:
    wire = WireClient(address)
    try:
        data = [{"index": partition, "records": build_batch([(None, b"v")])}]
        answer = wire.request(
            "produce", 9, transactional_id=None, acks=-1, timeout=5_000,
            topic_data=[{"name": topic, "partition_data": data}],
        )  # fmt: skip
        return ErrorCode(answer.responses[0].partition_responses[0].error_code)
    finally:
        wire.close()


def _end(address: str, topic: str, partition: int) -> Any:
    wire = WireClient(address)
    try:
        answer = wire.request(
            "list_offsets", 7, replica_id=-1, isolation_level=0,
            topics=[{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
        )  # fmt: skip
        return answer.topics[0].partitions[0]
    finally:
        wire.close()


def test_log_dir_fail_takes_one_directory_offline_and_puts_it_back(tmp_path: Path) -> None:
    topic = f"nemesis-{uuid.uuid4().hex[:6]}"
    configs = [LOG_DIRS_CONFIG, "log.retention.check.interval.ms=300"]  # checkpoints (which notice) often
    started_s = time.monotonic()
    with launch("reference", workdir=tmp_path, broker_configs=configs) as target:
        address = target.bootstrap_servers
        wire = WireClient(address)
        try:
            body = {
                "name": topic,
                "num_partitions": 2,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            created = wire.request("create_topics", 7, topics=[body], timeout=10_000, validate_only=False)
            assert created.topics[0].error_code == ErrorCode.none
            # both partitions in the node's first directory (the metadata log's): the nemesis must move
            # partition 0 out before it fails a directory (failing the first would halt the broker)
            dirs = [str(d.log_dir) for d in wire.request("describe_log_dirs", 1, topics=None).results]
            to_first = [{"path": dirs[0], "topics": [{"name": topic, "partitions": [0, 1]}]}]
            moved = wire.request("alter_replica_log_dirs", 1, dirs=to_first)
            assert {p.error_code for t in moved.results for p in t.partitions} == {ErrorCode.none}
        finally:
            wire.close()
        acked = {0: 0, 1: 0}
        for p in (0, 1):
            for _ in range(3):
                assert _produce(address, topic, p) == ErrorCode.none
                acked[p] += 1
        nemesis = Nemesis(Recorder(), Topology.direct([1]), target, topic)
        plan = Planned(0, "log-dir-fail", 0.0, 1.0, 0)
        nemesis.start(plan)
        started = nemesis.recorder.history.nemesis_ops()[0].value
        assert "error" not in started, started
        assert Path(started["log_dir"]).is_file() and started["moved"] and started["log_dir"] != dirs[0]

        def refused() -> bool:
            code = _produce(address, topic, 0)
            acked[0] += code == ErrorCode.none  # written to the renamed files before the broker noticed
            return code == ErrorCode.kafka_storage_error

        _until(refused, "partition 0 answers KAFKA_STORAGE_ERROR")
        assert _produce(address, topic, 1) == ErrorCode.none  # the other directory keeps serving
        acked[1] += 1
        nemesis.stop(plan)
        stopped = nemesis.recorder.history.nemesis_ops()[1].value
        assert stopped.get("restored") == started["log_dir"] and "error" not in stopped, stopped
        assert Path(started["log_dir"]).is_dir()
        _until(lambda: _produce(address, topic, 0) == ErrorCode.none, "partition 0 serves after the restart")
        acked[0] += 1
        for p in (0, 1):
            assert _end(address, topic, p).offset == acked[p]  # nothing acknowledged was lost
        print(
            f"\nlog-dir-fail: failed, noticed, restored and restarted in {time.monotonic() - started_s:.1f} s"
        )
