"""DescribeCluster: v0-2. The cluster id, the controller, and the brokers.

Version notes: v1+ ``endpoint_type`` (1 = brokers; 2 = controllers: in a
cluster the quorum's voters, at the addresses this node reaches them, and the
quorum's leader, KIP-919; a one-node broker is its own controller); v2+
``include_fenced_brokers`` and ``is_fenced``. The controller named with
brokers is the one clients can reach (see ``Broker.controller_for_clients``).
Not implemented: authorized operations (no ACLs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode

from .access import CLUSTER, bitfield
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

BROKERS, CONTROLLERS = 1, 2


@handles(60, 0, 2)
def handle_describe_cluster(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    endpoint_type = int(get(request, "endpoint_type", BROKERS))
    include_fenced = bool(get(request, "include_fenced_brokers", False))
    error, message = ErrorCode.none, None
    if endpoint_type not in (BROKERS, CONTROLLERS):
        error, message = ErrorCode.unsupported_endpoint_type, f"endpoint type {endpoint_type} is unknown"
    controller = broker.controller_for_clients()
    if error is not ErrorCode.none:
        brokers = []
    elif endpoint_type == CONTROLLERS:
        controller = broker.image.controller_id  # KIP-919: the quorum's voters and its leader
        brokers = [
            {"broker_id": node, "host": host, "port": port, "rack": None, "is_fenced": False}
            for node, (host, port) in sorted(broker.quorum.voters.items())
        ]
    else:
        brokers = [
            {"broker_id": b.node_id, "host": h, "port": p, "rack": b.rack, "is_fenced": b.fenced}
            for b in sorted(broker.image.brokers.values(), key=lambda b: b.node_id)
            if include_fenced or not b.fenced
            for h, p in [broker.endpoint_for(b.node_id, b.host, b.port, ctx.listener)]
        ]
    return Respond(
        build(
            response_class(60, ctx.api_version),
            {
                "throttle_time": 0,
                "error_code": error,
                "error_message": message,
                "cluster_id": broker.image.cluster_id,
                "controller_id": controller,
                "brokers": brokers,
                "endpoint_type": endpoint_type,
                "cluster_authorized_operations": bitfield(
                    broker,
                    ctx,
                    get(request, "include_cluster_authorized_operations", False),
                    CLUSTER,
                    "kafka-cluster",
                ),
            },
        )
    )
