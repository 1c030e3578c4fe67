"""ReadShareGroupState: v0 (KIP-932). A share-partition's persisted state, for its partition leader.

Answered by the share coordinator of each key from its memory (Kafka's
``ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch``): state epoch, start offset (-1 when
the key has no state, state epoch 0) and the state batches (first and last offset, delivery state 0
AVAILABLE / 2 ACKNOWLEDGED / 4 ARCHIVED, delivery count). A leader epoch above the recorded one is
written (a ShareUpdate without batches) before it is answered. Needs CLUSTER_ACTION on the cluster.
Errors per partition: CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, FENCED_LEADER_EPOCH (a leader
epoch below the recorded one), UNKNOWN_TOPIC_OR_PARTITION, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
Version notes: v0 only, as kio 0.6.5 and Kafka's ReadShareGroupStateRequest.json define it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode

from ..group.share_state_records import batches_to_wire
from .registry import Reply, handles
from .share_state_common import serve_reads

if TYPE_CHECKING:
    from ..group.share_state import ShareStateCoordinator
    from ..group.share_state_records import StateKey
    from ..request_context import RequestContext
    from .host import HandlerHost

UNKNOWN = {"state_epoch": 0, "start_offset": -1, "state_batches": []}


@handles(84, 0, 0)
def handle_read_share_group_state(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def read(coordinator: ShareStateCoordinator, key: StateKey, p: Any) -> tuple[ErrorCode, Any]:
        code, state = coordinator.read(key, int(p.leader_epoch), ctx.received_ms)
        if state is None:
            return code, None
        return code, {
            "state_epoch": state.state_epoch,
            "start_offset": state.start_offset,
            "state_batches": batches_to_wire(state.batches),
        }

    return serve_reads(broker, ctx, request, 84, UNKNOWN, read)
