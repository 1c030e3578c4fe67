"""Issue 4, Raft: a controller partitioned into a minority cannot commit (a network partition, not a
paused process).

Three reference brokers, each a quorum voter, with a Toxiproxy proxy on every link: one in front of
each broker for clients and one per direction and broker pair (``broker-A-to-B``). The chaos
campaigns' own fault does the cutting: :class:`chaos.nemesis.faults.Nemesis` with the planned fault
``partition-controller`` black-holes every link of the active controller (its client proxy and
its links to and from the two other voters). The test still reaches the cut-off controller on the
port it listens on, behind the proxy, and asks it to create a topic:

* it answers REQUEST_TIMED_OUT, asked with a 1 s timeout: shorter than the 1.5 fetch timeouts (at
  least 1.5 s) after which a leader that hears from no majority resigns, so the record is in its
  log past a high watermark that cannot move, as its DescribeQuorum shows; or NOT_CONTROLLER when
  it resigned already. Neither it nor any other node ever shows that topic;
* while it is cut off, the majority elects a controller of its own and commits a topic of its own;
* after the heal it follows the majority's leader, its uncommitted suffix is truncated (the topic
  it was asked for never appears anywhere), and it shows the majority's topic; the creation
  retried at the controller named now reaches every node.

Figures printed: the cut-off controller's answer and how long it took, the majority's election
time, and the quorum's high watermark on both sides.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.history import Recorder
from chaos.nemesis.faults import Nemesis
from chaos.nemesis.schedule import Planned
from chaos.nemesis.topology import Topology
from chaos.toxiproxy.finder import find_toxiproxy
from fixtures.targets import Target, launch
from fixtures.wire import WireClient

from .workload import CLUSTER_CONFIGS, wait_for

pytestmark = [pytest.mark.slow]

NODES = [1, 2, 3]


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[Target, Topology]]:
    with find_toxiproxy() as endpoint:
        topology = Topology.plan(endpoint.url, NODES, broker_links=True)
        topology.create()
        try:
            with launch(
                "reference",
                workdir=tmp_path,
                brokers=len(NODES),
                listen_ports=[topology.listen_ports[n] for n in NODES],
                advertised_ports=[topology.advertised_ports[n] for n in NODES],
                peer_ports=topology.peer_ports,
                controller_ports=topology.controller_ports,
                controller_peer_ports=topology.controller_peer_ports,
                broker_configs=CLUSTER_CONFIGS,
            ) as target:
                yield target, topology
        finally:
            topology.delete()


def _direct(topology: Topology, node: int) -> WireClient:
    """A connection to the port the node listens on: behind its proxy, so a partition does not cut it."""
    return WireClient(f"127.0.0.1:{topology.listen_ports[node]}", timeout_s=20)


def _proxied(topology: Topology, node: int) -> WireClient:
    return WireClient(f"127.0.0.1:{topology.advertised_ports[node]}", timeout_s=20)


def _metadata(client: WireClient) -> tuple[int, set[str]]:
    """(the controller the node names, the topics it shows)."""
    answer = client.request(3, 12, topics=None, allow_auto_topic_creation=False)
    return int(answer.controller_id), {str(t.name) for t in answer.topics}


def _create(client: WireClient, name: str, timeout_ms: int) -> str:
    topic = {"name": name, "num_partitions": 1, "replication_factor": 3, "assignments": [], "configs": []}
    [result] = client.request(19, 7, topics=[topic], timeout=timeout_ms, validate_only=False).topics
    return str(result.error_code.name)


def _create_at_controller(client: WireClient, name: str) -> str:
    """CreateTopics as Kafka's admin client sends it: NOT_CONTROLLER is retriable, and a leader just
    elected answers it until its controller has replayed the log and become active (bounded)."""
    deadline = time.monotonic() + 10
    answer = _create(client, name, 10_000)
    while answer == "not_controller" and time.monotonic() < deadline:
        time.sleep(0.1)
        answer = _create(client, name, 10_000)
    return answer


def _quorum(client: WireClient) -> Any:
    """The node's DescribeQuorum partition: leader, epoch, high watermark and voters (when it leads)."""
    topics = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    return client.request(55, 1, topics=topics).topics[0].partitions[0]


def _log_end(partition: Any, node: int) -> int:
    return next(int(v.log_end_offset) for v in partition.current_voters if int(v.replica_id) == node)


