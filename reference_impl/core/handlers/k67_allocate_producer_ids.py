"""AllocateProducerIds: v0. A broker asks the active controller for a block of producer ids
(KIP-730), recorded in the metadata log before it is handed out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(67, 0, 0)
def handle_allocate_producer_ids(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 67, request)
