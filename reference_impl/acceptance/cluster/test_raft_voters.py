"""AddRaftVoter (80), RemoveRaftVoter (81) and UpdateRaftVoter (82) on the controller listeners of a
3-node combined reference cluster, each version: the quorum leader answers Kafka's request checks,
then UNSUPPORTED_VERSION (a process cluster is formatted at kraft.version 0, static voters); another
voter answers NOT_LEADER_OR_FOLLOWER.

Kafka's rules: ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java``
``handleAddVoterRequest`` / ``handleRemoveVoterRequest`` / ``handleUpdateVoterRequest`` (cluster
id, ``validateLeaderOnlyRequest`` with UpdateRaftVoter's epoch, the voter's directory id, its
endpoint on the default controller listener, the kraft.version range) and ``internals/
AddVoterHandler.java`` (UNSUPPORTED_VERSION at kraft.version 0). The voters' own replies are what
``core/kraft/voter_admin.py`` serves; the simulator covers kraft.version 1 (``sim/raft/voter_fuzz.py``).
On kraft.version 1 clusters: a voter removed and added back, by hand and with ``kafka-harness cluster
remove-controller|add-controller``, and a new controller that joins through
``controller.quorum.bootstrap.servers`` (KIP-853, ``core/kraft/peer_addresses.py``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.targets import Target, launch
from fixtures.targets.cluster_launcher import ClusterPlan
from fixtures.wire.voters import add_raft_voter, remove_raft_voter, update_raft_voter
from kafka_harness import cluster_cli
from reference_impl.core.kraft.voter_admin import directory_id

from .test_controller_listener import NODES, _client, _controller, _quorum
from .workload import CLUSTER_CONFIGS, wait_for

pytestmark = [pytest.mark.slow]

LISTENERS = {"CONTROLLER": ("127.0.0.1", 1)}
STRANGER = 99


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir = tmp_path_factory.mktemp("raft-voters")
    with launch("reference", workdir=workdir, brokers=len(NODES), broker_configs=CLUSTER_CONFIGS) as target:
        yield target


def test_voter_apis_on_the_controller_listener(cluster: Target) -> None:
    wait_for(lambda: _quorum(cluster)[0] in NODES, 30.0, "a quorum leader")
    leader, epoch = _quorum(cluster)
    follower = next(n for n in NODES if n != leader)
    started = time.monotonic()
    with _controller(cluster, leader) as on_leader, _controller(cluster, follower) as on_follower:
        for v in (0, 1):
            stranger = add_raft_voter(on_leader, v, STRANGER, uuid.uuid4(), LISTENERS, timeout_ms=5_000)
            assert stranger.error == "UNSUPPORTED_VERSION", (v, stranger)
            wrong = add_raft_voter(on_leader, v, STRANGER, uuid.uuid4(), LISTENERS, cluster_id="another")
            assert wrong.error == "INCONSISTENT_CLUSTER_ID", (v, wrong)
            assert add_raft_voter(on_leader, v, STRANGER, None, LISTENERS).error == "INVALID_REQUEST"
            other = {"EXTERNAL": ("127.0.0.1", 1)}
            assert add_raft_voter(on_leader, v, STRANGER, uuid.uuid4(), other).error == "INVALID_REQUEST"
            refused = add_raft_voter(on_follower, v, STRANGER, uuid.uuid4(), LISTENERS)
            assert refused.error == "NOT_LEADER_OR_FOLLOWER", (v, refused)
        assert remove_raft_voter(on_leader, 0, follower, uuid.uuid4()).error == "UNSUPPORTED_VERSION"
        assert remove_raft_voter(on_leader, 0, follower, None).error == "INVALID_REQUEST"
        assert remove_raft_voter(on_follower, 0, follower, uuid.uuid4()).error == "NOT_LEADER_OR_FOLLOWER"
        key = (follower, uuid.uuid4())
        stale = update_raft_voter(on_leader, 0, *key, LISTENERS, current_leader_epoch=epoch - 1)
        assert stale.error == "FENCED_LEADER_EPOCH" and stale.leader == (leader, epoch), stale
        ahead = update_raft_voter(on_leader, 0, *key, LISTENERS, current_leader_epoch=epoch + 1)
        assert ahead.error == "UNKNOWN_LEADER_EPOCH", ahead
        upside_down = update_raft_voter(
            on_leader, 0, *key, LISTENERS, current_leader_epoch=epoch, kraft_versions=(1, 0)
        )
        assert upside_down.error == "INVALID_REQUEST", upside_down
        static = update_raft_voter(on_leader, 0, *key, LISTENERS, current_leader_epoch=epoch)
        assert static.error == "UNSUPPORTED_VERSION", static
    print(f"leader {leader} epoch {epoch}: 17 voter requests answered in {time.monotonic() - started:.2f} s")


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir = tmp_path_factory.mktemp("raft-voters-dynamic")
    configs = [*CLUSTER_CONFIGS, "reference.kraft.version=1"]
    with launch("reference", workdir=workdir, brokers=len(NODES), broker_configs=configs) as target:
        yield target


def _voters(target: Target, node: int) -> list[int]:
    topics = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    with _client(target, node) as client:
        partition = client.request(55, 1, topics=topics).topics[0].partitions[0]
    return sorted(int(v.replica_id) for v in partition.current_voters)


def test_a_kraft_version_1_cluster_removes_and_adds_a_voter(dynamic: Target) -> None:
    """reference.kraft.version=1: formatted with the initial controllers; a voter removed through a
    broker (forwarded to the leader) leaves the voters, and added back once it caught up as an
    observer; ApiVersions finalizes kraft.version 1."""
    wait_for(lambda: _quorum(dynamic)[0] in NODES, 30.0, "a quorum leader")
    leader, _epoch = _quorum(dynamic)
    target = next(n for n in NODES if n != leader)
    with _client(dynamic, leader) as client:
        cluster_id = str(client.request(3, 12, topics=[]).cluster_id)
        answer = client.request(18, 4, client_software_name="kh", client_software_version="1")
        finalized = {str(f.name): int(f.max_version_level) for f in answer.finalized_features}
        assert finalized.get("kraft.version") == 1, finalized
        key = directory_id(cluster_id, target)
        assert remove_raft_voter(client, 0, STRANGER, uuid.uuid4()).error == "VOTER_NOT_FOUND"
        started = time.monotonic()
        removed = remove_raft_voter(client, 0, target, key)
        assert removed.error == "NONE", removed
        took_remove = time.monotonic() - started
    wait_for(lambda: _voters(dynamic, leader) == sorted(set(NODES) - {target}), 10.0, "the voter removed")
    port = dynamic.node(target).controller_port
    assert port is not None
    with _client(dynamic, leader) as client:
        started = time.monotonic()
        added = add_raft_voter(client, 1, target, key, {"CONTROLLER": ("127.0.0.1", port)}, timeout_ms=10_000)
        assert added.error == "NONE", added
        took_add = time.monotonic() - started
    wait_for(lambda: _voters(dynamic, leader) == sorted(NODES), 10.0, "the voter added back")
    print(f"remove {took_remove * 1000:.0f} ms, add back {took_add * 1000:.0f} ms (committed)")


def test_the_cluster_command_removes_and_adds_a_controller(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kafka-harness cluster remove-controller|add-controller`` on a kraft.version 1 cluster: the
    voter's directory id from DescribeQuorum v2, RemoveRaftVoter and AddRaftVoter through a broker."""
    data = str(tmp_path / "cluster")
    assert (
        cluster_cli.main(
            ["up", "--brokers", "3", "--data-dir", data, "--config", "reference.kraft.version=1"]
        )
        == 0
    )
    try:
        assert cluster_cli.main(["remove-controller", "2", "--data-dir", data]) == 0
        assert cluster_cli.main(["remove-controller", "2", "--data-dir", data]) == 2, "no longer a voter"
        assert cluster_cli.main(["add-controller", "2", "--data-dir", data]) == 0
        assert cluster_cli.main(["add-controller", "2", "--data-dir", data]) == 1, "DUPLICATE_VOTER"
    finally:
        cluster_cli.main(["down", "--data-dir", data])
    out = capsys.readouterr().out
    assert "remove-controller 2: NONE" in out and "add-controller 2: DUPLICATE_VOTER" in out, out


