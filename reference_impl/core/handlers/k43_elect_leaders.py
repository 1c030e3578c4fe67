"""ElectLeaders: v0-2. Preferred (and, v1+, unclean) leader elections, decided by the controller.

Behaviour: PREFERRED makes the first assigned replica the leader if it is
live and in the ISR; UNCLEAN gives a leaderless partition the first live
replica (from the ISR if one is live). Per-partition errors are Kafka's:
ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION; with no partition
list every partition is tried and those that needed nothing are left out.
The answer comes once the leader changes are committed to the metadata log.
Version notes: v0 has no election type (preferred) and no top-level error;
v2 is flexible.
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


@handles(43, 0, 2)
def handle_elect_leaders(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    asked = (
        None
        if request.topic_partitions is None
        else tuple((t.topic, int(p)) for t in request.topic_partitions for p in t.partitions)
    )
    body = cm.ElectLeadersRequest(
        correlation_id=0, election_type=int(getattr(request, "election_type", 0)), partitions=asked
    )

    def to_wire(answer: cm.ElectLeadersResponse) -> Any:
        results = by_topic(answer.results, asked, answer.error_code, "partition_id")
        return build(
            response_class(43, ctx.api_version),
            {"throttle_time": 0, "error_code": answer.error_code, "replica_election_results": results},
        )

    if not cluster_allowed(broker, ctx, Op.ALTER):  # Kafka: ALTER on the cluster
        refused = ErrorCode.cluster_authorization_failed
        return Respond(to_wire(cm.ElectLeadersResponse(correlation_id=0, error_code=refused, results=())))
    return submit(broker, ctx, body, to_wire, millis(request.timeout))
