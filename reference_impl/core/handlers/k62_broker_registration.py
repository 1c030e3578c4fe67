"""BrokerRegistration: v0. A broker registers with the active controller (KIP-631).

The answer's broker epoch is the offset of its RegisterBrokerRecord; a new
incarnation of a live broker first loses its ISR places and leaderships. The
broker starts fenced and is unfenced by a heartbeat once its metadata caught
up. Version notes: features and later fields are accepted and ignored."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(62, 0, 0)
def handle_broker_registration(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 62, request)
