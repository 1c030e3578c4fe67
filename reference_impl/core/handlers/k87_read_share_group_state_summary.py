"""ReadShareGroupStateSummary: v0-1 (KIP-932). A share-partition's start offset and epochs.

Answered by the share coordinator of each key from its memory, nothing written (Kafka's
``ShareCoordinatorShard.readStateSummary``): state epoch, leader epoch, start offset (-1 and state
epoch 0 for a key without state) and, v1, DeliveryCompleteCount (KIP-1226: offsets at or past the
start offset acknowledged or archived; -1 unknown). Needs CLUSTER_ACTION on the cluster.
Errors per partition: CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION,
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
Version notes: v0-1, as kio 0.6.5 defines them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode

from .registry import Reply, handles
from .share_state_common import serve_reads

if TYPE_CHECKING:
    from ..group.share_state import ShareStateCoordinator
    from ..group.share_state_records import StateKey
    from ..request_context import RequestContext
    from .host import HandlerHost

UNKNOWN = {"state_epoch": 0, "leader_epoch": -1, "start_offset": -1, "delivery_complete_count": -1}


@handles(87, 0, 1)
def handle_read_share_group_state_summary(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def read(coordinator: ShareStateCoordinator, key: StateKey, p: Any) -> tuple[ErrorCode, Any]:
        code, summary = coordinator.summary(key, int(p.leader_epoch))
        if summary is None:
            return code, None
        return code, {
            "state_epoch": summary.state_epoch,
            "leader_epoch": summary.leader_epoch,
            "start_offset": summary.start_offset,
            "delivery_complete_count": summary.delivery_complete_count,
        }

    return serve_reads(broker, ctx, request, 87, UNKNOWN, read)
