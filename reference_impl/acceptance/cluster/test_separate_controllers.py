"""Issue 4, controller quorum with separate controllers: two brokers and three controller-only nodes
(``process.roles=controller``), started, faulted and stopped with the ``kafka-harness cluster``
commands a user runs.

* Metadata lists the two brokers only and names one of them as the controller; every broker
  describes the same quorum: voters 3, 4, 5 (with their endpoints, DescribeQuorum v2), the
  brokers as observers.
* A controller-only node serves its listener's APIs only: ApiVersions leaves Produce, Fetch's
  partners and Metadata out, and a Metadata request gets the connection closed.
* A confluent-kafka admin client creates topics through the brokers (each forwards to the active
  controller, KIP-590), an idempotent acks=all producer keeps going while the active controller
  is SIGKILLed (``cluster kill``), a new one is elected among the other two, a topic is created
  after the kill, the killed node is started again (``cluster restart``) and every acknowledged
  record is read back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from fixtures.wire import WireClient, WireError

from .workload import wait_for

pytestmark = [pytest.mark.slow]

BROKERS, CONTROLLERS = [1, 2], [3, 4, 5]
QUORUM_PARTITION = {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}


def _cluster(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_harness", "cluster", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"cluster {' '.join(args)}: {done.returncode} {done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture
def separate(tmp_path: Path) -> Iterator[tuple[Path, dict[int, str]]]:
    data = tmp_path / "cluster"
    out = _cluster(
        "up",
        "--brokers", "2",
        "--controllers", "3",
        "--separate-controllers",
        "--data-dir", str(data),
        "--config", "broker.session.timeout.ms=3000",
        "--config", "broker.heartbeat.interval.ms=500",
    )  # fmt: skip
    print(out)
    try:
        plan = json.loads((data / "cluster.json").read_text())
        yield data, {int(n["node_id"]): str(n["advertised"]) for n in plan["nodes"]}
    finally:
        _cluster("down", "--data-dir", str(data))


def _quorum(address: str) -> tuple[Any, Any]:
    with WireClient(address, timeout_s=20) as client:
        answer = client.request(55, 2, topics=[QUORUM_PARTITION])
    return answer, answer.topics[0].partitions[0]


def test_brokers_with_a_separate_controller_quorum(separate: tuple[Path, dict[int, str]]) -> None:
    data, address = separate
    bootstrap = ",".join(address[b] for b in BROKERS)
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    assert sorted(metadata.brokers) == BROKERS
    assert metadata.controller_id in BROKERS, "clients must be named a controller they can reach"

    leaders = set()
    for broker in BROKERS:
        answer, partition = _quorum(address[broker])
        assert partition.error_code.name == "none", partition
        assert sorted(int(v.replica_id) for v in partition.current_voters) == CONTROLLERS
        assert set(BROKERS) <= {int(o.replica_id) for o in partition.observers}
        assert sorted(int(n.node_id) for n in answer.nodes) == CONTROLLERS
        leaders.add((int(partition.leader_id), int(partition.leader_epoch)))
    [(leader, epoch)] = leaders
    assert leader in CONTROLLERS

    with WireClient(address[CONTROLLERS[0]], timeout_s=10) as client:
        versions = client.request(18, 3, client_software_name="kh", client_software_version="1")
        served = {int(k.api_key) for k in versions.api_keys}
        assert {18, 52, 55, 62, 63} <= served and not {0, 3, 10} & served, sorted(served)
        with pytest.raises(WireError):
            client.request(3, 12, topics=None, allow_auto_topic_creation=False)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("separate", 2, 2)])["separate"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    acked: list[int] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked.append(int(msg.value()))

    count = 3_000

    def send(values: range) -> None:
        for i in values:
            producer.produce("separate", str(i).encode(), on_delivery=delivered)
            producer.poll(0)
            time.sleep(0.002)

    send(range(count // 3))
    _cluster("kill", str(leader), "--data-dir", str(data))
    killed_at = time.monotonic()
    wait_for(
        lambda: int(_quorum(address[BROKERS[0]])[1].leader_id) not in (leader, -1), 30, "a new quorum leader"
    )
    elected = time.monotonic() - killed_at
    _, now = _quorum(address[BROKERS[0]])
    print(
        f"controller {leader} (epoch {epoch}) killed: {int(now.leader_id)} leads epoch "
        f"{int(now.leader_epoch)}, seen {elected:.2f}s after the kill"
    )
    send(range(count // 3, count))
    admin.create_topics([NewTopic("after-kill", 1, 2)])["after-kill"].result(30)
    _cluster("restart", str(leader), "--data-dir", str(data))
    assert producer.flush(60) == 0
    print(f"acknowledged {len(acked)} of {count}")

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "separate", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["separate"])
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while len(set(seen)) < len(set(acked)) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            value = message.value()
            assert value is not None, "a record without a value: every record sent had one"
            seen.append(int(value))
    consumer.close()
    assert set(acked) <= set(seen), f"{len(set(acked) - set(seen))} acknowledged records not read"
    assert len(seen) == len(set(seen)), "duplicates"
    listed = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert {"separate", "after-kill"} <= set(listed)
    _, back = _quorum(address[BROKERS[1]])
    ends = {int(v.replica_id): int(v.log_end_offset) for v in back.current_voters}
    print(f"after the restart: leader {int(back.leader_id)}, HW {int(back.high_watermark)}, log ends {ends}")
