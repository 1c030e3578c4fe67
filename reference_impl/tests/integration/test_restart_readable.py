"""Broker processes under SIGKILL: acknowledged records are readable after the restart with no new write.

Issue 17, item 9: the high watermark came back from the replication-offset checkpoint (written
every 5 s) after the partitions had become leaders, so records acknowledged since the last
checkpoint stayed unreadable until the next produce: in one run 100 of 200 were still invisible
30 s after the restart. Kafka loads the checkpoint as the log is created and then runs
``makeLeader``, whose ``maybeIncrementLeaderHW`` makes a lone leader's log end the high watermark
at once, and a replicated leader's as its followers' fetches confirm it
(``core/src/main/scala/kafka/cluster/Partition.scala``).

Each test writes N records with an idempotent acks=all confluent-kafka producer just after the
broker wrote a checkpoint (so every one of them is newer than it), kills the leader with SIGKILL
at once, restarts it, and reads from the start with nothing written since. The read is bounded
(30 s); how long it took is printed. With ``reference.defects=late-high-watermark`` the single
broker test reads none of them.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from fixtures.targets import Target, launch

pytestmark = pytest.mark.slow

RECORDS = 200
READ_BOUND_S = 30.0
CHECKPOINT = "replication-offset-checkpoint"


def _create(bootstrap: str, topic: str, rf: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"min.insync.replicas": "2" if rf > 1 else "1"}
    for future in admin.create_topics([NewTopic(topic, 1, rf, config=configs)]).values():
        future.result(timeout=30)


def _leader(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = admin.list_topics(topic, timeout=5).topics.get(topic)
        if found is not None and 0 in found.partitions and found.partitions[0].leader >= 0:
            return int(found.partitions[0].leader)
        time.sleep(0.2)
    raise AssertionError(f"{topic}-0 has no leader after 30 s")


def _after_a_fresh_checkpoint(data_dir: Path, topic: str) -> None:
    """Wait (bounded) until the broker's checkpoint lists ``topic`` and has just been rewritten:
    what is acknowledged in the next seconds is newer than any checkpoint the restart will find."""
    path = data_dir / CHECKPOINT
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (path.exists() and f"{topic} 0 " in path.read_text()):
        time.sleep(0.05)
    assert path.exists() and f"{topic} 0 " in path.read_text(), f"no checkpoint of {topic} in 30 s"
    before = path.stat().st_mtime_ns
    while time.monotonic() < deadline and path.stat().st_mtime_ns == before:
        time.sleep(0.005)


def _produce(bootstrap: str, topic: str) -> list[int]:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 2}
    )
    acked: list[int] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is None:
            acked.append(msg.offset())  # type: ignore[attr-defined]

    for n in range(RECORDS):
        producer.produce(topic, b"v%d" % n, partition=0, on_delivery=on_delivery)
    assert producer.flush(30) == 0, "every record answered"
    return acked


def _read_without_writing(bootstrap: str, topic: str, want: set[int]) -> tuple[set[int], float, list[str]]:
    """Offsets of ``topic``-0 a fresh consumer reads from the start within READ_BOUND_S, when it
    had them all (seconds from now; the bound if it never did), and the errors it was told of.

    ``auto.offset.reset=error``: an out-of-range answer must not silently move the consumer to the
    log end (librdkafka's default, ``latest``), which would read as "nothing readable"; it is
    reported as an error instead, and the failure message says which."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    started = time.monotonic()
    got: set[int] = set()
    errors: list[str] = []
    try:
        while not want <= got and time.monotonic() - started < READ_BOUND_S:
            for message in consumer.consume(500, 0.2):
                offset = message.offset()
                if message.error() is not None:
                    errors.append(f"{time.monotonic() - started:.1f}s {message.error()}")
                elif offset is not None:
                    got.add(offset)
    finally:
        consumer.close()
    return got, time.monotonic() - started, errors[:20]


def _kill_restart_read(target: Target, workdir: Path, topic: str) -> None:
    """Write, kill the leader at once, restart it, read with no new write: all must be read."""
    leader = _leader(target.bootstrap_servers, topic)
    _after_a_fresh_checkpoint(workdir / f"node-{leader}", topic)
    acked = _produce(target.bootstrap_servers, topic)
    node = target.node(leader)
    node.kill()
    began = time.monotonic()
    node.start()
    down = time.monotonic() - began
    got, took, errors = _read_without_writing(target.bootstrap_servers, topic, set(acked))
    missing = set(acked) - got
    print(
        f"{len(acked)} acknowledged, leader {leader} killed and back in {down:.2f} s; "
        f"{len(acked) - len(missing)} readable with no new write"
        + (f" after {took:.2f} s" if not missing else f", {len(missing)} not within {READ_BOUND_S:.0f} s")
    )
    assert len(acked) == RECORDS
    assert not missing, (
        f"{len(missing)} of {len(acked)} acknowledged unreadable, e.g. {sorted(missing)[:5]}; "
        f"the consumer was told: {errors or 'no error'}"
    )


def test_a_single_broker_serves_every_acknowledged_record_after_sigkill(tmp_path: Path) -> None:
    with launch("reference", workdir=tmp_path) as target:
        topic = f"restart-{uuid.uuid4().hex[:6]}"
        _create(target.bootstrap_servers, topic, 1)
        _kill_restart_read(target, tmp_path, topic)


def test_a_cluster_serves_every_acknowledged_record_after_its_leader_is_killed(tmp_path: Path) -> None:
    """RF=3, min.insync.replicas=2: the leader is killed right after the last acknowledgement and
    restarted; whichever replica leads then, everything acknowledged is read with no new write."""
    with launch("reference", workdir=tmp_path, brokers=3) as target:
        topic = f"restart-{uuid.uuid4().hex[:6]}"
        _create(target.bootstrap_servers, topic, 3)
        _kill_restart_read(target, tmp_path, topic)


def test_a_restarted_cluster_broker_answers_clients_only_once_caught_up(tmp_path: Path) -> None:
    """The first Metadata a restarted broker receives, sent the moment its port opens, names the
    topic that exists: the broker handles client requests only after the controller has unfenced
    it (caught up with the metadata log), as Kafka's ``BrokerServer.startup`` opens its listeners.
    Answering at once, from an image still empty, it said UNKNOWN_TOPIC_OR_PARTITION, and the
    librdkafka consumer of the test above then read nothing for 30 s."""
    from fixtures.wire.client import WireClient

    with launch("reference", workdir=tmp_path, brokers=3) as target:
        topic = f"restart-{uuid.uuid4().hex[:6]}"
        _create(target.bootstrap_servers, topic, 3)
        node = target.node(3)
        node.kill()
        node.start()
        with WireClient(f"{node.host}:{node.port}", timeout_s=READ_BOUND_S) as wire:
            began = time.monotonic()
            answer = wire.request("metadata", 12, topics=[{"name": topic}], allow_auto_topic_creation=False)
            print(f"the restarted broker answered Metadata after {time.monotonic() - began:.2f} s")
        (entry,) = answer.topics
        assert int(entry.error_code) == 0, f"Metadata from the restarted broker: error {entry.error_code}"
        assert [int(p.leader_id) for p in entry.partitions] != [-1]
