"""AlterPartitionReassignments: v0-1. Move partitions to new replicas (KIP-455), or cancel a move.

Behaviour: the target replicas are added at once (``adding_replicas``), the
new followers catch up and join the ISR, then the controller drops the
replicas that leave (``removing_replicas``), moving the leadership first if
the leader leaves; null replicas cancel a reassignment in progress. Errors:
INVALID_REPLICA_ASSIGNMENT (empty, duplicate, unregistered brokers),
NO_REASSIGNMENT_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION, and (v1,
``allow_replication_factor_change`` false) INVALID_REPLICATION_FACTOR. The
answer comes once the first step is committed, not when the move completes
(ListPartitionReassignments tells that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, millis
from reference_impl.protocol.errors import ErrorCode

from ..controller import messages as cm
from .access import Op, cluster_allowed
from .controller_admin import by_topic, submit
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(45, 0, 1)
def handle_alter_partition_reassignments(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    moves = tuple(
        (t.name, int(p.partition_index), None if p.replicas is None else tuple(int(r) for r in p.replicas))
        for t in request.topics
        for p in t.partitions
    )
    allow = bool(getattr(request, "allow_replication_factor_change", True))
    body = cm.AlterPartitionReassignmentsRequest(
        correlation_id=0, reassignments=moves, allow_replication_factor_change=allow
    )

    def to_wire(answer: cm.AlterPartitionReassignmentsResponse) -> Any:
        asked = tuple((t, p) for t, p, _r in moves)
        responses = by_topic(answer.results, asked, answer.error_code, "partition_index")
        return build(
            response_class(45, ctx.api_version),
            {
                "throttle_time": 0,
                "allow_replication_factor_change": allow,
                "error_code": answer.error_code,
                "error_message": None,
                "responses": responses,
            },
        )

    if not cluster_allowed(broker, ctx, Op.ALTER):  # Kafka: ALTER on the cluster
        refused = ErrorCode.cluster_authorization_failed
        answer = cm.AlterPartitionReassignmentsResponse(correlation_id=0, error_code=refused, results=())
        return Respond(to_wire(answer))
    return submit(broker, ctx, body, to_wire, millis(request.timeout))
