"""BeginQuorumEpoch: v0. A new quorum leader announces its epoch to the voters (KIP-595).

Version notes: v1 (KIP-853 leader endpoints) is not implemented."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(53, 0, 0)
def handle_begin_quorum_epoch(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 53, request)
