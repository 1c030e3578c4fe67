"""The metadata quorum's own APIs on a controller listener, at every version Kafka 4 serves: Vote
(52) v0-2, BeginQuorumEpoch (53) v0-1, EndQuorumEpoch (54) v0-1, FetchSnapshot (59) v0-1 and
BrokerRegistration (62) v0-4 (issue 20).

Kafka's rules: ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java`` (a cluster id that
is not the quorum's is INCONSISTENT_CLUSTER_ID; ``handleVoteRequest`` refuses a last epoch not below
the candidate's epoch, INVALID_REQUEST; an epoch below the replica's is FENCED_LEADER_EPOCH; a
PreVote, Vote v2's KIP-996 flag, changes no state: a leader, or a follower that hears its leader,
does not grant it; v1+ answers name the leader's endpoint, KIP-853's NodeEndpoints) and
``metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java``
``registerBroker`` (INCONSISTENT_CLUSTER_ID; a ZooKeeper-migrating broker is
BROKER_ID_NOT_REGISTERED; without log directories, or with a reserved one, INVALID_REGISTRATION).

These APIs are served on the controller listener only (``test_controller_listener.py`` checks a
client listener refuses them), so the cases need a target whose controller listener address the
harness knows: a reference cluster launched here (``--brokers 3``). On other targets they skip with
that reason. No case changes the quorum or registers a broker: every request is one the target
must refuse, or a PreVote.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fixtures.targets import Target
from fixtures.wire import WireClient

from .expect import expect, expect_code

FEATURE = "Quorum APIs on the controller listener"
RAFT = "KafkaRaftClient.java"
REGISTER = "ClusterControlManager.registerBroker"
METADATA = "__cluster_metadata"
KAFKA_4 = {52: (0, 2), 53: (0, 1), 54: (0, 1), 59: (0, 1), 62: (0, 4)}
"""The versions Kafka 4's controller listener serves (kio 0.6.5's schemas, Kafka's *Request.json)."""
STRANGER = 987_654
"""A broker id no node of the target has."""


def _cases(api_key: int) -> list[int]:
    low, high = KAFKA_4[api_key]
    return list(range(low, high + 1))


class Quorum:
    """Connections to the controller listeners of a target's voters, and what it says of itself."""

    def __init__(self, target: Target, wire_factory: Callable[..., WireClient], client: WireClient) -> None:
        voters = [n for n in target.nodes if n.controller_port is not None]
        if not voters:
            pytest.skip(
                "the target has no controller listener address the harness knows (a single broker, or a "
                "target not launched here): these APIs are served only on a controller listener"
            )
        self.cluster_id = str(client.request("metadata", 12, topics=[]).cluster_id)
        described = client.request(
            "describe_quorum", 0, topics=[{"topic_name": METADATA, "partitions": [{"partition_index": 0}]}]
        )
        partition = described.topics[0].partitions[0]
        self.leader, self.epoch = int(partition.leader_id), int(partition.leader_epoch)
        self._wires = {
            int(n.node_id): wire_factory(f"{n.host}:{n.controller_port}", timeout_s=15) for n in voters
        }
        self.voters = sorted(self._wires)

    def wire(self, node_id: int | None = None) -> WireClient:
        """The controller listener of ``node_id`` (default: the quorum's leader)."""
        return self._wires[self.leader if node_id is None else node_id]

    def advertised(self, api_key: int) -> tuple[int, int] | None:
        answer = self.wire().request(
            "api_versions", 3, client_software_name="kh", client_software_version="1"
        )
        for key in answer.api_keys:
            if int(key.api_key) == api_key:
                return int(key.min_version), int(key.max_version)
        return None

    def require(self, api_key: int, version: int) -> None:
        served = self.advertised(api_key)
        if served is None or not served[0] <= version <= served[1]:
            pytest.skip(f"the controller listener does not advertise API {api_key} v{version} ({served})")


@pytest.fixture
def quorum(target: Target, wire_factory: Callable[..., WireClient], wire: WireClient) -> Iterator[Quorum]:
    yield Quorum(target, wire_factory, wire)


def _partition(answer: Any) -> Any:
    [topic] = answer.topics
    [partition] = topic.partitions
    return partition


def _leader_endpoints(answer: Any, version: int, leader: int, quorum: Quorum) -> None:
    """KIP-853: an answer v1+ that names a leader gives that leader's endpoint."""
    if version < 1 or leader < 0:
        return
    named = {int(e.node_id) for e in answer.node_endpoints}
    expect(
        leader in named, RAFT, f"v{version}: the answer names leader {leader} but gives endpoints for {named}"
    )


@pytest.mark.parametrize("api_key", sorted(KAFKA_4), ids=lambda k: f"k{k}")
def test_the_controller_listener_serves_kafka_4s_versions(api_key: int, quorum: Quorum) -> None:
    served = quorum.advertised(api_key)
    expect(
        served is not None, "ApiVersionManager", f"API {api_key} is not advertised on the controller listener"
    )
    assert served is not None
    expect(
        served[0] <= KAFKA_4[api_key][0] and served[1] >= KAFKA_4[api_key][1],
        "ApiVersionManager",
        f"API {api_key}: v{served[0]}-{served[1]}, Kafka 4 serves v{'-'.join(map(str, KAFKA_4[api_key]))}",
    )


