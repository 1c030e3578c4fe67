"""Issue 19's acceptance on the three-broker reference cluster: a KIP-848 consumer-protocol group of
three confluent-kafka members (``group.protocol=consumer``) over six partitions consumes 100,000
records exactly once across a member leaving and a SIGKILL of the group's coordinator.

Each member commits what it processed after every batch and before giving a partition up; the
coordinator hands a partition to another member only once its owner revoked it (revoke before
assign), and a coordinator that takes over replays the group's records from ``__consumer_offsets``
(member epochs, target and current assignments), so members keep their partitions and epochs.
Every offset of every partition's log is processed once (checked against the logs' end offsets).
Figures are printed; run it with ``-s``. On demand (``cluster_full``: ``tox -e cluster`` or
``KH_CLUSTER_FULL=1``), not in the default run: a three-broker start and 100,000 records take
~40 s, over the CI budget; the default run covers the leave with a 3,000-record client test on one
broker (suites/clients/test_consumer_protocol.py) and the reload in reference_impl/tests/group.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fixtures.clients import ConsumingMember, make_client
from fixtures.targets import Target, launch
from fixtures.wire import Capabilities, WireClient, WireError, ops

from .workload import CLUSTER_CONFIGS, create_topic, partition_state, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.clients, pytest.mark.cluster_full]
RECORDS = 100_000
PARTITIONS = 6
PHASES = (40_000, 30_000, 30_000)
CONFIGS = (*CLUSTER_CONFIGS, "group.consumer.heartbeat.interval.ms=1000")


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir: Path = tmp_path_factory.mktemp("kip848")
    with launch("reference", workdir=workdir, brokers=3, broker_configs=CONFIGS) as target:
        yield target


def _produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    )
    for i in range(start, start + count):
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0, "records left unsent"


def _coordinator(target: Target, group: str) -> int:
    """The group's coordinator as a live broker answers FindCoordinator (the killed one refuses)."""

    def ask() -> int | None:
        for address in target.bootstrap_servers.split(","):
            try:
                with WireClient(address) as wire:
                    caps = Capabilities(wire.api_versions())
                    code, node, _h, _p = ops.find_coordinator(wire, caps, group)
            except (OSError, WireError):
                continue
            if int(code) == 0:
                return node
        return None

    found: list[int] = []

    def answered() -> bool:
        node = ask()
        if node is not None:
            found.append(node)
        return node is not None

    wait_for(answered, 60, "a coordinator found")
    return found[0]


def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kh-probe"})
    try:
        return {
            p: int(consumer.get_watermark_offsets(TopicPartition(topic, p), 30, cached=False)[1])
            for p in range(PARTITIONS)
        }
    finally:
        consumer.close()


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets (OffsetFetch through a consumer that never joins)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        return {int(tp.partition): int(tp.offset) for tp in got}
    finally:
        consumer.close()


def _describe(target: Target, node: int, group: str) -> tuple[str, int, list[tuple[int, int]]]:
    """ConsumerGroupDescribe at ``node``: (state, group epoch, (member epoch, partitions) per member)."""
    n = target.node(node)
    with WireClient(f"{n.host}:{n.advertised_port}") as wire:
        answer = wire.request(
            "consumer_group_describe", 1, group_ids=[group], include_authorized_operations=False
        )
    g = answer.groups[0]
    assert int(g.error_code) == 0, f"ConsumerGroupDescribe at {node}: {g.error_code} {g.error_message}"
    members = sorted(
        (int(m.member_epoch), sum(len(t.partitions) for t in m.assignment.topic_partitions))
        for m in g.members
    )
    return str(g.group_state), int(g.group_epoch), members


def test_consumer_protocol_group_exactly_once_across_leave_and_coordinator_kill(three: Target) -> None:
    topic, group = "kip848-acceptance", "kip848-group"
    create_topic(three, topic, partitions=PARTITIONS)
    bootstrap = three.bootstrap_servers
    client = make_client("confluent-kafka", bootstrap)
    members: dict[str, ConsumingMember] = {}
    finished: list[tuple[int, int]] = []
    figures: dict[str, float] = {}

    def seen() -> list[tuple[int, int]]:
        return finished + [r for m in members.values() for r in m.seen()]

    def reach(count: int, what: str) -> Callable[[], bool]:
        def check() -> bool:
            for name, m in members.items():
                assert m.error() is None, f"{what}: member {name} failed: {m.error()}"
            return len(set(seen())) >= count

        return check

    started = time.monotonic()
    _produce(bootstrap, topic, 0, PHASES[0])
    try:
        for name in ("a", "b", "c"):
            members[name] = client.consuming_member(group, topic, group_protocol="consumer")
        figures["first 20k"] = wait_for(reach(20_000, "first 20k"), 120, "three members consume 20k")
        figures["three hold partitions"] = wait_for(
            lambda: (
                all(m.assignment() for m in members.values())
                and sum(len(m.assignment() or ()) for m in members.values()) == PARTITIONS
            ),
            120,
            "each of the three members holds partitions, none twice",
        )
        leaving = members.pop("a")
        leaving.close()
        finished.extend(leaving.seen())
        _produce(bootstrap, topic, PHASES[0], PHASES[1])
        figures["after leave to 55k"] = wait_for(reach(55_000, "55k"), 120, "two members reach 55k")
        coordinator = _coordinator(three, group)
        three.node(coordinator).kill()
        killed_at = time.monotonic()
        _produce(bootstrap, topic, PHASES[0] + PHASES[1], PHASES[2])
        end = _end_offsets(bootstrap, topic)
        total = sum(end.values())
        figures["kill to all consumed"] = wait_for(reach(total, "all"), 180, f"all {total} records consumed")
        figures["kill to done"] = time.monotonic() - killed_at
        new = _coordinator(three, group)
        figures["offsets committed on the new coordinator"] = wait_for(
            lambda: _committed(bootstrap, group, topic) == end, 120, "every position committed"
        )
        described = _describe(three, new, group)
        three.node(coordinator).start()
        wait_for(lambda: partition_state(three, topic, 0)[0] != -1, 60, "the killed node back")
    finally:
        for m in members.values():
            m.close()
    records = seen()
    distinct = set(records)
    wanted = {(p, o) for p, n in end.items() for o in range(n)}
    retries = sum(int(getattr(m, "commit_retries", 0)) for m in [*members.values(), leaving])
    print(
        f"KIP-848 acceptance: {total} records in the logs (produced {RECORDS}), processed {len(records)}, "
        f"distinct {len(distinct)}, duplicates {len(records) - len(distinct)}, "
        f"missing {len(wanted - distinct)}; coordinator {coordinator} SIGKILLed, then {new} coordinates "
        f"the group: {described}; commit retries {retries}; "
        + ", ".join(f"{k} {v:.1f}s" for k, v in figures.items())
        + f"; whole run {time.monotonic() - started:.1f}s"
    )
    assert described[0] == "Stable" and len(described[2]) == 2, (
        f"the group on its new coordinator: {described}"
    )
    assert total == RECORDS, f"the logs hold {total} records, {RECORDS} were produced (idempotent)"
    assert distinct == wanted, (
        f"missing {sorted(wanted - distinct)[:5]}, extra {sorted(distinct - wanted)[:5]}"
    )
    assert len(records) == len(distinct), f"{len(records) - len(distinct)} records processed twice"
