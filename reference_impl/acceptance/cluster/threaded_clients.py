"""kafka-python, confluent-kafka and aiokafka producers and group consumers, each in its own thread.

Each producer sends ``client-i`` values (acks=all, idempotent, retries on), paced so they span
whatever a test does to the cluster meanwhile, and records what was acknowledged; each group
consumer reads until it has seen every value it is told to expect (or its bound runs out) and
records what it read. Nothing here asserts: the tests compare the sets and print figures.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer

CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka")


@dataclass
class Side:
    """What one client's producer had acknowledged, or its consumer read."""

    client: str
    values: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, value: str) -> None:
        with self.lock:
            self.values.append(value)


def produce(client: str, bootstrap: str, topic: str, count: int, spread_s: float) -> Side:
    side = Side(client)
    pause = spread_s / count
    if client == "kafka-python":
        kp = KafkaProducer(
            bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, retries=1_000_000,
            request_timeout_ms=10_000, delivery_timeout_ms=120_000, retry_backoff_ms=200,
        )  # fmt: skip
        futures = []
        for i in range(count):
            value = f"{client}-{i}"
            future = kp.send(topic, value.encode())
            future.add_callback(lambda _md, v=value: side.add(v))
            future.add_errback(lambda exc: side.errors.append(repr(exc)))
            futures.append(future)
            time.sleep(pause)
        kp.flush(timeout=150)
        kp.close(timeout=10)
    elif client == "confluent-kafka":
        cp = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
             "message.timeout.ms": 120_000}
        )  # fmt: skip

        def delivered(err: object, msg: object) -> None:
            if err is None:
                side.add(msg.value().decode())  # type: ignore[attr-defined]
            else:
                side.errors.append(str(err))

        for i in range(count):
            cp.produce(topic, f"{client}-{i}".encode(), callback=delivered)
            cp.poll(pause)
        cp.flush(150)
    else:
        asyncio.run(_aio_produce(side, bootstrap, topic, count, pause))
    return side


async def _aio_produce(side: Side, bootstrap: str, topic: str, count: int, pause: float) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, request_timeout_ms=120_000,
        retry_backoff_ms=200,
    )  # fmt: skip
    await producer.start()
    try:
        pending = []
        for i in range(count):
            value = f"{side.client}-{i}"
            future = await producer.send(topic, value.encode())
            future.add_done_callback(
                lambda f, v=value: (
                    side.add(v) if not f.exception() else side.errors.append(repr(f.exception()))
                )
            )
            pending.append(future)
            await asyncio.sleep(pause)
        await asyncio.gather(*pending, return_exceptions=True)
    finally:
        await producer.stop()


def consume(
    client: str, bootstrap: str, topic: str, group: str, done: Callable[[Side], bool], bound_s: float
) -> Side:
    """A group consumer (subscribe, auto commit) until ``done(side)`` or ``bound_s`` seconds."""
    side = Side(client)
    deadline = time.monotonic() + bound_s
    if client == "kafka-python":
        kc = KafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            session_timeout_ms=10_000, heartbeat_interval_ms=1_000, request_timeout_ms=15_000,
        )  # fmt: skip
        while time.monotonic() < deadline and not done(side):
            for records in kc.poll(timeout_ms=500).values():
                for r in records:
                    side.add(r.value.decode())
        kc.close()
    elif client == "confluent-kafka":
        cc = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
             "session.timeout.ms": 10_000}
        )  # fmt: skip
        cc.subscribe([topic])
        while time.monotonic() < deadline and not done(side):
            msg = cc.poll(0.5)
            if msg is not None and msg.error() is None:
                side.add((msg.value() or b"").decode())
        cc.close()
    else:
        asyncio.run(_aio_consume(side, bootstrap, topic, group, done, deadline))
    return side


async def _aio_consume(
    side: Side, bootstrap: str, topic: str, group: str, done: Callable[[Side], bool], deadline: float
) -> None:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
        session_timeout_ms=10_000, heartbeat_interval_ms=1_000,
    )  # fmt: skip
    await consumer.start()
    try:
        while time.monotonic() < deadline and not done(side):
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for r in records:
                    side.add(r.value.decode())
    finally:
        await consumer.stop()


def in_thread(fn: Callable[[], Side]) -> Callable[[], Side]:
    """Run ``fn`` in a thread now; the returned call joins it and gives its result (or its error)."""
    result: list[Side] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # reported to the joining test
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join(timeout_s: float = 300) -> Side:
        thread.join(timeout_s)
        if failure:
            raise failure[0]
        assert result, "the client thread did not finish in time"
        return result[0]

    return join
