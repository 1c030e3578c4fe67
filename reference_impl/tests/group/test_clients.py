"""Consumer groups of real clients against a reference broker process (issue 3's acceptance points).

Three members join a 6-partition topic while 30,000 records are produced, a
fourth joins and the first leaves; every member commits what it processed
after processing it. The broker's own record of each generation (its group
metadata in ``__consumer_offsets``) must give every partition to exactly one
member (at most one, for the cooperative protocol, whose intermediate
generations hold revoked partitions back); no record may be lost, and the
duplicates are bounded by what members had processed but not committed when
they lost a partition. Each library runs a different client-side assignor:
kafka-python sticky, aiokafka round-robin, confluent-kafka cooperative-sticky
and range.

The time from the fourth member's start to its first assignment is printed
(a figure, not an assertion).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fixtures.targets import Target, launch

from .client_members import (
    AiokafkaMember,
    ConfluentMember,
    KafkaPythonMember,
    Ledger,
    Member,
    generations,
)

pytestmark = [pytest.mark.clients, pytest.mark.slow]

RECORDS = 30_000
PARTITIONS = 6
OFFSETS_PARTITIONS = 50
BROKER_CONFIGS = ("group.initial.rebalance.delay.ms=0",)


@pytest.fixture(scope="module")
def broker() -> Iterator[Target]:
    target = launch("reference", broker_configs=BROKER_CONFIGS)
    yield target
    target.close()


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=30)


def _produce(
    bootstrap: str, topic: str, start: int, count: int, seconds: float, partitions: int = PARTITIONS
) -> None:
    """``count`` records (values from ``start``, as text) over about ``seconds``, round-robin."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    began = time.monotonic()
    for i in range(start, start + count):
        producer.produce(topic, str(i).encode(), partition=i % partitions)
        if i % 1000 == 999:
            producer.poll(0)
            lag = began + seconds * (i - start + 1) / count - time.monotonic()
            if lag > 0:
                time.sleep(lag)
    assert producer.flush(30) == 0


