"""Vote: v0. A candidate asks this voter for its vote in an epoch (KIP-595).

Granted once per epoch, to a candidate whose log is at least as up to date
(last epoch, then end offset), persisted in quorum-state before answering.
Version notes: v1+ (KIP-853, voter directory ids) are not implemented."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(52, 0, 0)
def handle_vote(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 52, request)