def test_a_new_controller_joins_through_bootstrap_servers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kafka-harness cluster add-controller`` with no node: a new controller-only process started
    with ``controller.quorum.bootstrap.servers`` (no controller.quorum.voters) observes the metadata
    log, finding the leader through the bootstrap servers (KafkaRaftClient's ids -2, -3, ... and the
    Fetch answer's NodeEndpoints), and is added with AddRaftVoter; then removed again."""
    from fixtures.wire.voters import quorum_of

    data = str(tmp_path / "cluster")
    up = ["up", "--brokers", "3", "--data-dir", data, "--config", "reference.kraft.version=1"]
    assert cluster_cli.main(up) == 0
    try:
        started = time.monotonic()
        assert cluster_cli.main(["add-controller", "--data-dir", data]) == 0
        took = time.monotonic() - started
        brokers = [n.listen for n in ClusterPlan.load(data).nodes if n.broker]
        assert quorum_of(brokers).voter_ids == (1, 2, 3, 4)
        assert ClusterPlan.load(data).node(4).voter
        assert cluster_cli.main(["remove-controller", "4", "--data-dir", data]) == 0
        wait_for(lambda: quorum_of(brokers).voter_ids == (1, 2, 3), 10.0, "the new voter removed")
        wait_for(lambda: quorum_of(brokers).observer(4) is not None, 10.0, "node 4 observing again")
    finally:
        cluster_cli.main(["down", "--data-dir", data])
    out = capsys.readouterr().out
    assert "add-controller 4: NONE" in out and "remove-controller 4: NONE" in out, out
    print(f"new controller started, caught up and added in {took:.2f} s")
