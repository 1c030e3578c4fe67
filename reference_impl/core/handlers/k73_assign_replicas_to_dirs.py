"""AssignReplicasToDirs: v0. A broker tells the active controller which of its log directories holds
each of its replicas (KIP-858, JBOD in KRaft), so that a failed directory's leaderships can be moved.

The controller records the assignment in the partition's ``directories`` (Kafka's
``ReplicationControlManager.handleAssignReplicasToDirs``,
``metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java``): a stale broker
epoch is STALE_BROKER_EPOCH for the whole request; an unknown topic UNKNOWN_TOPIC_ID, an unknown
partition UNKNOWN_TOPIC_OR_PARTITION and a partition the broker holds no replica of
NOT_LEADER_OR_FOLLOWER. Served on the controller listener only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(73, 0, 0)
def handle_assign_replicas_to_dirs(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 73, request)
