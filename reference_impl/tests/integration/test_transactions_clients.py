"""Transactions through real clients against a reference broker process (issue 3's acceptance points).

KIP-98 as Kafka shipped it: a transaction's records are in the log before it
commits, and the commit or abort is a control marker written by the
coordinator to every partition it touched; a read_committed consumer reads up
to the last stable offset and skips what the fetch response lists as aborted,
a read_uncommitted one reads everything. A new producer with the same
``transactional.id`` bumps the epoch, which aborts the old producer's open
transaction and fences it; a transaction open longer than its
``transaction.timeout.ms`` is aborted by the coordinator.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.targets import Target, launch

pytestmark = [pytest.mark.clients, pytest.mark.slow]

PARTITIONS = 3
TRANSACTIONS = 12
PER_TRANSACTION = 30
BROKER_CONFIGS = (
    "group.initial.rebalance.delay.ms=0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
)


@pytest.fixture(scope="module")
def broker() -> Iterator[Target]:
    target = launch("reference", broker_configs=BROKER_CONFIGS)
    yield target
    target.close()


def _topic(bootstrap: str, prefix: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
        future.result(timeout=30)
    return name


def _read(bootstrap: str, topic: str, isolation: str, expect_at_least: int = 0) -> dict[int, list[bytes]]:
    """Everything a consumer at ``isolation`` reads from the start, per partition, in order.

    Reads until the consumer has reached the end of every partition and, when given,
    ``expect_at_least`` records have arrived (bounded by 60 s)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    read: dict[int, list[bytes]] = defaultdict(list)
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if len(at_end) == PARTITIONS and sum(map(len, read.values())) >= expect_at_least:
                break
            messages: list[Any] = consumer.consume(500, timeout=0.5)
            for m in messages:
                if m.error() is not None:
                    if m.error().code() == -191:  # _PARTITION_EOF
                        at_end.add(m.partition())
                    continue
                at_end.discard(m.partition())
                read[m.partition()].append(m.value())
    finally:
        consumer.close()
    return dict(read)


def _expected(committed: list[list[tuple[int, bytes]]]) -> dict[int, list[bytes]]:
    by_partition: dict[int, list[bytes]] = defaultdict(list)
    for transaction in committed:
        for partition, value in transaction:
            by_partition[partition].append(value)
    return dict(by_partition)


def _plan(tag: str) -> list[tuple[bool, list[tuple[int, bytes]]]]:
    """Transactions alternating commit and abort, each spread over every partition."""
    plan = []
    for t in range(TRANSACTIONS):
        records = [(i % PARTITIONS, f"{tag}-{t}-{i}".encode()) for i in range(PER_TRANSACTION)]
        plan.append((t % 2 == 0, records))
    return plan


def _check_isolation(bootstrap: str, topic: str, plan: list[tuple[bool, list[tuple[int, bytes]]]]) -> None:
    committed = _expected([records for commit, records in plan if commit])
    everything = _expected([records for _commit, records in plan])
    read_committed = _read(bootstrap, topic, "read_committed", sum(map(len, committed.values())))
    assert read_committed == committed, "read_committed must see exactly the committed records, in order"
    read_uncommitted = _read(bootstrap, topic, "read_uncommitted", sum(map(len, everything.values())))
    assert read_uncommitted == everything, "read_uncommitted sees committed and aborted records alike"


def test_confluent_kafka_commit_and_abort_interleaved(broker: Target) -> None:
    """KIP-98: aborted records are in the log yet invisible to read_committed; order per partition kept."""
    from confluent_kafka import Producer

    bootstrap = broker.bootstrap_servers
    topic = _topic(bootstrap, "txn-ck")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(30)
    plan = _plan("ck")
    for commit, records in plan:
        producer.begin_transaction()
        for partition, value in records:
            producer.produce(topic, value, partition=partition)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)  # the aborted records reach the log before the abort marker
            producer.abort_transaction(30)
    _check_isolation(bootstrap, topic, plan)


def test_aiokafka_commit_and_abort_interleaved(broker: Target) -> None:
    """The same through aiokafka's transaction API (its own InitProducerId/AddPartitions/EndTxn path)."""
    from aiokafka import AIOKafkaProducer

    bootstrap = broker.bootstrap_servers
    topic = _topic(bootstrap, "txn-aio")
    plan = _plan("aio")

    async def run() -> None:
        txn_id = f"tx-{uuid.uuid4().hex[:6]}"
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        await producer.start()
        try:
            for commit, records in plan:
                await producer.begin_transaction()
                futures = [await producer.send(topic, v, partition=p) for p, v in records]
                await asyncio.gather(*futures)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(run(), 120))
    _check_isolation(bootstrap, topic, plan)


