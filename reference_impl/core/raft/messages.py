"""The messages the Raft quorum exchanges, as plain immutable values.

One dataclass per request and response of KRaft's wire APIs (Vote,
BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, DescribeQuorum), with
field names kept to Kafka's (snake_cased) so that a shell translating them to
kio entities maps field to field. Every request carries a ``correlation_id``
and its response echoes it: a replica only acts on the answer to the request
it is still waiting for, so a duplicated or reordered answer cannot make it
append or truncate twice (Kafka's network client matches correlation ids the
same way).

:class:`Envelope` is what every simulated node sends and receives: a body
routed by destination id. The simulator knows nothing else about messages.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

NO_LEADER = -1
NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class OffsetAndEpoch:
    """An offset and the epoch of the record just before it (a snapshot id, a diverging point)."""

    offset: int
    epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """A message on the simulated (or real) network: who sent it, who gets it, what it says."""

    source_id: int
    destination_id: int
    body: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRequest:
    correlation_id: int
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    """The candidate's log end offset; with ``last_offset_epoch`` it says how up to date its log is."""
    voter_directory_id: uuid.UUID | None = None
    """Vote v1+ (KIP-853): the directory id the candidate's voter set gives the recipient; a replica
    whose own directory id differs (formatted again since) refuses with INVALID_VOTER_KEY."""
    voter_id: int = -1
    """Vote v1+ (KIP-853): the replica the request is meant for (-1: not said, v0)."""
    candidate_directory_id: uuid.UUID | None = None
    """Vote v1+ (KIP-853, ReplicaDirectoryId): the candidate's own directory id."""
    pre_vote: bool = False
    """Vote v2 (KIP-996): a PreVote. ``candidate_epoch`` is the epoch the sender would stand in; a
    voter answers whether it would grant its vote, and changes no state (prevote.py)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponse:
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequest:
    correlation_id: int
    leader_id: int
    leader_epoch: int
    voter_id: int = -1
    """v1+ (KIP-853): the replica the request is meant for (-1: not said, v0)."""
    voter_directory_id: uuid.UUID | None = None
    """v1+ (KIP-853): the directory id the leader's voter set gives the recipient."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochResponse:
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequest:
    correlation_id: int
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...]
    """Voters in the order they should stand for election (most caught up first)."""
    successor_directory_ids: tuple[uuid.UUID | None, ...] = ()
    """v1+ (KIP-853 PreferredCandidates): the directory id of each successor, in the same order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochResponse:
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest:
    """A replica (voter or observer) asks the leader for records from ``fetch_offset``.

    ``last_fetched_epoch`` is the epoch of the replica's last record: the
    leader checks that its own log holds that epoch up to ``fetch_offset``
    and answers with a diverging epoch otherwise (KIP-595, as KIP-320 for
    partitions). A fetch also acknowledges everything below ``fetch_offset``.
    """

    correlation_id: int
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    max_bytes: int
    replica_directory_id: uuid.UUID | None = None
    """Fetch v17+ (KIP-853): the fetching replica's directory id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse:
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    high_watermark: int
    """-1 while the leader has not committed an entry of its own epoch yet."""
    log_start_offset: int
    diverging_epoch: OffsetAndEpoch | None
    """Truncate to the end of this epoch (offset = where the leader's log leaves it), then fetch again."""
    snapshot_id: OffsetAndEpoch | None
    """The fetch offset is below the leader's log start: fetch this snapshot first."""
    records: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequest:
    correlation_id: int
    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int
    replica_directory_id: uuid.UUID | None = None
    """v1+ (KIP-853): the fetching replica's directory id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponse:
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    snapshot_id: OffsetAndEpoch
    size: int
    position: int
    unaligned_records: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumRequest:
    correlation_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaState:
    """One replica as the leader sees it (DescribeQuorum's ReplicaState)."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumResponse:
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    high_watermark: int
    current_voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]


RaftRequest = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
    | DescribeQuorumRequest
)
RaftResponse = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
    | DescribeQuorumResponse
)
RAFT_MESSAGE_TYPES: tuple[type, ...] = (
    VoteRequest,
    VoteResponse,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
)


def describe(body: Any) -> str:
    """A short readable form of a message for traces (records shown by size only)."""
    name = type(body).__name__
    parts = []
    for field_name in getattr(body, "__slots__", ()):
        value = getattr(body, field_name)
        if isinstance(value, bytes):
            parts.append(f"{field_name}=<{len(value)}B>")
        elif isinstance(value, ErrorCode):
            if value != ErrorCode.none:
                parts.append(f"{field_name}={value.name}")
        elif isinstance(value, OffsetAndEpoch):
            parts.append(f"{field_name}=({value.offset},{value.epoch})")
        else:
            parts.append(f"{field_name}={value}")
    return f"{name}({', '.join(parts)})"
