"""ListGroups: v0-5. Every group this broker coordinates, optionally filtered by state and type.

Behaviour: groups of the loaded shards of ``__consumer_offsets``, including
"simple" groups that only commit offsets (protocol type ""), then the
consumer-protocol groups (KIP-848: type ``consumer``, protocol type
``consumer``, states Empty, Assigning, Reconciling, Stable) and the share
groups (KIP-932: type and protocol type ``share``, states Empty, Reconciling,
Stable), classic groups first, then the others, each set in group-id order;
without DESCRIBE on the cluster, only groups the principal may DESCRIBE.
Version notes: v4+ a state filter, case-insensitive (KIP-518); v4+ each
group's state; v5+ a type filter (``classic``, ``consumer``, ``share``,
case-insensitive; KIP-848) and each group's type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode

from .access import GROUP, Op, allowed, cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

GROUP_TYPE = "classic"
CONSUMER_TYPE = "consumer"
SHARE_TYPE = "share"  # group-coordinator/.../modern/share/ShareGroup.java PROTOCOL_TYPE


@handles(16, 0, 5)
def handle_list_groups(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    states = {s.strip().lower() for s in get(request, "states_filter", ())}
    types = {t.strip().lower() for t in get(request, "types_filter", ())}
    groups = []
    every = cluster_allowed(broker, ctx, Op.DESCRIBE)  # Kafka: DESCRIBE on the cluster, else per group
    for group in sorted(broker.group_coordinator.groups.values(), key=lambda g: g.group_id):
        if not every and not allowed(broker, ctx, Op.DESCRIBE, GROUP, group.group_id):
            continue
        if states and group.state.value.lower() not in states:
            continue
        if types and GROUP_TYPE not in types:
            continue
        groups.append(
            {
                "group_id": group.group_id,
                "protocol_type": group.protocol_type or "",
                "group_state": group.state.value,
                "group_type": GROUP_TYPE,
            }
        )
    coordinator = broker.group_coordinator
    modern = [
        *((g.group_id, g.state().value, CONSUMER_TYPE) for g in coordinator.consumer.groups.values()),
        *((g.group_id, g.state, SHARE_TYPE) for g in coordinator.share.groups.values()),
    ]
    for group_id, state, kind in sorted(modern):
        if not every and not allowed(broker, ctx, Op.DESCRIBE, GROUP, group_id):
            continue
        if states and state.lower() not in states:
            continue
        if types and kind not in types:
            continue
        # Kafka: ConsumerGroup.PROTOCOL_TYPE "consumer", ShareGroup.PROTOCOL_TYPE "share"
        groups.append({"group_id": group_id, "protocol_type": kind, "group_state": state, "group_type": kind})
    body = {"throttle_time": 0, "error_code": ErrorCode.none, "groups": groups}
    return Respond(build(response_class(16, ctx.api_version), body))
