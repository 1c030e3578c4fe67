"""A data directory a single broker wrote starts as a one-voter KRaft quorum named on the command line,
its topics and records intact.

A single broker is the only voter of its own quorum (docs/ARCHITECTURE.md, "One controller"); its Raft
log is the ``__cluster_metadata-0`` partition log of its data directory (``core/raft/raft_log.py``),
with ``quorum-state`` and snapshots beside it (``server/raft_files.py``). This test holds the path
between the two launches open: the directory is written by the broker as every single-broker run
starts it, then started twice as a combined broker+controller that is the only voter with a
controller listener (Kafka's ``process.roles=broker,controller`` with itself in
``controller.quorum.voters``, ``core/src/main/scala/kafka/server/KafkaRaftServer.scala``): it replays
the records, appends its own after them and keeps them across its restarts."""

from __future__ import annotations

import time
import uuid

import pytest

from fixtures.targets import launch
from fixtures.targets.processes import free_port

pytestmark = pytest.mark.slow

RECORDS = 20


def _create(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result(timeout=30)


def _produce(bootstrap: str, topic: str, prefix: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(RECORDS):
        producer.produce(topic, value=f"{prefix}-{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0, "records left unacknowledged after 30 s"


def _read(bootstrap: str, topic: str, expected: int) -> list[str]:
    """The records of ``topic`` from the start, until ``expected`` have come (bounded: 30 s)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    values: list[str] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and len(values) < expected:
            message = consumer.poll(0.5)
            value = message.value() if message is not None and message.error() is None else None
            if value is not None:
                values.append(value.decode())
    finally:
        consumer.close()
    return sorted(values)


def test_a_single_broker_directory_starts_as_a_one_voter_quorum() -> None:
    topic = f"single-{uuid.uuid4().hex[:8]}"
    target = launch("reference")
    try:
        (node,) = target.nodes
        bootstrap = target.bootstrap_servers
        _create(bootstrap, topic)
        _produce(bootstrap, topic, "single")
        assert node.stop() == 0

        controller_port = free_port()
        node.command += [
            "--controller-quorum-voters", f"{node.node_id}@127.0.0.1:{controller_port}",
            "--config", "controller.listener.names=CONTROLLER",
            "--config", f"listeners=CONTROLLER://127.0.0.1:{controller_port}",
        ]  # fmt: skip
        node.start()
        assert _read(bootstrap, topic, RECORDS) == sorted(f"single-{i}" for i in range(RECORDS))
        _produce(bootstrap, topic, "quorum")  # the quorum writes after the old records
        assert node.stop() == 0

        node.start()  # and finds both again
        expected = sorted([f"single-{i}" for i in range(RECORDS)] + [f"quorum-{i}" for i in range(RECORDS)])
        assert _read(bootstrap, topic, len(expected)) == expected
        log = node.log_path.read_text()
        assert "metadata quorum leader is 1" in log, log[-2000:]
    finally:
        target.close()
