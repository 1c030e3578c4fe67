"""The answer a peer gets when the quorum or the controller did not answer its request in time.

Kafka's network client turns a request timeout into a disconnect; a peer of
this broker gets a well-formed answer instead, with REQUEST_TIMED_OUT, so its
replica retries at once rather than waiting for its own request timeout.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from reference_impl.core.controller.quorum import not_controller_answer
from reference_impl.core.raft import messages as rm

_TIMED_OUT = ErrorCode.request_timed_out


def timeout_answer(request: Any) -> Any:
    """The error answer to ``request`` (a quorum or controller request dataclass)."""
    cid = request.correlation_id
    match request:
        case rm.VoteRequest():
            return rm.VoteResponse(
                correlation_id=cid, error_code=_TIMED_OUT, leader_id=-1, leader_epoch=-1, vote_granted=False
            )
        case rm.BeginQuorumEpochRequest():
            return rm.BeginQuorumEpochResponse(
                correlation_id=cid, error_code=_TIMED_OUT, leader_id=-1, leader_epoch=-1
            )
        case rm.EndQuorumEpochRequest():
            return rm.EndQuorumEpochResponse(
                correlation_id=cid, error_code=_TIMED_OUT, leader_id=-1, leader_epoch=-1
            )
        case rm.FetchRequest():
            return rm.FetchResponse(
                correlation_id=cid,
                error_code=_TIMED_OUT,
                leader_id=-1,
                leader_epoch=-1,
                high_watermark=-1,
                log_start_offset=-1,
                diverging_epoch=None,
                snapshot_id=None,
                records=b"",
            )
        case rm.FetchSnapshotRequest():
            return rm.FetchSnapshotResponse(
                correlation_id=cid,
                error_code=_TIMED_OUT,
                leader_id=-1,
                leader_epoch=-1,
                snapshot_id=request.snapshot_id,
                size=0,
                position=0,
                unaligned_records=b"",
            )
    return not_controller_answer(request)
