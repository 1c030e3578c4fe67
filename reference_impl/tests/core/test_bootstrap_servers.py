"""``controller.quorum.bootstrap.servers`` (KIP-853) and where a KRaft node reaches its peers
(core/kraft/peer_addresses.py): Kafka's parsing (QuorumConfig.parseBootstrapServers), the bootstrap
servers' ids -2, -3, ... (KafkaRaftClient), a controller that is no voter yet, the voter set's
endpoints and the leader endpoints learnt from Fetch answers (NodeEndpoints, Fetch v16+), and the
raft Fetch on the wire at v17. A process cluster joining a new controller this way is in
reference_impl/acceptance/cluster/test_raft_voters.py."""

from __future__ import annotations

import dataclasses
import uuid
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kio.schema.errors import ErrorCode

from fixtures.targets.membership import added_controller_command, reference_directory_id
from reference_impl.core.configs.model import ConfigError
from reference_impl.core.kraft import voter_admin, wire
from reference_impl.core.kraft.peer_addresses import (
    PeerAddresses,
    bootstrap_only,
    bootstrap_voters,
    parse_bootstrap_servers,
)
from reference_impl.core.kraft.roles import CONTROLLER_ROLE, node_roles
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import FetchRequest, FetchResponse
from reference_impl.core.raft.voter_set import Endpoint, Voter, VoterSet


def test_bootstrap_servers_parse_as_kafka_reads_them() -> None:
    assert parse_bootstrap_servers("a:1, b:2,[::1]:3") == [("a", 1), ("b", 2), ("::1", 3)]
    assert parse_bootstrap_servers("") == []
    refused = (("a", "host name"), ("a:x", "host port"), (":9", "host name"), ("a:70000", "host port"))
    for bad, says in refused:
        with pytest.raises(ConfigError, match=says):
            parse_bootstrap_servers(bad)
    with pytest.raises(ConfigError, match="at most"):
        parse_bootstrap_servers(",".join(f"h:{p}" for p in range(1, 100)))
    voters = bootstrap_voters([("a", 1), ("b", 2)])
    assert voters == {-2: ("a", 1), -3: ("b", 2)} and bootstrap_only(voters)
    assert not bootstrap_only({1: ("a", 1)}) and not bootstrap_only({})


def test_a_controller_found_through_bootstrap_servers_need_not_be_a_voter() -> None:
    assert node_roles("controller", 7, bootstrap_voters([("a", 1)])) == {CONTROLLER_ROLE}
    with pytest.raises(ConfigError, match=r"not in controller\.quorum\.voters"):
        node_roles("controller", 7, {1: ("a", 1)})


def _raft(voters: VoterSet | None) -> RaftClient:
    """What PeerAddresses reads of the replica: its membership (voters from the log, or none)."""
    history = SimpleNamespace(latest_entry=None if voters is None else object())
    membership = SimpleNamespace(dynamic=True, history=history, voters=voters or VoterSet.of_ids([-2]))
    return cast(RaftClient, SimpleNamespace(membership=membership))


def test_peer_addresses_static_then_the_voter_set_then_learnt_leaders() -> None:
    static = bootstrap_voters([("boot", 9)])
    new = Voter(4, uuid.uuid4(), (Endpoint("OTHER", "x", 1), Endpoint("CONTROLLER", "c4", 94)))
    peers = PeerAddresses(static, _raft(None), "CONTROLLER")
    assert peers.get(-2) == ("boot", 9) and peers.get(1) is None
    assert peers.voter_ids() == frozenset() and dict(peers) == {}  # no log yet: no voter known
    peers.learn(SimpleNamespace(node_endpoints=[SimpleNamespace(node_id=1, host="leader", port=91)]))
    peers.learn(SimpleNamespace(node_endpoints=[SimpleNamespace(node_id=-5, host="bad", port=1)]))
    assert peers.get(1) == ("leader", 91) and peers.get(-5) is None
    assert peers.leader_endpoints(1) == [{"node_id": 1, "host": "leader", "port": 91, "rack": None}]
    assert peers.leader_endpoints(-1) == [] and peers.leader_endpoints(8) == []
    voters = VoterSet((Voter(1, uuid.uuid4(), (Endpoint("CONTROLLER", "c1", 91),)), new))
    peers = PeerAddresses({1: ("proxy", 11)}, _raft(voters), "CONTROLLER")
    assert peers.voter_ids() == {1, 4}
    assert dict(peers) == {1: ("proxy", 11), 4: ("c4", 94)}  # static first, then the voter set's listener
    assert 4 in peers and 2 not in peers and len(peers) == 2
    with pytest.raises(KeyError):
        peers[2]


def test_the_raft_fetch_travels_at_v17_with_the_leaders_endpoint() -> None:
    request = FetchRequest(
        correlation_id=1,
        replica_id=7,
        current_leader_epoch=3,
        fetch_offset=10,
        last_fetched_epoch=2,
        max_wait_ms=500,
        max_bytes=1024,
    )
    sent: Any = wire.request_to_wire(request, "cid")
    assert sent.replica_state.replica_id == 7
    source, parsed = wire.request_from_wire(1, sent, 9) or (None, None)
    assert source == 7 and parsed == dataclasses.replace(request, correlation_id=9)
    answer = FetchResponse(
        correlation_id=1,
        error_code=ErrorCode.not_leader_or_follower,
        leader_id=2,
        leader_epoch=3,
        high_watermark=-1,
        log_start_offset=-1,
        diverging_epoch=None,
        snapshot_id=None,
        records=b"",
    )
    endpoints = [{"node_id": 2, "host": "h", "port": 92, "rack": None}]
    kio: Any = wire.response_to_wire(1, wire.RAFT_FETCH_VERSION, answer, request, node_endpoints=endpoints)
    assert [(n.node_id, n.host, n.port) for n in kio.node_endpoints] == [(2, "h", 92)]
    back = wire.response_from_wire(request, kio)
    assert (back.leader_id, back.leader_epoch, back.error_code) == (2, 3, answer.error_code)


def test_the_harness_new_controller_command_and_directory_id(tmp_path: Any) -> None:
    """The harness builds a new controller's command and derives its directory id as the
    reference does (``voter_admin.directory_id``): the two must agree."""
    assert reference_directory_id("kh-x", 4) == voter_admin.directory_id("kh-x", 4)
    template = [
        "python", "-m", "kafka_harness", "broker", "--node-id", "1", "--listen", "h:1",
        "--advertised-listener", "h:1", "--data-dir", "/d/node-1", "--cluster-id", "kh-x",
        "--controller-quorum-voters", "1@h:11,2@h:12", "--config", "controller.listener.names=CONTROLLER",
        "--config", "listeners=CONTROLLER://h:11", "--config", "reference.kraft.version=1",
    ]  # fmt: skip
    command = added_controller_command(template, 4, "h", 14, tmp_path / "node-4", ["h:11", "h:12"])
    configs = [command[i + 1] for i, word in enumerate(command) if word == "--config"]
    assert "--controller-quorum-voters" not in command and "--listen" not in command
    assert command[command.index("--node-id") + 1] == "4" and "--cluster-id" in command
    assert "controller.quorum.bootstrap.servers=h:11,h:12" in configs
    assert "listeners=CONTROLLER://h:14" in configs and "process.roles=controller" in configs
    assert "listeners=CONTROLLER://h:11" not in configs and "reference.kraft.version=1" in configs