@pytest.mark.parametrize("version", _cases(52), ids=lambda v: f"v{v}")
def test_vote_refusals(version: int, quorum: Quorum) -> None:
    quorum.require(52, version)
    wire = quorum.wire()

    def vote(cluster_id: str | None, epoch: int, last_epoch: int) -> Any:
        part = {"partition_index": 0, "replica_epoch": epoch, "replica_id": STRANGER,
                "last_offset_epoch": last_epoch, "last_offset": 0}  # fmt: skip
        return wire.request("vote", version, cluster_id=cluster_id,
                            topics=[{"topic_name": METADATA, "partitions": [part]}])  # fmt: skip

    where = f"Vote v{version}"
    expect_code(vote("not-" + quorum.cluster_id, quorum.epoch + 1, 0).error_code, "INCONSISTENT_CLUSTER_ID",
                rule=RAFT, where=where)  # fmt: skip
    answer = vote(quorum.cluster_id, quorum.epoch + 1, quorum.epoch + 1)
    expect_code(answer.error_code, "NONE", rule=RAFT, where=where)
    expect_code(
        _partition(answer).error_code, "INVALID_REQUEST", rule=RAFT, where=f"{where}, last epoch not below"
    )


@pytest.mark.parametrize("version", [2], ids=lambda v: f"v{v}")
def test_a_pre_vote_is_refused_by_a_healthy_quorum_and_changes_no_epoch(version: int, quorum: Quorum) -> None:
    """KIP-996: a PreVote from a voter whose log is behind, naming the quorum's epoch as a prospective
    does (Kafka 4's ``ProspectiveState`` asks in its own epoch; only the Vote that follows names the
    next one), to every voter: none grants it (a follower hears its leader, a leader never grants),
    and the quorum keeps its leader and epoch. A PreVote naming a later epoch is not this case's:
    Kafka 4's ``handleVoteRequest`` moves a voter to any later epoch it is told of."""
    quorum.require(52, version)
    candidate = next((v for v in quorum.voters if v != quorum.leader), None)
    if candidate is None:
        pytest.skip("the quorum has one voter: no other voter to ask")
    for node in quorum.voters:
        if node == candidate:
            continue
        part = {"partition_index": 0, "replica_epoch": quorum.epoch, "replica_id": candidate,
                "last_offset_epoch": 0, "last_offset": 0, "pre_vote": True}  # fmt: skip
        answer = quorum.wire(node).request(
            "vote",
            version,
            cluster_id=quorum.cluster_id,
            topics=[{"topic_name": METADATA, "partitions": [part]}],
        )
        p = _partition(answer)
        where = f"PreVote to voter {node}"
        expect_code(answer.error_code, "NONE", rule=RAFT, where=where)
        expect_code(p.error_code, "NONE", rule=RAFT, where=where)
        expect(not p.vote_granted, RAFT, f"{where}: granted by a healthy quorum")
        expect(
            int(p.leader_epoch) == quorum.epoch, RAFT, f"{where}: epoch {p.leader_epoch}, was {quorum.epoch}"
        )
        _leader_endpoints(answer, version, int(p.leader_id), quorum)
        print(f"{where}: granted={p.vote_granted} leader={p.leader_id} epoch={p.leader_epoch}")


@pytest.mark.parametrize("version", _cases(53), ids=lambda v: f"v{v}")
def test_begin_quorum_epoch_of_an_older_epoch_is_fenced(version: int, quorum: Quorum) -> None:
    quorum.require(53, version)
    follower = next((v for v in quorum.voters if v != quorum.leader), quorum.leader)
    part = {"partition_index": 0, "leader_id": quorum.leader, "leader_epoch": quorum.epoch - 1}
    topics = [{"topic_name": METADATA, "partitions": [part]}]
    wire = quorum.wire(follower)
    where = f"BeginQuorumEpoch v{version}"
    wrong = wire.request("begin_quorum_epoch", version, cluster_id="not-" + quorum.cluster_id, topics=topics)
    expect_code(wrong.error_code, "INCONSISTENT_CLUSTER_ID", rule=RAFT, where=where)
    answer = wire.request("begin_quorum_epoch", version, cluster_id=quorum.cluster_id, topics=topics)
    p = _partition(answer)
    expect_code(p.error_code, "FENCED_LEADER_EPOCH", rule=RAFT, where=f"{where}, epoch {quorum.epoch - 1}")
    expect(int(p.leader_epoch) == quorum.epoch, RAFT, f"{where}: answered epoch {p.leader_epoch}")
    _leader_endpoints(answer, version, int(p.leader_id), quorum)