def test_a_partitioned_minority_controller_cannot_commit(proxied: tuple[Target, Topology]) -> None:
    target, topology = proxied

    def controller_of(nodes: list[int]) -> int:
        """The controller the first answering node among ``nodes`` names (-1 when none names one)."""
        for node in nodes:
            try:
                with _proxied(topology, node) as client:
                    controller, _ = _metadata(client)
                if controller >= 0:
                    return controller
            except OSError:
                continue
        return -1

    wait_for(lambda: controller_of(NODES) in NODES, 30, "an active controller")
    active = controller_of(NODES)
    nemesis = Nemesis(Recorder({"test": "controller partition"}), topology, target, topic="partition-probe")
    plan = Planned(id=1, fault="partition-controller", start_s=0.0, duration_s=0.0, pick=0)
    nemesis.start(plan)
    state = nemesis.active[plan.id]
    assert "error" not in state, state
    [cut] = state["nodes"]
    assert cut == active, f"the nemesis isolated {cut}, the active controller was {active}"
    majority = [n for n in NODES if n != cut]
    cut_at = time.monotonic()
    try:
        with _direct(topology, cut) as client:
            before = _quorum(client)
            started = time.monotonic()
            answer = _create(client, "minority-topic", 1_000)
            took = time.monotonic() - started
            after = _quorum(client)
            _, shown = _metadata(client)
        print(
            f"controller {cut} cut off: CreateTopics {answer} after {took:.2f}s; its quorum view before "
            f"(error {before.error_code.name}, epoch {before.leader_epoch}, HW {before.high_watermark}) "
            f"after (error {after.error_code.name}, epoch {after.leader_epoch}, HW {after.high_watermark})"
        )
        assert answer in ("request_timed_out", "not_controller"), answer
        assert "minority-topic" not in shown, f"the cut-off controller {cut} shows an uncommitted topic"
        if before.error_code.name == "none" and after.error_code.name == "none":
            # still leading the same epoch: the creation is in its log, past a high watermark that
            # no voter can move
            assert int(after.leader_epoch) == int(before.leader_epoch)
            print(f"its log end went {_log_end(before, cut)} -> {_log_end(after, cut)}, its HW stayed")
            assert int(after.high_watermark) <= _log_end(before, cut) < _log_end(after, cut), (before, after)

        elected = wait_for(
            lambda: controller_of(majority) in majority, 30, "the majority elects a controller of its own"
        )
        leader = controller_of(majority)
        since_cut = time.monotonic() - cut_at
        print(f"the majority elected {leader}: {since_cut:.2f}s after the cut (waited {elected:.2f}s)")
        with _proxied(topology, leader) as client:
            assert _create_at_controller(client, "majority-topic") == "none"
        with _direct(topology, cut) as client:
            _, shown = _metadata(client)
        assert "majority-topic" not in shown, f"node {cut} learnt a commit through a black-holed link"
    finally:
        nemesis.heal()

    def follows_the_majority() -> bool:
        with _direct(topology, cut) as client:
            controller, shown = _metadata(client)
        return controller in majority and "majority-topic" in shown

    healed = wait_for(follows_the_majority, 30, f"{cut} follows the majority after the heal")
    print(f"after the heal {cut} followed the majority in {healed:.2f}s")
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:  # the uncommitted creation must never show up anywhere
        for node in NODES:
            with _direct(topology, node) as client:
                _, shown = _metadata(client)
            assert "minority-topic" not in shown, f"node {node} shows the minority's uncommitted topic"
        time.sleep(0.5)
    with _direct(topology, controller_of(NODES)) as client:
        quorum = _quorum(client)
    ends = {int(v.replica_id): int(v.log_end_offset) for v in quorum.current_voters}
    print(f"quorum after the heal: leader {quorum.leader_id}, HW {quorum.high_watermark}, log ends {ends}")
    assert set(ends) == set(NODES)
    leader = int(quorum.leader_id)
    with _proxied(topology, leader) as client:  # the admin client's retry, at the controller named now
        assert _create(client, "minority-topic", 10_000) == "none"

    def everywhere() -> bool:
        for node in NODES:
            with _direct(topology, node) as client:
                if "minority-topic" not in _metadata(client)[1]:
                    return False
        return True

    wait_for(everywhere, 30, "the retried creation on every node")
