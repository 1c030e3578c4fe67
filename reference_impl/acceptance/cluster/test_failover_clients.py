"""Issue 4 on a three-broker reference cluster (real processes, three quorum voters), one cluster for
the module; each test leaves every node running:

* kafka-python, confluent-kafka and aiokafka producers (acks=all, idempotent) and group consumers
  keep working while the partition leader is SIGKILLed: every acknowledged record is read by every
  client's group;
* the group coordinator moves with ``__consumer_offsets`` leadership: offsets committed, the
  coordinator's broker killed, the group resumes from them on the new coordinator.

A controller cut off in a minority by a network partition is test_controller_partition.py.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from fixtures.targets import Target, launch

from .threaded_clients import CLIENTS, Side, consume, in_thread, produce
from .workload import CLUSTER_CONFIGS, create_topic, partition_state, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.clients]


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir: Path = tmp_path_factory.mktemp("three")
    with launch("reference", workdir=workdir, brokers=3, broker_configs=CLUSTER_CONFIGS) as target:
        yield target


def _restart_when_moved(target: Target, topic: str, victim: int, partition: int = 0) -> float:
    """SIGKILL ``victim``; once the partition's leadership left it, start it again; seconds to move."""
    target.node(victim).kill()
    moved = wait_for(
        lambda: partition_state(target, topic, partition)[0] not in (victim, -1),
        60,
        f"leadership leaves {victim}",
    )
    target.node(victim).start()
    wait_for(lambda: victim in partition_state(target, topic, partition)[1], 90, f"{victim} rejoins the ISR")
    return moved


def test_three_clients_produce_and_consume_across_a_leader_kill(three: Target) -> None:
    topic, count = "three-clients", 600
    create_topic(three, topic)
    bootstrap = three.bootstrap_servers
    acked: dict[str, Side] = {}

    def everything_read(side: Side) -> bool:
        if len(acked) < len(CLIENTS):
            return False
        wanted = {v for s in acked.values() for v in s.values}
        return wanted <= set(side.values)

    consumers = {
        c: in_thread(functools.partial(consume, c, bootstrap, topic, f"group-{c}", everything_read, 150))
        for c in CLIENTS
    }
    producers = {c: in_thread(functools.partial(produce, c, bootstrap, topic, count, 12.0)) for c in CLIENTS}
    time.sleep(4.0)
    leader = partition_state(three, topic)[0]
    moved = _restart_when_moved(three, topic, leader)
    print(f"leader {leader} killed mid-run: leadership moved in {moved:.2f}s")
    for client, join in producers.items():
        acked[client] = join()
    read = {client: join() for client, join in consumers.items()}
    wanted = {v for s in acked.values() for v in s.values}
    for client in CLIENTS:
        print(
            f"{client}: produced {len(acked[client].values)}/{count} acked "
            f"({len(acked[client].errors)} errors); "
            f"its group read {len(set(read[client].values))} distinct of {len(wanted)} acked"
        )
    for client in CLIENTS:
        assert len(acked[client].values) == count, f"{client} producer: {acked[client].errors[:3]}"
        missing = wanted - set(read[client].values)
        assert not missing, (
            f"{client}'s group did not read {len(missing)} acked records, e.g. {sorted(missing)[:5]}"
        )


def test_group_resumes_from_committed_offsets_on_the_new_coordinator(three: Target) -> None:
    topic, group = "resume", "resume-group"
    create_topic(three, topic)
    producer = Producer({"bootstrap.servers": three.bootstrap_servers, "acks": "all"})
    for i in range(200):
        producer.produce(topic, str(i).encode())
    assert producer.flush(30) == 0
    config = {
        "bootstrap.servers": three.bootstrap_servers,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    first = Consumer(config)
    first.subscribe([topic])
    seen: list[int] = []
    for _ in range(600):
        msg = first.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append(int(msg.value() or b"-1"))
            if len(seen) == 120:
                first.commit(message=msg, asynchronous=False)
                break
    assert len(seen) == 120, f"read only {len(seen)} before committing"
    first.close()
    admin = AdminClient({"bootstrap.servers": three.bootstrap_servers})
    [described] = admin.describe_consumer_groups([group]).values()
    coordinator = int(described.result(30).coordinator.id)
    shard = _offsets_shard(three, coordinator)
    moved = _restart_when_moved(three, "__consumer_offsets", coordinator, shard)
    now = -1

    def described_elsewhere() -> bool:  # a new admin client: a fresh FindCoordinator
        nonlocal now
        fresh = AdminClient({"bootstrap.servers": three.bootstrap_servers})
        [described] = fresh.describe_consumer_groups([group]).values()
        now = int(described.result(10).coordinator.id)
        return now != coordinator

    wait_for(described_elsewhere, 30, "the group is described by its new coordinator")
    print(
        f"coordinator {coordinator} (__consumer_offsets-{shard}) killed: {now} coordinates after {moved:.2f}s"
    )
    second = Consumer(config)
    committed = second.committed([TopicPartition(topic, 0)], timeout=30)
    assert committed[0].offset == 120, f"committed offset after the move: {committed[0].offset}"
    second.subscribe([topic])
    resumed: list[int] = []
    for _ in range(600):
        msg = second.poll(0.5)
        if msg is not None and msg.error() is None:
            resumed.append(int(msg.value() or b"-1"))
            if len(resumed) == 80:
                break
    second.close()
    assert resumed[:1] == [120] and resumed == list(range(120, 200)), resumed[:5]


def _offsets_shard(target: Target, coordinator: int) -> int:
    """The ``__consumer_offsets`` partition the coordinator leads (the group's shard)."""
    md = AdminClient({"bootstrap.servers": target.bootstrap_servers}).list_topics(
        "__consumer_offsets", timeout=10
    )
    led = [p for p, meta in md.topics["__consumer_offsets"].partitions.items() if meta.leader == coordinator]
    assert led, f"broker {coordinator} leads no __consumer_offsets partition"
    return int(led[0])
