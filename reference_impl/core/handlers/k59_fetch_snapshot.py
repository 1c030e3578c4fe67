"""FetchSnapshot: v0-1. A replica whose fetch offset is below the leader's log start reads the
metadata snapshot in chunks (KIP-630). v1 (KIP-853): the follower's ReplicaDirectoryId (tagged),
the leader's NodeEndpoints in the answer (core/kraft/raft_wire.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(59, 0, 1)
def handle_fetch_snapshot(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 59, request)
