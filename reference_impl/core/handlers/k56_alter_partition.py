"""AlterPartition: v2. A partition leader asks the active controller to change its ISR.

Fenced as Kafka fences it: STALE_BROKER_EPOCH, FENCED_LEADER_EPOCH (leader or
leader epoch not current), INVALID_UPDATE_VERSION (partition epoch not
current), INELIGIBLE_REPLICA (a fenced or shutting-down replica). Answered
once the PartitionChangeRecord is committed. Version notes: v0-1 name topics
by name and v3 adds directory ids; only v2 (topic ids) is served."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(56, 2, 2)
def handle_alter_partition(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 56, request)
