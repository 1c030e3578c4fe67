"""The Raft messages as Kafka wire entities and back: Vote (52) v0-2, BeginQuorumEpoch (53) v0-1,
EndQuorumEpoch (54) v0-1, FetchSnapshot (59) v0-1 (split out of :mod:`.wire`, which calls these).

Kafka's message definitions (``clients/src/main/resources/common/message/VoteRequest.json`` and
the others, as kio 0.6.5 generates them): v1 of each is KIP-853's (the receiving voter's id and
directory id, the candidate's directory id, EndQuorumEpoch's PreferredCandidates with directory
ids, FetchSnapshot's tagged ReplicaDirectoryId, the leader's endpoints in the requests a leader
sends and the NodeEndpoints of the leaders a response names); Vote v2 is KIP-996's PreVote. A
node sends the highest of these versions (every node of a reference cluster serves them) and
answers in the version it was asked. Counts read from the wire are bounded before anything is
built from them (:data:`MAX_CANDIDATES`); the frame's own bounds (``protocol/bounds.py``) come first.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload

from reference_impl.core.metadata.records import METADATA_TOPIC
from reference_impl.core.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    VoteRequest,
    VoteResponse,
)
from reference_impl.core.raft.voter_set import NO_DIRECTORY
from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build

VOTE, BEGIN_EPOCH, END_EPOCH, FETCH_SNAPSHOT = 52, 53, 54, 59
VERSIONS = {VOTE: 2, BEGIN_EPOCH: 1, END_EPOCH: 1, FETCH_SNAPSHOT: 1}
"""The version a node sends each Raft API at: Kafka 4's highest (KIP-853, KIP-996)."""
RAFT_RESPONSES = (VoteResponse, BeginQuorumEpochResponse, EndQuorumEpochResponse, FetchSnapshotResponse)
MAX_CANDIDATES = 64
"""EndQuorumEpoch's preferred successors read from the wire at most (a quorum has a few voters)."""
Endpoint = tuple[str, str, int]
"""(listener name, host, port) of a leader, as BeginQuorumEpoch/EndQuorumEpoch v1 carry it."""


def _topic(partition: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0, **partition}]}]


def _dir(directory: uuid.UUID | None) -> uuid.UUID:
    return NO_DIRECTORY if directory is None else directory


def _read_dir(partition: Any, name: str) -> uuid.UUID | None:
    """A directory id field (absent before v1; the zero UUID means none)."""
    value = getattr(partition, name, None)
    return None if value is None or value == NO_DIRECTORY else uuid.UUID(str(value))


def _leader_endpoints(endpoint: Endpoint | None) -> list[dict[str, Any]]:
    return [] if endpoint is None else [{"name": endpoint[0], "host": endpoint[1], "port": endpoint[2]}]


