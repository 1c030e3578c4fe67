"""WriteShareGroupState: v0-1 (KIP-932). A partition leader writes a share-partition's state.

The share coordinator of each key appends one record (a ShareSnapshot for a key's first state and
every 500th write, else a ShareUpdate; Kafka's ``ShareCoordinatorShard.writeState``) and answers once
it is committed. The state batches given are laid over the recorded ones; batches below the start
offset are dropped (``PersisterStateBatchCombiner``). Needs CLUSTER_ACTION on the cluster.
Errors per partition: CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST (null topic id, negative
partition, too many batches), FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION,
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
Version notes: v0-1, as kio 0.6.5 defines them; v1 adds DeliveryCompleteCount (KIP-1226), which the
coordinator computes from the batches itself (a request's value is not trusted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .registry import Reply, handles
from .share_state_common import serve_writes

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(85, 0, 1)
def handle_write_share_group_state(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_writes(broker, ctx, request, 85)
