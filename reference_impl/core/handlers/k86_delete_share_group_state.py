"""DeleteShareGroupState: v0 (KIP-932). Forget share-partitions' state (a deleted share group).

The share coordinator of each key writes a ShareSnapshot tombstone (Kafka's
``ShareCoordinatorShard.deleteState``); a key without state is answered at once with no record.
Needs CLUSTER_ACTION on the cluster. Errors per partition: CLUSTER_AUTHORIZATION_FAILED,
INVALID_REQUEST, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
Version notes: v0 only, as kio 0.6.5 and Kafka's DeleteShareGroupStateRequest.json define it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .registry import Reply, handles
from .share_state_common import serve_writes

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(86, 0, 0)
def handle_delete_share_group_state(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_writes(broker, ctx, request, 86)
