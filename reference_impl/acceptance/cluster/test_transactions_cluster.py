"""Transactions across a three-broker reference cluster (real processes, confluent-kafka's
transactional producer and read_committed consumer).

The transaction's partitions are led by different brokers, so the coordinator must send its
COMMIT and ABORT markers to other leaders (WriteTxnMarkers) and wait for each ISR before it
completes the transaction; a read_committed consumer only gets past a transaction once every
partition holds its marker. Then the coordinator's broker is SIGKILLed with a transaction open:
the new coordinator replays ``__transaction_state``, a new producer with the same transactional id
fences the old one, the open transaction is aborted on every partition, and the new producer
commits. Committed values are read exactly once at read_committed; aborted ones never.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from fixtures.targets import Target, launch
from fixtures.wire import WireClient

from .workload import CLUSTER_CONFIGS, create_topic, partition_state, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.clients]

TOPIC, PARTITIONS, PER_TXN = "txn-spread", 3, 30
TXN_ID = "cluster-txn"


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir: Path = tmp_path_factory.mktemp("txn-three")
    with launch("reference", workdir=workdir, brokers=3, broker_configs=CLUSTER_CONFIGS) as target:
        yield target


def _coordinator(target: Target, txn_id: str) -> int:
    """The node FindCoordinator names for ``txn_id`` (-1 while none is available)."""
    node = next(n for n in target.nodes if n.is_running)
    with WireClient(f"{node.host}:{node.advertised_port}", timeout_s=10) as client:
        answer = client.request(10, 3, key=txn_id, key_type=1)
        return int(answer.node_id) if int(answer.error_code) == 0 else -1


def _producer(target: Target) -> Producer:
    return Producer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "transactional.id": TXN_ID,
            "transaction.timeout.ms": 60_000,
            "message.timeout.ms": 60_000,
        }
    )


def _send(producer: Producer, txn: int) -> list[str]:
    """One transaction's records, spread over every partition; their values."""
    values = [f"t{txn}-{i}" for i in range(PER_TXN)]
    for i, value in enumerate(values):
        producer.produce(TOPIC, value.encode(), partition=i % PARTITIONS)
    assert producer.flush(60) == 0, f"transaction {txn}: records not delivered"
    return values


def _read(target: Target, isolation: str, expected: int, timeout_s: float = 60) -> list[str]:
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "group.id": f"reader-{isolation}-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.subscribe([TOPIC])
    values: list[str] = []
    deadline = time.monotonic() + timeout_s
    quiet_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                if len(values) >= expected and time.monotonic() - quiet_since > 3:
                    break
                continue
            values.append((msg.value() or b"").decode())
            quiet_since = time.monotonic()
    finally:
        consumer.close()
    return values


def test_markers_reach_every_leader_and_survive_the_coordinator_failover(three: Target) -> None:
    create_topic(three, TOPIC, partitions=PARTITIONS)
    leaders: dict[int, int] = {}

    def every_partition_led() -> bool:
        leaders.update({p: partition_state(three, TOPIC, p)[0] for p in range(PARTITIONS)})
        return min(leaders.values()) >= 0

    wait_for(every_partition_led, 30, f"every partition of {TOPIC} has a leader")
    producer = _producer(three)
    producer.init_transactions(60)
    coordinator = _coordinator(three, TXN_ID)
    remote = {p for p, leader in leaders.items() if leader != coordinator}
    print(f"partition leaders {leaders}; transaction coordinator {coordinator}")
    assert remote, f"every partition is led by the coordinator {coordinator}: no WriteTxnMarkers tested"

    committed: list[str] = []
    aborted: list[str] = []
    for txn in range(4):
        producer.begin_transaction()
        values = _send(producer, txn)
        if txn % 2 == 0:
            producer.commit_transaction(60)
            committed += values
        else:
            producer.abort_transaction(60)
            aborted += values

    producer.begin_transaction()
    aborted += _send(producer, 4)  # left open: its coordinator dies under it
    three.node(coordinator).kill()
    moved = wait_for(
        lambda: _coordinator(three, TXN_ID) not in (coordinator, -1), 60, "the coordinator moves"
    )
    successor = _coordinator(three, TXN_ID)
    print(f"coordinator {coordinator} SIGKILLed, a transaction open: {successor} took over in {moved:.2f}s")

    fresh = _producer(three)
    fresh.init_transactions(90)  # fences the old producer; its open transaction is aborted
    fresh.begin_transaction()
    values = _send(fresh, 5)
    fresh.commit_transaction(60)
    committed += values
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)  # the fenced producer cannot commit what it left open

    three.node(coordinator).start()
    wait_for(
        lambda: all(coordinator in partition_state(three, TOPIC, p)[1] for p in range(PARTITIONS)),
        90,
        f"{coordinator} rejoins every ISR",
    )
    read_committed = _read(three, "read_committed", len(committed))
    read_uncommitted = _read(three, "read_uncommitted", len(committed) + len(aborted))
    print(
        f"{len(committed)} committed, {len(aborted)} aborted; read_committed read {len(read_committed)}, "
        f"read_uncommitted {len(read_uncommitted)}"
    )
    assert sorted(read_committed) == sorted(committed), (
        f"read_committed: missing {sorted(set(committed) - set(read_committed))[:5]}, "
        f"aborted or extra {sorted(set(read_committed) - set(committed))[:5]}"
    )
    assert set(committed) | set(aborted) <= set(read_uncommitted)
