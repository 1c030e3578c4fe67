"""FetchSnapshot (KIP-630): a snapshot served in chunks by the leader and downloaded by a follower.

When a follower fetches below the leader's log start, the leader answers a snapshot id instead of
records; the follower then asks FetchSnapshot for it chunk by chunk (``position`` is how much it
holds) and installs it once it has ``size`` bytes. Kafka's ``KafkaRaftClient.handleFetchSnapshotRequest``
and ``handleFetchSnapshotResponse`` (raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from . import request_checks as checks
from .messages import NO_LEADER, FetchSnapshotRequest, FetchSnapshotResponse, OffsetAndEpoch
from .quorum_state import QuorumState
from .raft_log import RaftLog, Snapshot
from .states import LeaderState, ResignedState


def answer_fetch_snapshot(
    quorum: QuorumState, log: RaftLog, source: int, request: FetchSnapshotRequest, chunk_bytes: int
) -> FetchSnapshotResponse:
    """The leader's answer to a FetchSnapshot; a voter's successful one counts as contact."""
    state = quorum.state
    error = checks.leader_only_error(quorum, request.current_leader_epoch)
    data = b""
    size = 0
    if error is None:
        error, size, data = read_chunk(log.latest_snapshot(), request, chunk_bytes)
        if error is None and isinstance(state, LeaderState) and source in state.voters:
            state.fetched_since_check.add(source)
    return FetchSnapshotResponse(
        correlation_id=request.correlation_id,
        error_code=error or ErrorCode.none,
        leader_id=quorum.leader_id if not isinstance(state, ResignedState) else NO_LEADER,
        leader_epoch=quorum.epoch,
        snapshot_id=request.snapshot_id,
        size=size,
        position=request.position,
        unaligned_records=data,
    )


def read_chunk(
    snapshot: Snapshot | None, request: FetchSnapshotRequest, chunk_bytes: int
) -> tuple[ErrorCode | None, int, bytes]:
    """The leader's side: (error or None, the snapshot's size, the chunk at ``request.position``)."""
    if snapshot is None or snapshot.snapshot_id != request.snapshot_id:
        return ErrorCode.snapshot_not_found, 0, b""
    if not 0 <= request.position <= len(snapshot.data):
        return ErrorCode.position_out_of_range, 0, b""
    end = request.position + min(request.max_bytes, chunk_bytes)
    return None, len(snapshot.data), snapshot.data[request.position : end]


@dataclass(slots=True)
class SnapshotDownload:
    """The follower's side: the snapshot the leader named, as much of it as has arrived."""

    snapshot_id: OffsetAndEpoch
    data: bytearray = field(default_factory=bytearray)

    def request(
        self,
        correlation_id: int,
        replica_id: int,
        epoch: int,
        chunk_bytes: int,
        directory_id: uuid.UUID | None = None,
    ) -> FetchSnapshotRequest:
        """The FetchSnapshot asking for the next chunk."""
        return FetchSnapshotRequest(
            correlation_id=correlation_id,
            replica_id=replica_id,
            current_leader_epoch=epoch,
            snapshot_id=self.snapshot_id,
            position=len(self.data),
            replica_directory_id=directory_id,
            max_bytes=chunk_bytes,
        )

    def is_next_chunk(self, response: FetchSnapshotResponse) -> bool:
        """Whether ``response`` continues this download (else it is stale: ignore it)."""
        return response.position == len(self.data)

    def add(self, response: FetchSnapshotResponse) -> Snapshot | None:
        """Keep the chunk; the whole snapshot once it has ``response.size`` bytes, else None."""
        self.data += response.unaligned_records
        if len(self.data) < response.size:
            return None
        return Snapshot(self.snapshot_id, bytes(self.data))
