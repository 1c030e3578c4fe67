"""An idempotent acks=all producer run while a nemesis acts on the cluster, and the read-back check.

Every acknowledged value must be read back once, in the order it was sent;
timings are printed as figures, never asserted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from fixtures.targets import Target

CLUSTER_CONFIGS = (
    "broker.session.timeout.ms=3000",
    "broker.heartbeat.interval.ms=500",
    "replica.lag.time.max.ms=3000",
    "offsets.topic.num.partitions=3",
    "transaction.state.log.num.partitions=3",
)


@dataclass
class Outcome:
    acked: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    read: list[int] = field(default_factory=list)
    seconds: float = 0.0
    nemesis_failed: bool = False

    @property
    def lost(self) -> set[int]:
        return set(self.acked) - set(self.read)

    @property
    def duplicates(self) -> int:
        return len(self.read) - len(set(self.read))


def create_topic(target: Target, name: str, partitions: int = 1, rf: int = 3, min_isr: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(name, partitions, rf, config={"min.insync.replicas": str(min_isr)})]
    )
    for future in futures.values():
        future.result(30)
    wait_for(lambda: partition_state(target, name)[0] >= 0, 30, f"{name} has a leader")


def partition_state(target: Target, topic: str, partition: int = 0) -> tuple[int, list[int], int]:
    """(leader, ISR, active controller) as Metadata reports them."""
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    md = admin.list_topics(topic, timeout=10)
    meta = md.topics[topic].partitions.get(partition)
    if meta is None:
        return -1, [], md.controller_id
    return meta.leader, list(meta.isrs), md.controller_id


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Poll ``condition`` (bounded); the seconds it took. AssertionError naming ``what`` on timeout."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            if condition():
                return time.monotonic() - started
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout_s}s: {what}")


def produce_during(
    target: Target, topic: str, count: int, nemesis: Callable[[Outcome], None], spread_s: float
) -> Outcome:
    """Send ``count`` values 0..count-1 (idempotent, acks=all), spread over ``spread_s`` seconds so
    they span the faults, while ``nemesis`` runs in a thread."""
    outcome = Outcome()
    producer = Producer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 120_000,
        }
    )

    def delivered(err: KafkaError | None, msg: object) -> None:
        if err is None:
            outcome.acked.append(int(msg.value()))  # type: ignore[attr-defined]
        else:
            outcome.errors.append(str(err))

    def guarded(outcome: Outcome) -> None:
        try:
            nemesis(outcome)
        except Exception as exc:
            outcome.errors.append(f"nemesis failed: {exc}")
            outcome.nemesis_failed = True

    thread = threading.Thread(target=guarded, args=(outcome,), daemon=True)
    started = time.monotonic()
    thread.start()
    for i in range(count):
        for _ in range(10_000):
            try:
                producer.produce(topic, str(i).encode(), callback=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        if i % 250 == 0:
            producer.poll(spread_s * 250 / count)  # spread the sends over the faults
    deadline = time.monotonic() + 300
    while thread.is_alive() and time.monotonic() < deadline:
        producer.poll(0.1)  # delivery callbacks run only in poll: the nemesis waits on them
    producer.flush(180)
    outcome.seconds = time.monotonic() - started
    outcome.read = read_all(target, topic, len(outcome.acked))
    return outcome


def read_all(target: Target, topic: str, expected: int, timeout_s: float = 90) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "group.id": f"reader-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    read: list[int] = []
    deadline = time.monotonic() + timeout_s
    idle = 0
    while time.monotonic() < deadline and (len(read) < expected or idle < 3):
        msg = consumer.poll(1)
        if msg is None:
            idle += 1
            continue
        if msg.error() is None:
            read.append(int(msg.value() or b"-1"))
            idle = 0
    consumer.close()
    return read
