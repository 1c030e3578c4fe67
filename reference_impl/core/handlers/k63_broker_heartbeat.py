"""BrokerHeartbeat: v0-1. A registered broker reports its metadata offset (KIP-631) and, v1, its
failed log directories (KIP-858: the controller moves the leaderships of the replicas in them).

Unfences a caught-up broker; a broker silent for broker.session.timeout.ms is
fenced and its leaderships move. want_shut_down asks for a controlled
shutdown: should_shut_down is answered once it leads nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(63, 0, 1)
def handle_broker_heartbeat(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 63, request)