@pytest.mark.parametrize("version", _cases(54), ids=lambda v: f"v{v}")
def test_end_quorum_epoch_of_an_older_epoch_is_fenced(version: int, quorum: Quorum) -> None:
    quorum.require(54, version)
    follower = next((v for v in quorum.voters if v != quorum.leader), quorum.leader)
    part: dict[str, Any] = {
        "partition_index": 0,
        "leader_id": quorum.leader,
        "leader_epoch": quorum.epoch - 1,
    }
    if version >= 1:
        part["preferred_candidates"] = [{"candidate_id": follower, "candidate_directory_id": uuid.uuid4()}]
    else:
        part["preferred_successors"] = [follower]
    topics = [{"topic_name": METADATA, "partitions": [part]}]
    wire = quorum.wire(follower)
    where = f"EndQuorumEpoch v{version}"
    wrong = wire.request("end_quorum_epoch", version, cluster_id="not-" + quorum.cluster_id, topics=topics)
    expect_code(wrong.error_code, "INCONSISTENT_CLUSTER_ID", rule=RAFT, where=where)
    answer = wire.request("end_quorum_epoch", version, cluster_id=quorum.cluster_id, topics=topics)
    p = _partition(answer)
    expect_code(p.error_code, "FENCED_LEADER_EPOCH", rule=RAFT, where=f"{where}, epoch {quorum.epoch - 1}")
    _leader_endpoints(answer, version, int(p.leader_id), quorum)


@pytest.mark.parametrize("version", _cases(59), ids=lambda v: f"v{v}")
def test_fetch_snapshot_of_an_older_epoch_is_fenced(version: int, quorum: Quorum) -> None:
    quorum.require(59, version)
    part: dict[str, Any] = {"partition": 0, "current_leader_epoch": quorum.epoch - 1,
                            "snapshot_id": {"end_offset": 1, "epoch": 0}, "position": 0}  # fmt: skip
    if version >= 1:
        part["replica_directory_id"] = uuid.uuid4()
    topics = [{"name": METADATA, "partitions": [part]}]
    wire = quorum.wire()
    where = f"FetchSnapshot v{version}"
    other = "not-" + quorum.cluster_id
    wrong = wire.request("fetch_snapshot", version, cluster_id=other, replica_id=STRANGER, max_bytes=1024,
                         topics=topics)  # fmt: skip
    expect_code(wrong.error_code, "INCONSISTENT_CLUSTER_ID", rule=RAFT, where=where)
    answer = wire.request("fetch_snapshot", version, cluster_id=quorum.cluster_id, replica_id=STRANGER,
                          max_bytes=1024, topics=topics)  # fmt: skip
    expect_code(answer.error_code, "NONE", rule=RAFT, where=where)
    [topic] = answer.topics
    [p] = topic.partitions
    expect_code(p.error_code, "FENCED_LEADER_EPOCH", rule=RAFT, where=f"{where}, epoch {quorum.epoch - 1}")
    _leader_endpoints(answer, version, int(p.current_leader.leader_id), quorum)


@pytest.mark.parametrize("version", _cases(62), ids=lambda v: f"v{v}")
def test_broker_registration_refusals(version: int, quorum: Quorum) -> None:
    """At the active controller: another cluster's id, then (v1+) a ZooKeeper broker, then (v2+) a
    registration with a reserved log directory or none, and one naming no features (the finalized
    metadata.version is not the minimum KRaft level it is then taken to support). (Kafka 4 refuses
    v0/v1 too, having no LogDirs; the reference accepts them, docs/APIVERSIONS.md, so no valid v0/v1
    one is sent.)"""
    quorum.require(62, version)
    wire = quorum.wire()
    listener = [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 1, "security_protocol": 0}]
    base: dict[str, Any] = {"broker_id": STRANGER, "incarnation_id": uuid.uuid4(), "listeners": listener,
                            "rack": None}  # fmt: skip

    def register(**fields: Any) -> str:
        answer = wire.request(
            "broker_registration", version, {**base, "cluster_id": quorum.cluster_id, **fields}
        )
        return str(answer.error_code.name).upper()

    where = f"BrokerRegistration v{version}"
    expect_code(register(cluster_id="not-" + quorum.cluster_id), "INCONSISTENT_CLUSTER_ID", rule=REGISTER,
                where=where)  # fmt: skip
    if version >= 1:
        expect_code(register(is_migrating_zk_broker=True), "BROKER_ID_NOT_REGISTERED", rule=REGISTER,
                    where=f"{where}, a ZooKeeper broker")  # fmt: skip
    if version >= 2:
        reserved = uuid.UUID(int=1)  # DirectoryId.UNASSIGNED
        expect_code(register(log_dirs=[reserved]), "INVALID_REGISTRATION", rule=REGISTER,
                    where=f"{where}, a reserved directory")  # fmt: skip
        expect_code(register(log_dirs=[]), "INVALID_REGISTRATION", rule=REGISTER,
                    where=f"{where}, no log directories")  # fmt: skip
        expect_code(register(log_dirs=[uuid.uuid4()], features=[]), "UNSUPPORTED_VERSION", rule=REGISTER,
                    where=f"{where}, no features (metadata.version taken as 3.0-IV1 alone)")  # fmt: skip
