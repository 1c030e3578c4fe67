"""Share-partition state survives its leader (issue 19, KIP-932's share coordinator).

A share-partition's state (start offset, each in-flight record's delivery state and count) is
written through the share coordinator to ``__share_group_state`` (Kafka's ``SharePartition`` and
``DefaultStatePersister``, server/share/persister; ``ShareCoordinatorShard``) and read back when a
leader first loads the share-partition, after a restart or a leadership move. So: acknowledged
records are not delivered again, released ones are, with their delivery count kept.

Without the persister the share-partition lived in the leader's memory only: after the crash it
started again at the log end (``share.auto.offset.reset=latest``), so nothing came back, and on the
new leader of a cluster the released records had delivery count 1.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.targets import Target, launch
from fixtures.wire import Capabilities, Router, WireClient, ops
from fixtures.wire.routing import RoutingError
from fixtures.wire.share import ACCEPT, RELEASE, TP, ShareConsumer, acquired_offsets

RECORDS = 10
ROUNDS = 50  # fetches tried while the restarted leader settles
PAUSE_S = 0.2


def _router(address: str) -> tuple[Router, Capabilities, list[WireClient]]:
    opened: list[WireClient] = []

    def open_client(addr: str) -> WireClient:
        client = WireClient(addr)
        opened.append(client)
        return client

    wire = open_client(address)
    caps = Capabilities(wire.api_versions())
    listed = wire.request("metadata", caps.best("metadata", lo=1), topics=[], allow_auto_topic_creation=False)
    brokers = {int(b.node_id): f"{b.host}:{int(b.port)}" for b in listed.brokers}
    return Router(wire, open_client, brokers, caps), caps, opened


@pytest.fixture
def single(tmp_path: Path) -> Iterator[Target]:
    target = launch("reference", workdir=tmp_path)
    try:
        yield target
    finally:
        target.close()


def _member(router: Router, caps: Capabilities, group: str, topic: str) -> tuple[ShareConsumer, TP]:
    tp: TP = (ops.topic_id(router, caps, topic), 0)
    m = ShareConsumer(router.to_coordinator(group), router.to_leader(topic, 0), caps, group)
    assert m.join([topic], {tp}), "never assigned the partition"
    return m, tp


def _deliveries(m: ShareConsumer, tp: TP, want: int) -> dict[int, int]:
    """Offset -> delivery count of what ShareFetches acquire until ``want`` offsets came (bounded)."""
    got: dict[int, int] = {}
    for _ in range(ROUNDS):
        answer = m.fetch([tp], max_wait_ms=200)
        if int(answer.error_code) == 0:
            got.update(acquired_offsets(answer, tp))
        if len(got) >= want:
            break
        time.sleep(PAUSE_S)
    return got


def _ack_some(router: Router, caps: Capabilities, group: str, topic: str) -> None:
    """Acquire the ten records, ACCEPT 0-4, RELEASE 5-6, keep 7-9 (held when the leader goes)."""
    m, tp = _member(router, caps, group, topic)
    assert int(m.fetch([tp]).error_code) == 0  # opens the session where the share-partition starts
    answer = ops.produce_values(router, caps, topic, [b"v%d" % i for i in range(RECORDS)])
    assert int(answer.error_code) == 0
    assert _deliveries(m, tp, RECORDS) == {o: 1 for o in range(RECORDS)}
    acked = m.acknowledge({tp: [(0, 4, ACCEPT), (5, 6, RELEASE)]})
    assert int(acked.error_code) == 0
    assert [int(p.error_code) for t in acked.responses for p in t.partitions] == [0]


def _check_resumed(got: dict[int, int]) -> None:
    print(f"after the move: acquired {got}")
    assert not set(got) & set(range(5)), f"acknowledged records delivered again: {got}"
    assert got.get(5) == 2 and got.get(6) == 2, f"released records must come back with count 2: {got}"
    assert set(range(7, RECORDS)) <= set(got), f"records held when the leader went must come back: {got}"


def test_a_restarted_broker_resumes_the_share_partition(single: Target) -> None:
    router, caps, opened = _router(single.bootstrap_servers)
    topic, group = f"ss-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    try:
        ops.ensure_topic(router, caps, topic, 1, None)
        _ack_some(router, caps, group, topic)
    finally:
        for c in opened:
            c.close()
    started = time.monotonic()
    single.nodes[0].kill()
    single.nodes[0].start()
    router, caps, opened = _router(single.bootstrap_servers)
    try:
        m, tp = _member(router, caps, group, topic)
        got = _deliveries(m, tp, RECORDS - 5)
        print(f"crash to redelivery: {time.monotonic() - started:.2f} s")
        _check_resumed(got)
    finally:
        for c in opened:
            c.close()


CLUSTER_CONFIGS = (
    "broker.session.timeout.ms=3000",
    "broker.heartbeat.interval.ms=500",
    "replica.lag.time.max.ms=3000",
    "offsets.topic.num.partitions=3",
    "share.coordinator.state.topic.num.partitions=3",
)


def _summary(router: Router, caps: Capabilities, group: str, tp: TP) -> Any:
    """ReadShareGroupStateSummary of the share-partition from its share coordinator."""
    key = f"{group}:{_kafka_uuid(tp[0])}:{tp[1]}"
    answer = router.to_coordinator(key, 2).request(
        "read_share_group_state_summary",
        caps.best("read_share_group_state_summary"),
        group_id=group,
        topics=[{"topic_id": tp[0], "partitions": [{"partition": tp[1], "leader_epoch": -1}]}],
    )
    return answer.results[0].partitions[0]


def _kafka_uuid(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            if condition():
                return time.monotonic() - started
        except (OSError, RoutingError):
            pass
        time.sleep(PAUSE_S)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")


@pytest.mark.slow
@pytest.mark.cluster_full  # on demand (KH_CLUSTER_FULL=1): three brokers, a kill, ~60 s
def test_a_new_leader_resumes_the_share_partition(tmp_path: Path) -> None:
    """Three brokers, the topic replicated on all: the share-partition's leader is killed; the
    new leader reads the state the old one wrote through the share coordinator (another broker,
    or a new one if the coordinator died too: the state topic is replicated)."""
    with launch("reference", workdir=tmp_path, brokers=3, broker_configs=CLUSTER_CONFIGS) as target:
        router, caps, opened = _router(target.bootstrap_servers.split(",")[0])
        topic, group = f"ss-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
        try:
            created = ops.create_topic(router, caps, topic, 1, None, replication_factor=3)
            assert int(created.error_code) == 0
            router.wait_for_topic(topic, 1)
            _ack_some(router, caps, group, topic)
            tp: TP = (ops.topic_id(router, caps, topic), 0)
            # ShareAcknowledge is answered once the state is written: its coordinator has it now
            assert int(_summary(router, caps, group, tp).start_offset) == 5
            leader = router.leader_of(topic, 0)
            assert leader is not None
        finally:
            for c in opened:
                c.close()
        target.node(leader).kill()
        live = [n for n in target.nodes if n.node_id != leader]
        print(f"killed the leader {leader}")
        router, caps, opened = _router(f"{live[0].host}:{live[0].advertised_port}")
        try:

            def moved() -> bool:
                router.refresh([topic])
                return router.leader_of(topic, 0) not in (None, leader)

            took = _until(moved, f"the leadership of {topic}-0 leaves {leader}")
            print(f"new leader {router.leader_of(topic, 0)} after {took:.2f} s")
            m, tp = _member(router, caps, group, topic)
            _check_resumed(_deliveries(m, tp, RECORDS - 5))
        finally:
            for c in opened:
                c.close()
