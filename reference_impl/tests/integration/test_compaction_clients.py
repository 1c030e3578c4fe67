"""A compacted topic on a reference broker process, judged by three real clients.

Many records over 1,000 keys, some keys ending in a tombstone and some
tombstoned then written again; then a record after ``segment.ms`` rolls the
last segment so everything before it is cleanable. After the broker's cleaner
ran: a consumer reading from the start sees exactly the latest record of each
key at the offset the producer was told, tombstones included; after
``delete.retention.ms`` the tombstones are gone too. kafka-python,
confluent-kafka and aiokafka each read that same key-complete snapshot.

20,000 records by default; ``KH_COMPACTION_FULL=1`` runs the 100,000 of
issue 10's acceptance.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from fixtures.targets import Target, launch

pytestmark = [pytest.mark.slow, pytest.mark.clients]

RECORDS = 100_000 if os.environ.get("KH_COMPACTION_FULL") == "1" else 20_000
KEYS = 1_000
DELETE_RETENTION_MS = 3_000
SEGMENT_MS = 1_500
Snapshot = dict[bytes, tuple[int, bytes | None]]


@pytest.fixture(scope="module")
def broker() -> Iterator[Target]:
    target = launch("reference", broker_configs=["log.cleaner.backoff.ms=200"])
    yield target
    target.close()


def _key(i: int) -> bytes:
    return b"key-%04d" % (i % KEYS)


def _value(i: int) -> bytes | None:
    """Keys 0-99 end in a tombstone; keys 100-199 get a tombstone half-way, then values again."""
    k = i % KEYS
    last_round = i >= RECORDS - KEYS
    if k < 100 and last_round:
        return None
    if 100 <= k < 200 and RECORDS // 2 <= i < RECORDS // 2 + KEYS:
        return None
    return b"value-%d" % i


def _produce(bootstrap: str, topic: str, items: Sequence[tuple[bytes, bytes | None]]) -> list[int]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    offsets: list[int] = [-1] * len(items)
    errors: list[str] = []

    def delivered(index: int) -> Callable[[Any, Any], None]:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                offsets[index] = msg.offset()

        return report

    for index, (key, value) in enumerate(items):
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=delivered(index))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors[:3]
    return offsets


def _expected(items: list[tuple[bytes, bytes | None]], offsets: list[int], tombstones: bool) -> Snapshot:
    latest: Snapshot = {}
    for (key, value), offset in zip(items, offsets, strict=True):
        latest[key] = (offset, value)
    return {k: v for k, v in latest.items() if tombstones or v[1] is not None}


def _read_confluent(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes, bytes | None]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"c-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes, bytes | None]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not out or out[-1][0] < end - 1):
        for m in consumer.consume(1000, 0.5):
            if m.error() is None:
                out.append((m.offset(), m.key(), m.value()))  # type: ignore[arg-type]
    consumer.close()
    return out


def _read_kafka_python(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes, bytes | None]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    out: list[tuple[int, bytes, bytes | None]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not out or out[-1][0] < end - 1):
        for records in consumer.poll(timeout_ms=500).values():
            out.extend((r.offset, r.key, r.value) for r in records)
    consumer.close()
    return out


def _read_aiokafka(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes, bytes | None]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def read() -> list[tuple[int, bytes, bytes | None]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        out: list[tuple[int, bytes, bytes | None]] = []
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (not out or out[-1][0] < end - 1):
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    out.extend((r.offset, r.key, r.value) for r in records)
        finally:
            await consumer.stop()
        return out

    return asyncio.run(read())


def _repeats(offsets: list[int]) -> list[tuple[int, int]]:
    """(index, offset) where a reader went back or repeated itself."""
    return [(i, o) for i, o in enumerate(offsets) if i and o <= offsets[i - 1]][:5]


def _snapshot(read: list[tuple[int, bytes, bytes | None]]) -> Snapshot:
    return {key: (offset, value) for offset, key, value in read}


def _wait_for(bootstrap: str, topic: str, end: int, want: Snapshot) -> list[tuple[int, bytes, bytes | None]]:
    """Read from the start until the broker's cleaner has left exactly ``want`` (bounded)."""
    read: list[tuple[int, bytes, bytes | None]] = []
    for _attempt in range(60):
        read = _read_confluent(bootstrap, topic, end)
        if len(read) == len(want) and _snapshot(read) == want:
            return read
        time.sleep(1)
    return read


def test_compacted_topic_keeps_the_latest_value_of_each_key_at_its_offset(broker: Target) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    bootstrap = broker.bootstrap_servers
    topic = f"compacted-{uuid.uuid4().hex[:6]}"
    configs = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
               "delete.retention.ms": str(DELETE_RETENTION_MS), "segment.ms": str(SEGMENT_MS),
               "internal.segment.bytes": str(256 * 1024)}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(timeout=30)

    items = [(_key(i), _value(i)) for i in range(RECORDS)]
    offsets = _produce(bootstrap, topic, items)
    assert offsets == list(range(RECORDS))
    time.sleep(SEGMENT_MS / 1000 + 0.5)
    sentinel: list[tuple[bytes, bytes | None]] = [(b"sentinel-1", b"rolls the segment")]
    items += sentinel
    offsets += _produce(bootstrap, topic, sentinel)
    end = offsets[-1] + 1

    with_tombstones = _expected(items, offsets, tombstones=True)
    read = _wait_for(bootstrap, topic, end, with_tombstones)
    assert _snapshot(read) == with_tombstones, "after cleaning: each key's latest record, tombstones too"
    assert [o for o, _k, _v in read] == sorted(o for o, _v in with_tombstones.values())
    assert sum(1 for _o, _k, v in read if v is None) == 100

    time.sleep(DELETE_RETENTION_MS / 1000 + 0.5)
    # the same key again: sentinel-1's batch empties, and is kept bare for its producer's sake
    second: list[tuple[bytes, bytes | None]] = [(b"sentinel-1", b"rolls again")]
    items += second
    offsets += _produce(bootstrap, topic, second)
    end = offsets[-1] + 1
    snapshot = _expected(items, offsets, tombstones=False)
    read = _wait_for(bootstrap, topic, end, snapshot)
    assert _snapshot(read) == snapshot, "after delete.retention.ms the tombstones are gone"
    assert len(snapshot) == KEYS - 100 + 1

    for reader in (_read_kafka_python, _read_aiokafka, _read_confluent):
        got = reader(bootstrap, topic, end)
        offsets_read = [o for o, _k, _v in got]
        assert _snapshot(got) == snapshot, reader.__name__
        assert offsets_read == sorted(set(offsets_read)), (reader.__name__, _repeats(offsets_read))
