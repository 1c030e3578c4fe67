"""Issue 17, item 8: the metadata quorum answers on the controller listener only, and checks what
it is sent, on a 3-node combined reference cluster (``fixtures.targets.launch("reference",
brokers=3)``: each node a PLAINTEXT listener and a CONTROLLER listener).

Kafka's rules:

* which listener serves an API: the ``"listeners"`` field of
  ``clients/src/main/resources/common/message/*Request.json`` (Vote, BeginQuorumEpoch,
  EndQuorumEpoch, FetchSnapshot, BrokerRegistration, BrokerHeartbeat, AlterPartition and
  AllocateProducerIds name ``controller`` and not ``broker``); a request for an API the listener
  does not enable closes the connection (``core/src/main/scala/kafka/network/SocketServer.scala``,
  ``parseRequestHeader``; ``core/src/main/scala/kafka/server/ApiVersionManager.scala``,
  ``isApiEnabled``), and ApiVersions lists only the enabled APIs;
* what a Vote must satisfy: ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java``
  (``handleVoteRequest``, ``validateVoterOnlyRequest``); this broker also refuses the epoch
  2^31-1, after which no election could follow, and a replica that hears from its live leader
  refuses a later-epoch Vote without adopting the epoch (Raft's disruptive-server rule, which
  Kafka 4 applies to pre-votes, KIP-996);
* what a BrokerRegistration must satisfy:
  ``metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java``
  (``registerBroker``: INCONSISTENT_CLUSTER_ID, DUPLICATE_BROKER_REGISTRATION while the id's
  session is live). A registration of a new id with this cluster's id is accepted on the
  controller listener, as Kafka accepts it; issue 18's authorization closes that.

The issue's attacks, replayed: one Vote v0 with ``candidate_epoch`` 2^31-1 to each node, a Vote
flood, a fake broker 99. Each test fails with the seeded defect ``quorum-on-client-listener``
(``broker_configs=["reference.defects=quorum-on-client-listener"]``). Figures are printed.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.controller_apis import CONTROLLER_ONLY_APIS, controller_request
from fixtures.targets import Target, launch
from fixtures.targets.cluster_launcher import metadata_view
from fixtures.wire import WireClient, WireError, build_request

from .workload import CLUSTER_CONFIGS, wait_for

pytestmark = [pytest.mark.slow]

NODES = [1, 2, 3]
METADATA = "__cluster_metadata"
MAX_EPOCH = 2**31 - 1
FLOOD_VOTES = 10_000
FLOOD_SECONDS = 10.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir = tmp_path_factory.mktemp("quorum-listener")
    with launch("reference", workdir=workdir, brokers=len(NODES), broker_configs=CLUSTER_CONFIGS) as target:
        yield target


def _client(target: Target, node: int) -> WireClient:
    return WireClient(f"127.0.0.1:{target.node(node).advertised_port}", timeout_s=20)


def _controller(target: Target, node: int) -> WireClient:
    port = target.node(node).controller_port
    assert port is not None, f"node {node} has no controller listener"
    return WireClient(f"127.0.0.1:{port}", timeout_s=20)


def _quorum(target: Target, node: int = 1) -> tuple[int, int]:
    """(leader, epoch) of the metadata quorum, as DescribeQuorum on a client listener tells it."""
    topics = [{"topic_name": METADATA, "partitions": [{"partition_index": 0}]}]
    with _client(target, node) as client:
        partition = client.request(55, 1, topics=topics).topics[0].partitions[0]
    return int(partition.leader_id), int(partition.leader_epoch)


def _vote(epoch: int, candidate: int, last_epoch: int, cluster_id: str | None = None) -> Any:
    partition = {
        "partition_index": 0,
        "replica_epoch": epoch,
        "replica_id": candidate,
        "last_offset_epoch": last_epoch,
        "last_offset": 1 << 40,  # a log far ahead of everyone's: "up to date"
    }
    return build_request(
        52, 0, {"cluster_id": cluster_id, "topics": [{"topic_name": METADATA, "partitions": [partition]}]}
    )


def _closed_on(client: WireClient, request: Any) -> bool:
    try:
        client.send(request, timeout_s=10)
    except WireError:
        return True
    return False


def test_the_client_listener_neither_advertises_nor_serves_the_quorum(cluster: Target) -> None:
    """ApiVersions on a client listener lists none of the controller's APIs, each of them sent there
    closes the connection, the metadata log cannot be fetched there (UNKNOWN_TOPIC_ID: no broker
    hosts it as a topic, KIP-516), and the cluster keeps its leader and serves."""
    leader, epoch = _quorum(cluster)
    for node in NODES:
        with _client(cluster, node) as client:
            advertised = set(client.api_versions())
        with _controller(cluster, node) as controller:
            on_controller = set(controller.api_versions())
        assert not advertised & set(CONTROLLER_ONLY_APIS), (
            f"node {node} advertises {advertised & set(CONTROLLER_ONLY_APIS)}"
        )
        assert set(CONTROLLER_ONLY_APIS) <= on_controller, f"node {node}'s controller listener lacks some"
        for api_key, name in CONTROLLER_ONLY_APIS.items():
            with _client(cluster, node) as client:
                assert _closed_on(client, controller_request(api_key)), (
                    f"{name} was answered on node {node}'s client listener"
                )
    partition = {
        "partition": 0,
        "current_leader_epoch": epoch,
        "fetch_offset": 0,
        "partition_max_bytes": 1 << 20,
    }
    fetch: dict[str, object] = {
        "replica_id": 3, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "session_epoch": -1,
        "topics": [{"topic_id": uuid.UUID(int=1), "partitions": [partition]}],
    }
    with _client(cluster, leader) as client:
        [answer] = client.request(1, 13, fetch).responses[0].partitions
    assert answer.error_code.name == "unknown_topic_id" and not answer.records, answer
    assert _quorum(cluster) == (leader, epoch)
    topic = {
        "name": "after-probes",
        "num_partitions": 3,
        "replication_factor": 3,
        "assignments": [],
        "configs": [],
    }
    with _client(cluster, 1) as client:
        [created] = client.request(19, 7, topics=[topic], timeout=30_000, validate_only=False).topics
        assert created.error_code.name == "none", created

        def led() -> bool:
            metadata = client.request(
                3, 12, topics=[{"name": "after-probes"}], allow_auto_topic_creation=False
            )
            return all(int(p.leader_id) in NODES for p in metadata.topics[0].partitions)

        wait_for(led, 30, "leaders for the topic created after the probes")


def _monitor(target: Target, stop: threading.Event, seen: list[tuple[float, int, int]]) -> None:
    """Poll who leads the quorum (from node 1's client listener) until ``stop``; bounded by it."""
    while not stop.is_set():
        try:
            leader, epoch = _quorum(target)
        except (OSError, WireError):
            leader, epoch = -1, -1
        seen.append((time.monotonic(), leader, epoch))
        time.sleep(0.05)


def test_a_vote_flood_does_not_unseat_a_healthy_leader(cluster: Target) -> None:
    """Votes naming live voters as candidates for ever later epochs, up to date, sent to every node's
    controller listener as fast as they are answered (bounded in count and time): the followers
    hear from their leader and the leader sees the named candidates fetching, so none is granted
    and the quorum keeps its leader and its epoch throughout."""
    leader, epoch = _quorum(cluster)
    stop = threading.Event()
    seen: list[tuple[float, int, int]] = []
    watcher = threading.Thread(target=_monitor, args=(cluster, stop, seen), daemon=True)
    watcher.start()
    granted = refused = sent = 0
    started = time.monotonic()
    connections = {node: _controller(cluster, node) for node in NODES}
    try:
        while sent < FLOOD_VOTES and time.monotonic() - started < FLOOD_SECONDS:
            node = NODES[sent % len(NODES)]
            others = [n for n in NODES if n != node]  # live voters, fetching from (or being) the leader
            candidate = others[(sent // len(NODES)) % len(others)]
            answer = connections[node].send(_vote(epoch + 1 + sent, candidate, epoch))
            part = answer.topics[0].partitions[0] if answer.topics else None
            if part is not None and part.vote_granted:
                granted += 1
            else:
                refused += 1
            sent += 1
    finally:
        flood_s = time.monotonic() - started
        time.sleep(1.0)
        stop.set()
        watcher.join(10)
        for connection in connections.values():
            connection.close()
    changes = sum(1 for a, b in itertools.pairwise(seen) if (a[1], a[2]) != (b[1], b[2]))
    leaderless = _longest_leaderless(seen)
    print(
        f"vote flood: {sent} votes in {flood_s:.1f}s ({sent / flood_s:.0f}/s) to 3 controller listeners, "
        f"{granted} granted, {refused} refused; quorum polled {len(seen)} times: {changes} leader/epoch "
        f"changes, longest leaderless {leaderless * 1000:.0f} ms; leader {leader} epoch {epoch} -> "
        f"{seen[-1][1]} epoch {seen[-1][2]}"
    )
    assert granted == 0, f"{granted} forged votes were granted"
    assert {(s[1], s[2]) for s in seen} == {(leader, epoch)}, "the flood moved the quorum"


def _longest_leaderless(seen: list[tuple[float, int, int]]) -> float:
    longest, since = 0.0, None
    for at, leader, _epoch in seen:
        if leader < 0:
            since = at if since is None else since
            longest = max(longest, at - since)
        else:
            since = None
    return longest


def test_a_fake_broker_cannot_register(cluster: Target) -> None:
    """BrokerRegistration for a broker 99 at a routable address: the client listener closes the
    connection; on the active controller's listener a registration for another cluster id, one
    naming no address, and one taking live broker 2's id from another process are refused; the
    cluster's brokers stay 1, 2, 3 at their own addresses and new partitions are led by them."""
    leader, _epoch = _quorum(cluster)
    with _client(cluster, 1) as client:
        cluster_id = str(client.request(3, 12, topics=[], allow_auto_topic_creation=False).cluster_id)
    address = [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 1, "security_protocol": 0}]

    def registration(broker_id: int, cluster: str, listeners: list[dict[str, Any]]) -> Any:
        body = {"broker_id": broker_id, "cluster_id": cluster, "incarnation_id": uuid.uuid4(), "rack": None}
        return build_request(62, 0, {**body, "listeners": listeners})

    with _client(cluster, leader) as client:
        assert _closed_on(client, registration(99, cluster_id, address)), "registered on a client listener"
    outcomes = {}
    with _controller(cluster, leader) as controller:
        for what, request in {
            "another cluster": registration(99, "not-" + cluster_id, address),
            "no address": registration(99, cluster_id, []),
            "live broker 2": registration(2, cluster_id, address),
        }.items():
            outcomes[what] = controller.send(request).error_code.name
    print(f"fake registrations on controller {leader}'s listener: {outcomes}")
    assert outcomes == {
        "another cluster": "inconsistent_cluster_id",
        "no address": "invalid_registration",
        "live broker 2": "duplicate_broker_registration",
    }
    ports = {n: cluster.node(n).advertised_port for n in NODES}
    with _client(cluster, 1) as client:
        metadata = client.request(3, 12, topics=None, allow_auto_topic_creation=False)
        assert {int(b.node_id): int(b.port) for b in metadata.brokers} == ports
        topic = {
            "name": "after-fakes",
            "num_partitions": 6,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
        }
        assert (
            client.request(19, 7, topics=[topic], timeout=30_000, validate_only=False)
            .topics[0]
            .error_code.name
            == "none"
        )

        def leaders() -> set[int]:
            answer = client.request(3, 12, topics=[{"name": "after-fakes"}], allow_auto_topic_creation=False)
            return {int(p.leader_id) for p in answer.topics[0].partitions}

        wait_for(lambda: leaders() <= set(NODES) and -1 not in leaders(), 30, "leaders for after-fakes")


def _stored_epoch(target: Target, node: int) -> int:
    command = target.node(node).command
    data_dir = Path(command[command.index("--data-dir") + 1])
    return int(json.loads((data_dir / "quorum-state").read_text())["leaderEpoch"])


def test_an_absurd_vote_epoch_is_refused_and_every_node_restarts(cluster: Target) -> None:
    """The issue's poison: one Vote v0 with ``candidate_epoch`` 2^31-1 to each node's controller
    listener. Each is refused (INVALID_REQUEST, not granted), the quorum keeps its leader, no
    quorum-state holds the epoch, and every node starts again afterwards."""
    leader, epoch = _quorum(cluster)
    answers = {}
    for node in NODES:
        candidate = NODES[node % len(NODES)]  # another voter
        with _controller(cluster, node) as controller:
            part = controller.send(_vote(MAX_EPOCH, candidate, 0)).topics[0].partitions[0]
        answers[node] = (part.error_code.name, bool(part.vote_granted), int(part.leader_epoch))
    print(f"Vote(candidate_epoch=2^31-1) answers per node: {answers}")
    assert all(a[:2] == ("invalid_request", False) for a in answers.values()), answers
    assert _quorum(cluster) == (leader, epoch)
    assert {n: _stored_epoch(cluster, n) for n in NODES} == dict.fromkeys(NODES, epoch)
    started = time.monotonic()
    for node in NODES:
        cluster.node(node).restart()
    agreed = wait_for(lambda: _agree(cluster), 90, "the restarted nodes to agree on a controller")
    after = _quorum(cluster)
    took = time.monotonic() - started
    print(
        f"restarted all 3 nodes: they agree {took:.1f}s later ({agreed:.1f}s after the last start); "
        f"quorum {after}"
    )
    assert 0 <= after[1] < MAX_EPOCH and after[0] in NODES


def _agree(target: Target) -> bool:
    views = {metadata_view(f"127.0.0.1:{target.node(n).advertised_port}") for n in NODES}
    if len(views) != 1:
        return False
    view = views.pop()
    return view is not None and view[0] in NODES and view[1] == tuple(NODES)
