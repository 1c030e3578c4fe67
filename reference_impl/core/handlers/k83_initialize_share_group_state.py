"""InitializeShareGroupState: v0 (KIP-932). Give share-partitions their first state.

Sent to the share coordinator of each group:topic:partition key (the leader of the key's
``__share_group_state`` partition). Each key gets a new ShareSnapshot with the request's state epoch
and start offset and no state batches (Kafka's ``ShareCoordinatorShard.initializeState``), answered
once committed. Needs CLUSTER_ACTION on the cluster (``KafkaApis.handleInitializeShareGroupStateRequest``).
Errors per partition: CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST (null topic id, negative
partition, over the request bounds), FENCED_STATE_EPOCH (a state epoch below the recorded one),
UNKNOWN_TOPIC_OR_PARTITION, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
An empty group id or no partitions: an answer with no results.
Version notes: v0 only, as kio 0.6.5 and Kafka's InitializeShareGroupStateRequest.json define it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .registry import Reply, handles
from .share_state_common import serve_writes

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(83, 0, 0)
def handle_initialize_share_group_state(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_writes(broker, ctx, request, 83)