def _wait(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _check_generations(bootstrap: str, group: str, cooperative: bool, min_generations: int) -> int:
    """The broker's stored assignment of every generation gives each partition to one member, an eager
    generation all of them or none: kafka-python's leader assigns nothing when its metadata does not
    know the topic yet (its sticky assignor logs "No partition metadata for topic"; seen once in a
    clean-clone CI run, generation 2 of 3), and the members join again once it does. The last
    generation assigns every partition."""
    by_generation: dict[int, dict[str, set[int]]] = {}
    for generation, owners in generations(bootstrap, group, OFFSETS_PARTITIONS):
        by_generation[generation] = owners  # a static rejoin rewrites its generation: the last record wins
    assert len(by_generation) >= min_generations, sorted(by_generation)
    for generation, owners in sorted(by_generation.items()):
        owned = [p for parts in owners.values() for p in parts]
        assert len(owned) == len(set(owned)), f"generation {generation}: a partition has two owners {owners}"
        if not cooperative:  # all or, when the leader had no metadata for the topic yet, none
            assert sorted(owned) in ([], list(range(PARTITIONS))), f"generation {generation}: {owners}"
    last = by_generation[max(by_generation)]
    assert sorted(p for parts in last.values() for p in parts) == list(range(PARTITIONS))
    return len(by_generation)


def _scenario(bootstrap: str, make: Callable[[str, Ledger, str, str], Member], cooperative: bool) -> None:
    topic, group = f"grp-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic, PARTITIONS)
    ledger = Ledger()
    members = [make(f"m{i}", ledger, group, topic) for i in range(4)]
    try:
        for m in members[:3]:
            m.start()
        _wait(
            lambda: len({n for _t, n, kind, _ps in ledger.assignments if kind == "assign"}) == 3,
            60,
            "3 members",
        )
        producer = threading.Thread(target=_produce, args=(bootstrap, topic, 0, RECORDS, 6.0), daemon=True)
        producer.start()
        _wait(lambda: ledger.distinct() >= RECORDS // 4, 60, "a quarter of the records")
        fourth = members[3]
        fourth.start()
        _wait(lambda: fourth.first_assignment_s is not None, 60, "the fourth member's assignment")
        assert fourth.first_assignment_s is not None
        latency = fourth.first_assignment_s - fourth.started_s
        print(f"\n{make.__name__}: last member's first assignment {latency:.3f} s after it started")
        _wait(lambda: ledger.distinct() >= RECORDS // 2, 60, "half of the records")
        members[0].close()  # the first member leaves mid-stream
        producer.join(60)
        _wait(lambda: ledger.distinct() >= RECORDS, 90, "every record")
    finally:
        for m in members:
            m.close()
    for m in members:
        assert m.error is None, f"{m.name}: {m.error!r}"
    assert set(ledger.values) == set(range(RECORDS)), "records were lost"
    duplicates = ledger.processed() - RECORDS
    print(
        f"{make.__name__}: {RECORDS} records, {duplicates} duplicates, bound {ledger.in_flight_lost} "
        f"(uncommitted in-flight records at revocation), {ledger.commit_failures} failed commits"
    )
    assert duplicates <= ledger.in_flight_lost
    seen = _check_generations(bootstrap, group, cooperative, min_generations=3)
    print(f"{make.__name__}: {seen} generations, each partition owned once in each")


def test_kafka_python_group_sticky(broker: Target) -> None:
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    def kafka_python_sticky(name: str, ledger: Ledger, group: str, topic: str) -> Member:
        return KafkaPythonMember(
            name, ledger, broker.bootstrap_servers, group, topic, assignors=[StickyPartitionAssignor]
        )

    _scenario(broker.bootstrap_servers, kafka_python_sticky, cooperative=False)


def test_aiokafka_group_round_robin(broker: Target) -> None:
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    def aiokafka_round_robin(name: str, ledger: Ledger, group: str, topic: str) -> Member:
        return AiokafkaMember(
            name, ledger, broker.bootstrap_servers, group, topic, assignors=(RoundRobinPartitionAssignor,)
        )

    _scenario(broker.bootstrap_servers, aiokafka_round_robin, cooperative=False)


def test_confluent_kafka_group_cooperative_sticky(broker: Target) -> None:
    def confluent_cooperative_sticky(name: str, ledger: Ledger, group: str, topic: str) -> Member:
        return ConfluentMember(
            name, ledger, broker.bootstrap_servers, group, topic, strategy="cooperative-sticky"
        )

    _scenario(broker.bootstrap_servers, confluent_cooperative_sticky, cooperative=True)


def test_static_member_restarts_within_its_session_without_a_rebalance(broker: Target) -> None:
    bootstrap = broker.bootstrap_servers
    topic, group = f"static-{uuid.uuid4().hex[:8]}", f"gs-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic, 2)
    ledger = Ledger()
    a = ConfluentMember("a", ledger, bootstrap, group, topic, strategy="range", instance_id="inst-a")
    b = ConfluentMember("b", ledger, bootstrap, group, topic, strategy="range", instance_id="inst-b")
    restarted = ConfluentMember("b2", ledger, bootstrap, group, topic, strategy="range", instance_id="inst-b")
    try:
        a.start()
        b.start()
        _wait(lambda: bool(a.owned) and bool(b.owned), 60, "both static members assigned")
        time.sleep(1.0)  # let the group settle in its last generation
        before = {"a": set(a.owned), "b": set(b.owned)}
        generation = max(g for g, _owners in generations(bootstrap, group, OFFSETS_PARTITIONS))
        mark = len(ledger.assignments)
        b.close()  # a static member closes without LeaveGroup (KIP-345)
        restarted.start()
        _wait(lambda: restarted.first_assignment_s is not None, 30, "the restarted member's assignment")
        time.sleep(1.5)  # several heartbeat intervals: a rebalance, if any, would reach member a now
        after = [(name, kind, set(ps)) for _t, name, kind, ps in ledger.assignments[mark:]]
    finally:
        for m in (a, b, restarted):
            m.close()
    assert [e for e in after if e[0] == "a"] == [], f"member a saw a rebalance: {after}"
    assert [e for e in after if e[0] == "b2"] == [("b2", "assign", before["b"])]
    stored = [g for g, _owners in generations(bootstrap, group, OFFSETS_PARTITIONS)]
    assert max(stored) == generation, f"the restart started generation {max(stored)} after {generation}"
    for m in (a, b, restarted):
        assert m.error is None, f"{m.name}: {m.error!r}"


def _stable_group(bootstrap: str) -> tuple[str, str, list[Member], Ledger]:
    topic, group = f"adm-{uuid.uuid4().hex[:8]}", f"ga-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic, PARTITIONS)
    _produce(bootstrap, topic, 0, 600, 0.0)
    ledger = Ledger()
    members: list[Member] = [
        ConfluentMember(f"admin-member-{i}", ledger, bootstrap, group, topic, strategy="range")
        for i in range(2)
    ]
    try:
        for m in members:
            m.start()
        _wait(lambda: ledger.distinct() == 600, 60, "600 records consumed")
        # one member may read everything before the other joins: wait for the settled assignment
        _wait(
            lambda: all(m.owned for m in members)
            and sorted(p for m in members for p in m.owned) == list(range(PARTITIONS)),
            60,
            "both members assigned",
        )
        _wait(lambda: all(m.committed_next == m.processed_next for m in members), 30, "commits")
    except BaseException:
        for m in members:
            m.close()
        raise
    return topic, group, members, ledger


def test_admin_clients_describe_the_group_and_its_offsets(broker: Target) -> None:
    bootstrap = broker.bootstrap_servers
    topic, group, members, _ledger = _stable_group(bootstrap)
    try:
        owned = {m.name: set(m.owned) for m in members}
        expected_offsets = {p: 100 for p in range(PARTITIONS)}  # 600 records, round-robin over 6

        from kafka import KafkaAdminClient

        kp = KafkaAdminClient(bootstrap_servers=bootstrap)
        info = kp.describe_groups([group])[group]
        assert (info["error"], info["group_id"], info["group_state"]) == (None, group, "Stable")
        assert (info["protocol_type"], info["protocol_data"]) == ("consumer", "range")
        by_client = {m["client_id"]: m for m in info["members"]}
        assert set(by_client) == set(owned)
        for name, m in by_client.items():
            assert m["client_host"] == "/127.0.0.1"
            assert m["member_metadata"]["topics"] == [topic]
            got = {p for a in m["member_assignment"]["assigned_partitions"] for p in a["partitions"]}
            assert got == owned[name]
        kp_offsets = kp.list_group_offsets(group)[group]
        assert {tp.partition: meta.offset for tp, meta in kp_offsets.items()} == expected_offsets
        kp.close()

        from confluent_kafka.admin import AdminClient

        ck = AdminClient({"bootstrap.servers": bootstrap})
        desc = ck.describe_consumer_groups([group])[group].result(timeout=30)
        assert (desc.group_id, desc.state.name, desc.partition_assignor, desc.is_simple_consumer_group) == (
            group,
            "STABLE",
            "range",
            False,
        )
        assert desc.coordinator.id == 1
        assert {
            m.client_id: {tp.partition for tp in m.assignment.topic_partitions} for m in desc.members
        } == owned
        assert {m.host for m in desc.members} == {"/127.0.0.1"}

        from aiokafka.admin import AIOKafkaAdminClient

        async def aio_offsets() -> dict[int, int]:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await admin.start()
            try:
                found = await admin.list_consumer_group_offsets(group)
            finally:
                await admin.close()
            return {tp.partition: meta.offset for tp, meta in found.items()}

        assert asyncio.run(aio_offsets()) == expected_offsets
        _check_generations(bootstrap, group, cooperative=False, min_generations=1)
    finally:
        for m in members:
            m.close()


def test_offsets_and_group_state_survive_a_broker_restart(tmp_path: Path) -> None:
    target = launch("reference", workdir=tmp_path, broker_configs=BROKER_CONFIGS)
    try:
        bootstrap = target.bootstrap_servers
        topic, group = f"rst-{uuid.uuid4().hex[:8]}", f"gr-{uuid.uuid4().hex[:8]}"
        _create_topic(bootstrap, topic, 2)
        _produce(bootstrap, topic, 0, 200, 0.0, partitions=2)
        ledger = Ledger()
        member = ConfluentMember(
            "survivor", ledger, bootstrap, group, topic, strategy="range", instance_id="keep"
        )
        try:
            member.start()
            _wait(lambda: ledger.distinct() == 200, 60, "200 records consumed")
            _wait(lambda: member.committed_next == member.processed_next, 30, "commits")
        finally:
            member.close()  # static: no LeaveGroup, the group stays Stable with its member
        assert member.error is None, member.error

        target.nodes[0].restart()

        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": bootstrap})
        desc = admin.describe_consumer_groups([group])[group].result(timeout=60)
        assert desc.state.name == "STABLE"
        assert [(m.group_instance_id, len(m.assignment.topic_partitions)) for m in desc.members] == [
            ("keep", 2)
        ]
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0), TopicPartition(topic, 1)])]
        listed = admin.list_consumer_group_offsets(request)[group].result(timeout=60)
        assert {tp.partition: tp.offset for tp in listed.topic_partitions} == {0: 100, 1: 100}
    finally:
        target.close()