def request_to_wire(body: Any, cluster_id: str, endpoint: Endpoint | None = None) -> RequestPayload | None:
    """The kio request for a Raft request dataclass at :data:`VERSIONS`; None if not one of them."""
    match body:
        case VoteRequest():
            part: dict[str, Any] = {
                "replica_epoch": body.candidate_epoch,
                "replica_id": body.candidate_id,
                "replica_directory_id": _dir(body.candidate_directory_id),
                "voter_directory_id": _dir(body.voter_directory_id),
                "last_offset_epoch": body.last_offset_epoch,
                "last_offset": body.last_offset,
                "pre_vote": body.pre_vote,
            }
            top = {"cluster_id": cluster_id, "voter_id": body.voter_id, "topics": _topic(part)}
            return build(request_class(VOTE, VERSIONS[VOTE]), top)
        case BeginQuorumEpochRequest():
            part = {
                "voter_directory_id": _dir(body.voter_directory_id),
                "leader_id": body.leader_id,
                "leader_epoch": body.leader_epoch,
            }
            top = {
                "cluster_id": cluster_id,
                "voter_id": body.voter_id,
                "topics": _topic(part),
                "leader_endpoints": _leader_endpoints(endpoint),
            }
            return build(request_class(BEGIN_EPOCH, VERSIONS[BEGIN_EPOCH]), top)
        case EndQuorumEpochRequest():
            directories = body.successor_directory_ids or (None,) * len(body.preferred_successors)
            part = {
                "leader_id": body.leader_id,
                "leader_epoch": body.leader_epoch,
                "preferred_candidates": [
                    {"candidate_id": s, "candidate_directory_id": _dir(d)}
                    for s, d in zip(body.preferred_successors, directories, strict=False)
                ],
            }
            top = {
                "cluster_id": cluster_id,
                "topics": _topic(part),
                "leader_endpoints": _leader_endpoints(endpoint),
            }
            return build(request_class(END_EPOCH, VERSIONS[END_EPOCH]), top)
        case FetchSnapshotRequest():
            snap_part = {
                "partition": 0,
                "current_leader_epoch": body.current_leader_epoch,
                "snapshot_id": {"end_offset": body.snapshot_id.offset, "epoch": body.snapshot_id.epoch},
                "position": body.position,
                "replica_directory_id": _dir(body.replica_directory_id),
            }
            return build(
                request_class(FETCH_SNAPSHOT, VERSIONS[FETCH_SNAPSHOT]),
                {
                    "cluster_id": cluster_id,
                    "replica_id": body.replica_id,
                    "max_bytes": body.max_bytes,
                    "topics": [{"name": METADATA_TOPIC, "partitions": [snap_part]}],
                },
            )
    return None


def request_from_wire(api_key: int, p: Any, wire: Any, correlation_id: int) -> tuple[int, Any] | None:
    """(source id, dataclass) for an inbound Raft request whose one partition is ``p``."""
    match api_key:
        case 52:
            return int(p.replica_id), VoteRequest(
                correlation_id=correlation_id,
                candidate_epoch=int(p.replica_epoch),
                candidate_id=int(p.replica_id),
                last_offset_epoch=int(p.last_offset_epoch),
                last_offset=int(p.last_offset),
                voter_directory_id=_read_dir(p, "voter_directory_id"),
                voter_id=int(getattr(wire, "voter_id", -1)),
                candidate_directory_id=_read_dir(p, "replica_directory_id"),
                pre_vote=bool(getattr(p, "pre_vote", False)),
            )
        case 53:
            return int(p.leader_id), BeginQuorumEpochRequest(
                correlation_id=correlation_id,
                leader_id=int(p.leader_id),
                leader_epoch=int(p.leader_epoch),
                voter_id=int(getattr(wire, "voter_id", -1)),
                voter_directory_id=_read_dir(p, "voter_directory_id"),
            )
        case 54:
            if hasattr(p, "preferred_candidates"):  # v1
                chosen = tuple(p.preferred_candidates)[:MAX_CANDIDATES]
                successors = tuple(int(c.candidate_id) for c in chosen)
                directories = tuple(_read_dir(c, "candidate_directory_id") for c in chosen)
            else:
                successors = tuple(int(s) for s in tuple(p.preferred_successors)[:MAX_CANDIDATES])
                directories = ()
            return int(p.leader_id), EndQuorumEpochRequest(
                correlation_id=correlation_id,
                leader_id=int(p.leader_id),
                leader_epoch=int(p.leader_epoch),
                preferred_successors=successors,
                successor_directory_ids=directories,
            )
        case 59:
            return int(wire.replica_id), FetchSnapshotRequest(
                correlation_id=correlation_id,
                replica_id=int(wire.replica_id),
                current_leader_epoch=int(p.current_leader_epoch),
                snapshot_id=OffsetAndEpoch(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch)),
                position=int(p.position),
                max_bytes=int(wire.max_bytes),
                replica_directory_id=_read_dir(p, "replica_directory_id"),
            )
    return None