def test_a_new_producer_fences_the_zombie_and_aborts_its_transaction(broker: Target) -> None:
    """KIP-98 zombie fencing: InitProducerId for the same transactional.id bumps the epoch, aborts the
    open transaction, and the old producer can no longer commit."""
    from confluent_kafka import KafkaException, Producer

    bootstrap = broker.bootstrap_servers
    topic = _topic(bootstrap, "txn-zombie")
    txn_id = f"tx-{uuid.uuid4().hex[:6]}"
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    for i in range(10):
        zombie.produce(topic, f"zombie-{i}".encode(), partition=i % PARTITIONS)
    zombie.flush(30)
    successor = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    successor.init_transactions(30)
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)
    successor.begin_transaction()
    for i in range(10):
        successor.produce(topic, f"successor-{i}".encode(), partition=i % PARTITIONS)
    successor.commit_transaction(30)
    visible = sorted(v for values in _read(bootstrap, topic, "read_committed", 10).values() for v in values)
    assert visible == sorted(f"successor-{i}".encode() for i in range(10))
    everything = [v for values in _read(bootstrap, topic, "read_uncommitted", 20).values() for v in values]
    assert sum(v.startswith(b"zombie-") for v in everything) == 10, "the zombie's records were in the log"


def test_consume_transform_produce_is_exactly_once_across_a_producer_crash(broker: Target) -> None:
    """KIP-98 exactly-once: offsets committed in the transaction, a worker SIGKILLed mid-transaction,
    its successor fences it and resumes from the committed offsets: every input transformed once."""
    from confluent_kafka import Producer

    bootstrap = broker.bootstrap_servers
    source, sink = _topic(bootstrap, "eos-in"), _topic(bootstrap, "eos-out")
    inputs = [f"v{i}".encode() for i in range(3000)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(inputs):
        producer.produce(source, value, partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    group, txn_id = f"eos-{uuid.uuid4().hex[:6]}", f"eos-tx-{uuid.uuid4().hex[:6]}"
    command = [sys.executable, "-m", "reference_impl.tests.integration.txn_copier",
               bootstrap, source, sink, group, txn_id, "100"]
    crashed = subprocess.run([*command, "900"], capture_output=True, text=True, timeout=180)
    assert crashed.returncode == -9, crashed.stderr[-2000:]
    assert "crashing with" in crashed.stdout
    finished = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert finished.returncode == 0, finished.stderr[-2000:]
    out = _read(bootstrap, sink, "read_committed", len(inputs))
    values = [v for values in out.values() for v in values]
    assert len(values) == len(inputs), f"{len(values)} outputs for {len(inputs)} inputs"
    assert sorted(values) == sorted(v + b">" for v in inputs), "an input was lost or transformed twice"
    raw = sum(map(len, _read(bootstrap, sink, "read_uncommitted", len(inputs)).values()))
    assert raw > len(inputs), "the crash left an open transaction's records in the log, aborted since"
    print(f"\nexactly-once copy: {len(inputs)} inputs, {len(values)} committed outputs, "
          f"{raw - len(values)} aborted records of the crashed worker in the log")


def test_a_transaction_open_past_its_timeout_is_aborted_by_the_coordinator(broker: Target) -> None:
    """KIP-98: the coordinator aborts a transaction open longer than transaction.timeout.ms, which
    moves the last stable offset past it (records behind it become readable at read_committed)."""
    from confluent_kafka import KafkaException, Producer

    bootstrap = broker.bootstrap_servers
    topic = _topic(bootstrap, "txn-timeout")
    stalled = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}",
                        "transaction.timeout.ms": 2000})
    stalled.init_transactions(30)
    stalled.begin_transaction()
    for i in range(5):
        stalled.produce(topic, f"stalled-{i}".encode(), partition=0)
    stalled.flush(30)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, b"after", partition=0)
    assert plain.flush(30) == 0
    # read_committed can reach "after" only once the open transaction before it is resolved
    visible = _read(bootstrap, topic, "read_committed", 1).get(0, [])
    assert visible == [b"after"], visible
    with pytest.raises(KafkaException):
        stalled.commit_transaction(10)
