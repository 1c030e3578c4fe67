"""ListPartitionReassignments: v0. The reassignments in progress, from the controller.

Behaviour: every reassignment in progress (null topics), or those of the
partitions asked about; unknown topics and partitions, and partitions not
being reassigned, are left out. Each lists its replicas (target first, then
those leaving), adding and removing replicas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, millis
from reference_impl.protocol.errors import ErrorCode

from ..controller import messages as cm
from .access import Op, cluster_allowed
from .controller_admin import submit
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(46, 0, 0)
def handle_list_partition_reassignments(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    asked = (
        None
        if request.topics is None
        else tuple((t.name, int(p)) for t in request.topics for p in t.partition_indexes)
    )
    body = cm.ListPartitionReassignmentsRequest(correlation_id=0, partitions=asked)

    def to_wire(answer: cm.ListPartitionReassignmentsResponse) -> Any:
        topics: dict[str, list[dict[str, Any]]] = {}
        for o in answer.ongoing:
            topics.setdefault(o.topic, []).append(
                {
                    "partition_index": o.partition,
                    "replicas": list(o.replicas),
                    "adding_replicas": list(o.adding_replicas),
                    "removing_replicas": list(o.removing_replicas),
                }
            )
        return build(
            response_class(46, ctx.api_version),
            {
                "throttle_time": 0,
                "error_code": answer.error_code,
                "error_message": None,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            },
        )

    if not cluster_allowed(broker, ctx, Op.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        refused = ErrorCode.cluster_authorization_failed
        return Respond(
            to_wire(cm.ListPartitionReassignmentsResponse(correlation_id=0, error_code=refused, ongoing=()))
        )
    return submit(broker, ctx, body, to_wire, millis(request.timeout))