def response_from_wire(request: Any, p: Any, wire: Any) -> Any:
    """The dataclass answer to a Raft ``request`` from its kio response (``p``: its one partition,
    None when it names none); None if ``request`` is not one of these."""
    cid = request.correlation_id
    match request:
        case VoteRequest():
            if p is None:
                return VoteResponse(
                    correlation_id=cid, error_code=wire.error_code, leader_id=-1, leader_epoch=-1,
                    vote_granted=False,
                )  # fmt: skip
            return VoteResponse(
                correlation_id=cid,
                error_code=p.error_code if wire.error_code == ErrorCode.none else wire.error_code,
                leader_id=int(p.leader_id),
                leader_epoch=int(p.leader_epoch),
                vote_granted=bool(p.vote_granted),
            )
        case BeginQuorumEpochRequest() | EndQuorumEpochRequest():
            cls: Any = (
                BeginQuorumEpochResponse
                if isinstance(request, BeginQuorumEpochRequest)
                else EndQuorumEpochResponse
            )
            if p is None:
                return cls(correlation_id=cid, error_code=wire.error_code, leader_id=-1, leader_epoch=-1)
            return cls(
                correlation_id=cid,
                error_code=p.error_code if wire.error_code == ErrorCode.none else wire.error_code,
                leader_id=int(p.leader_id),
                leader_epoch=int(p.leader_epoch),
            )
        case FetchSnapshotRequest():
            if p is None:
                return FetchSnapshotResponse(
                    correlation_id=cid, error_code=wire.error_code, leader_id=-1, leader_epoch=-1,
                    snapshot_id=request.snapshot_id, size=0, position=0, unaligned_records=b"",
                )  # fmt: skip
            return FetchSnapshotResponse(
                correlation_id=cid,
                error_code=p.error_code,
                leader_id=int(p.current_leader.leader_id),
                leader_epoch=int(p.current_leader.leader_epoch),
                snapshot_id=OffsetAndEpoch(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch)),
                size=int(p.size),
                position=int(p.position),
                unaligned_records=bytes(p.unaligned_records or b""),
            )
    return None


def node_endpoints(leader_id: int, addresses: Mapping[int, tuple[str, int]]) -> list[dict[str, Any]]:
    """NodeEndpoints (v1+ responses, tagged): the named leader's address when this node knows it."""
    address = addresses.get(leader_id)
    if leader_id < 0 or address is None:
        return []
    return [{"node_id": leader_id, "host": address[0], "port": address[1]}]


def response_to_wire(cls: Any, body: Any, addresses: Mapping[int, tuple[str, int]]) -> Any:
    """The kio response ``cls`` (the asked version) for a Raft answer; None if not one of them.
    ``addresses``: the voters' controller endpoints, for v1+'s NodeEndpoints."""
    if not isinstance(body, RAFT_RESPONSES):
        return None
    endpoints = node_endpoints(body.leader_id, addresses) if cls.__version__ >= 1 else []
    extra = {"node_endpoints": endpoints} if cls.__version__ >= 1 else {}
    match body:
        case VoteResponse():
            part: dict[str, Any] = {
                "error_code": body.error_code,
                "leader_id": body.leader_id,
                "leader_epoch": body.leader_epoch,
                "vote_granted": body.vote_granted,
            }
            return build(cls, {"error_code": 0, "topics": _topic(part), **extra})
        case BeginQuorumEpochResponse() | EndQuorumEpochResponse():
            part = {
                "error_code": body.error_code,
                "leader_id": body.leader_id,
                "leader_epoch": body.leader_epoch,
            }
            return build(cls, {"error_code": 0, "topics": _topic(part), **extra})
        case FetchSnapshotResponse():
            snap_part = {
                "index": 0,
                "error_code": body.error_code,
                "snapshot_id": {"end_offset": body.snapshot_id.offset, "epoch": body.snapshot_id.epoch},
                "current_leader": {"leader_id": body.leader_id, "leader_epoch": body.leader_epoch},
                "size": body.size,
                "position": body.position,
                "unaligned_records": body.unaligned_records,
            }
            top = {
                "throttle_time": 0,
                "error_code": 0,
                "topics": [{"name": METADATA_TOPIC, "partitions": [snap_part]}],
            }
            return build(cls, {**top, **extra})
    return None
