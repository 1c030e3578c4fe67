"""The broker process under SIGKILL: acknowledged data survives, torn tails are truncated.

Seed 000 (Kafka's storage): a batch acknowledged with acks=1 was written to
the OS; a process crash (not a power loss) keeps it, and recovery scans from
the recovery point, truncating at the first torn or corrupt byte.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.targets import Target, launch

pytestmark = pytest.mark.slow


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=30)


def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[tuple[int, int], bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "crash-check", "enable.auto.commit": False}
    )
    ends = {}
    for p in range(partitions):
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        ends[p] = high
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(
        sum(1 for (pp, _o) in got if pp == p) < ends[p] for p in range(partitions)
    ):
        for m in consumer.consume(5000, 0.5):
            partition, offset, value = m.partition(), m.offset(), m.value()
            if m.error() is None and partition is not None and offset is not None and value is not None:
                got[(partition, offset)] = value
    consumer.close()
    return got


def _segment_digests(data_dir: Path, topic: str) -> dict[str, str]:
    out = {}
    for path in sorted(data_dir.glob(f"{topic}-*/*.log")):
        out[str(path.relative_to(data_dir))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture()
def broker(tmp_path: Path) -> Iterator[Target]:
    target = launch("reference", workdir=tmp_path)
    yield target
    target.close()


def test_acks_1_records_survive_sigkill_during_produce(broker: Target) -> None:
    from confluent_kafka import Producer

    topic = f"crash-{uuid.uuid4().hex[:6]}"
    _create(broker.bootstrap_servers, topic, 3)
    acked: dict[tuple[int, int], bytes] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def on_delivery(err: object, msg: object) -> None:
        if err is None:
            with lock:
                acked[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[attr-defined]

    def produce() -> None:
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "acks": "1",
                "linger.ms": 2,
                "message.timeout.ms": 3000,
                "retries": 0,
            }
        )
        i = 0
        while not stop.is_set() and i < 2_000_000:
            try:
                producer.produce(topic, f"value-{i}".encode(), on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            producer.poll(0)
        producer.flush(10)

    worker = threading.Thread(target=produce, daemon=True)
    worker.start()
    deadline = time.monotonic() + 60
    while len(acked) < 20_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    broker.nodes[0].kill()
    time.sleep(0.5)
    stop.set()
    worker.join(30)
    assert len(acked) >= 20_000, "the producer never got going"
    broker.nodes[0].start()
    stored = _read_all(broker.bootstrap_servers, topic, 3)
    missing = {k: v for k, v in acked.items() if stored.get(k) != v}
    assert not missing, (
        f"{len(missing)} of {len(acked)} acknowledged records lost or changed, e.g. {list(missing)[:3]}"
    )


def test_a_torn_last_batch_is_truncated_and_recovery_is_stable(broker: Target) -> None:
    from confluent_kafka import Producer

    topic = f"torn-{uuid.uuid4().hex[:6]}"
    _create(broker.bootstrap_servers, topic, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "1", "linger.ms": 0})
    for i in range(500):
        producer.produce(topic, f"v{i}".encode())
        producer.poll(0)
    assert producer.flush(30) == 0
    node = broker.nodes[0]
    node.kill()
    assert broker.workdir is not None
    data_dir = broker.workdir / f"node-{node.node_id}"
    (segment,) = sorted((data_dir / f"{topic}-0").glob("*.log"))
    intact = segment.read_bytes()
    with open(segment, "ab") as f:  # half a batch: a plausible header, then nothing
        f.write(intact[: min(len(intact), 40)])
    os.sync()
    node.start()
    after_first = _read_all(broker.bootstrap_servers, topic, 1)
    assert sorted(after_first) == [(0, i) for i in range(500)]
    assert segment.stat().st_size == len(intact)
    digests = _segment_digests(data_dir, topic)
    node.kill()
    node.start()
    assert _read_all(broker.bootstrap_servers, topic, 1) == after_first
    assert _segment_digests(data_dir, topic) == digests
