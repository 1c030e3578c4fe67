"""Raft's requests and answers on the wire at Kafka 4's versions (core/kraft/raft_wire.py): Vote v2
(KIP-996 PreVote, KIP-853 voter keys), BeginQuorumEpoch v1, EndQuorumEpoch v1, FetchSnapshot v1.

Each dataclass goes out as the kio request, through the real encoder and the shape-checked decoder,
and back: every KIP-853/KIP-996 field survives. Answers carry the named leader's NodeEndpoints from
v1; a count read from the wire is bounded before a dataclass is built from it."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from reference_impl.core.kraft import raft_wire, wire
from reference_impl.core.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    VoteRequest,
    VoteResponse,
)
from reference_impl.protocol.apis import request_class, response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import decode_data, encode_body

CLUSTER = "raftwire-test"
D1, D2 = uuid.uuid4(), uuid.uuid4()
ADDRESSES = {1: ("127.0.0.1", 9093)}


def _through_the_wire(entity: Any) -> Any:
    return decode_data(type(entity), encode_body(entity))


END = EndQuorumEpochRequest(
    correlation_id=7,
    leader_id=2,
    leader_epoch=5,
    preferred_successors=(1, 3),
    successor_directory_ids=(D1, None),
)
REQUESTS: list[Any] = [
    VoteRequest(
        correlation_id=7, candidate_epoch=5, candidate_id=2, last_offset_epoch=4, last_offset=10,
        voter_directory_id=D1, voter_id=1, candidate_directory_id=D2, pre_vote=True,
    ),
    BeginQuorumEpochRequest(correlation_id=7, leader_id=2, leader_epoch=5, voter_id=1, voter_directory_id=D1),
    END,
    FetchSnapshotRequest(
        correlation_id=7, replica_id=3, current_leader_epoch=5, snapshot_id=OffsetAndEpoch(100, 4),
        position=4096, max_bytes=1024, replica_directory_id=D2,
    ),
]  # fmt: skip


@pytest.mark.parametrize("body", REQUESTS, ids=lambda b: type(b).__name__)
def test_a_raft_request_survives_the_wire_at_kafka_4s_version(body: Any) -> None:
    out: Any = wire.request_to_wire(body, CLUSTER, ("CONTROLLER", "127.0.0.1", 9095))
    api_key = int(type(out).__api_key__)
    assert int(type(out).__version__) == raft_wire.VERSIONS[api_key]
    back = wire.request_from_wire(api_key, _through_the_wire(out), correlation_id=7)
    assert back is not None
    source, parsed = back
    assert parsed == body
    sender = getattr(body, "candidate_id", getattr(body, "leader_id", getattr(body, "replica_id", -1)))
    assert source == sender
    if api_key in (53, 54):
        assert [(e.name, e.host, e.port) for e in out.leader_endpoints] == [("CONTROLLER", "127.0.0.1", 9095)]


def test_v0_requests_read_without_the_kip_853_fields() -> None:
    v0 = build(
        request_class(52, 0),
        {"cluster_id": CLUSTER, "topics": raft_wire._topic(
            {"replica_epoch": 3, "replica_id": 2, "last_offset_epoch": 1, "last_offset": 5})},
    )  # fmt: skip
    back = wire.request_from_wire(52, _through_the_wire(v0), correlation_id=1)
    assert back is not None
    vote = back[1]
    assert (vote.voter_id, vote.voter_directory_id, vote.pre_vote) == (-1, None, False)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_vote_answer_names_the_leaders_endpoint_from_v1(version: int) -> None:
    answer = VoteResponse(correlation_id=7, error_code=ErrorCode.none, leader_id=1, leader_epoch=5,
                          vote_granted=False)  # fmt: skip
    out = _through_the_wire(wire.response_to_wire(52, version, answer, REQUESTS[0], ADDRESSES))
    expected = [] if version == 0 else [(1, "127.0.0.1", 9093)]
    assert [(int(e.node_id), e.host, int(e.port)) for e in getattr(out, "node_endpoints", ())] == expected
    assert wire.response_from_wire(REQUESTS[0], out) == answer


def test_answers_of_begin_quorum_epoch_and_fetch_snapshot_round_trip() -> None:
    begin = BeginQuorumEpochResponse(correlation_id=7, error_code=ErrorCode.fenced_leader_epoch, leader_id=-1,
                                     leader_epoch=6)  # fmt: skip
    out = _through_the_wire(wire.response_to_wire(53, 1, begin, REQUESTS[1], ADDRESSES))
    assert tuple(out.node_endpoints) == ()  # no leader named, no endpoint
    assert wire.response_from_wire(REQUESTS[1], out) == begin
    snap = FetchSnapshotResponse(
        correlation_id=7, error_code=ErrorCode.none, leader_id=1, leader_epoch=5,
        snapshot_id=OffsetAndEpoch(100, 4), size=9000, position=4096, unaligned_records=b"abc",
    )  # fmt: skip
    out = _through_the_wire(wire.response_to_wire(59, 1, snap, REQUESTS[3], ADDRESSES))
    assert [int(e.node_id) for e in out.node_endpoints] == [1]
    assert wire.response_from_wire(REQUESTS[3], out) == snap


def test_end_quorum_epoch_candidates_from_the_wire_are_bounded() -> None:
    many = dataclasses.replace(END, preferred_successors=tuple(range(5000)), successor_directory_ids=())
    out = _through_the_wire(wire.request_to_wire(many, CLUSTER))
    back = wire.request_from_wire(54, out, correlation_id=7)
    assert back is not None
    assert back[1].preferred_successors == tuple(range(raft_wire.MAX_CANDIDATES))


def test_answers_of_other_apis_are_left_to_the_caller() -> None:
    """Only Raft's answers are built here: a controller's answer (BrokerRegistration's, say) goes
    through the controller's own wire form (a registration on a process cluster did, once, crash
    the controller that answered it)."""
    from reference_impl.core.controller import messages as cm

    answer = cm.BrokerRegistrationResponse(correlation_id=1, error_code=ErrorCode.none, broker_epoch=5)
    assert raft_wire.response_to_wire(response_class(62, 4), answer, ADDRESSES) is None
    assert int(wire.response_to_wire(62, 4, answer, None, ADDRESSES).broker_epoch) == 5


@pytest.mark.parametrize("directory", [None, D2])
def test_raft_fetch_goes_at_v17_with_the_replica_state_and_directory(directory: uuid.UUID | None) -> None:
    """KafkaRaftClient fetches at v17: the replica id in ReplicaState (v15+), its directory id (v17)."""
    body = FetchRequest(correlation_id=7, replica_id=3, current_leader_epoch=5, fetch_offset=10,
                        last_fetched_epoch=4, max_wait_ms=200, max_bytes=1024,
                        replica_directory_id=directory)  # fmt: skip
    out: Any = wire.request_to_wire(body, CLUSTER)
    assert int(type(out).__version__) == wire.RAFT_FETCH_VERSION == 17
    assert wire.request_from_wire(1, _through_the_wire(out), correlation_id=7) == (3, body)
