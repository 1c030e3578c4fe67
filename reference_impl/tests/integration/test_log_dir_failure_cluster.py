"""A failed log directory on a three-node reference cluster (issue 20, JBOD, KIP-858).

Each node has two log directories (``log.dirs``). The second one (not the metadata log's, whose
failure halts a broker) of the node leading partition 0 is failed the way Kafka's
``LogDirFailureTest`` (``core/src/test/scala/integration/kafka/server/LogDirFailureTest.scala``)
fails one: the directory is deleted and a file put in its place; the node's next checkpoint meets
it. Then, without the node stopping: its partitions in that directory answer KAFKA_STORAGE_ERROR,
DescribeLogDirs reports the directory offline, the controller (told by the node's heartbeat) moves
their leaderships to other replicas and drops the node from their ISRs, the records written before
are all there on the new leaders, and acks=all writes to every partition succeed, those whose ISR
still holds the node included (its other directory keeps replicating).
On demand (``cluster_full``, KH_CLUSTER_FULL=1, about 30 s more): the node restarted with the
directory still failed keeps those partitions offline (the controller recorded their directory),
not recreated empty, and is back in the ISRs of the others.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from fixtures.targets import launch
from fixtures.wire import WireClient
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch

from .settle import until

PARTITIONS = 6


def _metadata(wire: WireClient, topic: str) -> dict[int, Any]:
    answer = wire.request("metadata", 12, topics=[{"name": topic}], allow_auto_topic_creation=False)
    return {int(p.partition_index): p for t in answer.topics for p in t.partitions}


def _produce(wire: WireClient, topic: str, partition: int, value: bytes) -> Any:
    batch = build_batch([(None, value)])
    answer = wire.request(
        "produce", 9, transactional_id=None, acks=-1, timeout=10_000,
        topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
    )  # fmt: skip
    return answer.responses[0].partition_responses[0]


def _end_offset(wire: WireClient, topic: str, partition: int) -> Any:
    answer = wire.request(
        "list_offsets", 7, replica_id=-1, isolation_level=0,
        topics=[{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1,
                                                "current_leader_epoch": -1}]}],
    )  # fmt: skip
    return answer.topics[0].partitions[0]


def _refused(ask: Callable[[], Any]) -> bool:
    return bool(ask().error_code == ErrorCode.kafka_storage_error)


def _settled(ask: Callable[[], Any], what: str) -> Any:
    """``ask()`` again while it answers NOT_LEADER_OR_FOLLOWER (a new leader applies its leadership
    on its own time), bounded by :func:`until`; the last answer."""
    answers: list[Any] = []

    def answered() -> bool:
        answers.append(ask())
        return bool(answers[-1].error_code != ErrorCode.not_leader_or_follower)

    until(answered, what)
    return answers[-1]


@pytest.mark.parametrize(
    "restart", [False, pytest.param(True, marks=pytest.mark.cluster_full)], ids=["failed", "then-restarted"]
)
def test_a_failed_log_dir_moves_its_leaderships_and_the_broker_keeps_serving(
    tmp_path: Path, restart: bool
) -> None:
    topic = f"jbod-{uuid.uuid4().hex[:6]}"
    node_configs = {n: [f"log.dirs={tmp_path / f'node-{n}'},{tmp_path / f'node-{n}-b'}"] for n in (1, 2, 3)}
    checkpoints = ["log.retention.check.interval.ms=300"]  # maintenance (and its checkpoints) often
    started = time.monotonic()
    with launch(
        "reference", workdir=tmp_path, brokers=3, broker_configs=checkpoints, node_configs=node_configs
    ) as target:
        addresses = {n.node_id: f"{n.host}:{n.port}" for n in target.nodes}
        wires = {node: WireClient(address) for node, address in addresses.items()}
        try:
            body = {"name": topic, "num_partitions": PARTITIONS, "replication_factor": 3, "assignments": [],
                    "configs": [{"name": "min.insync.replicas", "value": "1"}]}  # fmt: skip

            def created() -> bool:
                answer = wires[1].request(
                    "create_topics", 7, topics=[body], timeout=15_000, validate_only=False
                )
                return answer.topics[0].error_code in (ErrorCode.none, ErrorCode.topic_already_exists)

            until(created, "CreateTopics answered")

            def led_everywhere() -> bool:
                return all(
                    len(m) == PARTITIONS
                    and all(p.leader_id > 0 and len(p.isr_nodes) == 3 for p in m.values())
                    for m in (_metadata(w, topic) for w in wires.values())
                )

            until(led_everywhere, "every partition led with a full ISR on every node")
            parts = _metadata(wires[1], topic)
            for p, info in parts.items():
                for i in range(3):
                    assert (
                        _produce(wires[info.leader_id], topic, p, b"before-%d" % i).error_code
                        == ErrorCode.none
                    )
            victim = parts[0].leader_id
            # every node has every replica; where the victim keeps each, and which of its directories fails
            dirs = wires[victim].request("describe_log_dirs", 4, topics=None)
            placed = {
                r.log_dir: {p.partition_index for t in r.topics if t.name == topic for p in t.partitions}
                for r in dirs.results
            }
            assert len(placed) == 2 and set().union(*placed.values()) == set(range(PARTITIONS))
            failed_dir = str(tmp_path / f"node-{victim}-b")  # not the metadata log's: that one halts it
            lost, kept = placed[failed_dir], set(range(PARTITIONS)) - placed[failed_dir]
            assert lost and kept, placed
            ready_s = time.monotonic() - started

            shutil.rmtree(failed_dir)
            Path(failed_dir).write_text("a failed log directory")
            failed_at = time.monotonic()

            def moved() -> bool:
                now = _metadata(wires[victim], topic)
                return all(
                    now[p].leader_id not in (victim, -1) and victim not in now[p].isr_nodes for p in lost
                )

            until(moved, f"leaderships of {sorted(lost)} moved off broker {victim}, which left their ISRs")
            moved_s = time.monotonic() - failed_at
            now = _metadata(wires[victim], topic)
            assert all(victim in now[p].isr_nodes for p in kept)  # its other directory is in sync
            for p in lost:
                assert _produce(wires[victim], topic, p, b"x").error_code == ErrorCode.kafka_storage_error
                end = _settled(partial(_end_offset, wires[now[p].leader_id], topic, p), f"{p}'s new leader")
                assert end.offset == 3  # nothing acknowledged was lost
            for p in range(PARTITIONS):  # acks=all everywhere: the victim still replicates what it kept
                written = _settled(partial(_produce, wires[now[p].leader_id], topic, p, b"after"), f"{p}")
                assert written.error_code == ErrorCode.none, (p, written)
            described = {
                r.log_dir: r for r in wires[victim].request("describe_log_dirs", 4, topics=None).results
            }
            assert described[failed_dir].error_code == ErrorCode.kafka_storage_error
            (other,) = (d for d in described if d != failed_dir)
            assert described[other].error_code == ErrorCode.none
            if not restart:
                print(f"\ncluster ready {ready_s:.1f} s; leaderships of {len(lost)} partition(s) moved "
                      f"{moved_s:.1f} s after the directory failed")  # fmt: skip
                return
            # restarted with the directory still failed: what it held there stays offline (the controller
            # recorded the directory, AssignReplicasToDirs), it is not recreated empty; the rest rejoins
            wires[victim].close()
            target.node(victim).restart()
            wires[victim] = WireClient(addresses[victim])
            restarted_at = time.monotonic()
            other_node = next(n for n in wires if n != victim)

            def rejoined() -> bool:
                now = _metadata(wires[other_node], topic)
                return all(victim in now[p].isr_nodes for p in kept)

            until(rejoined, f"broker {victim} back in the ISRs of {sorted(kept)}")
            rejoined_s = time.monotonic() - restarted_at
            for p in lost:
                until(
                    partial(_refused, partial(_produce, wires[victim], topic, p, b"y")),
                    f"{p} offline on broker {victim} after its restart",
                )
                now = _metadata(wires[other_node], topic)
                assert victim not in now[p].isr_nodes
                end = _settled(partial(_end_offset, wires[now[p].leader_id], topic, p), f"{p}'s leader")
                assert end.offset == 4  # 3 before the failure, 1 after
            print(f"\ncluster ready {ready_s:.1f} s; leaderships of {len(lost)} partition(s) moved "
                  f"{moved_s:.1f} s after the directory failed; after a restart with it still failed, "
                  f"back in the other ISRs in {rejoined_s:.1f} s")  # fmt: skip
        finally:
            for wire in wires.values():
                wire.close()
