"""BeginQuorumEpoch: v0-1. A new quorum leader announces its epoch to the voters (KIP-595).

v1 (KIP-853): the receiving voter's id and directory id (a mismatch is INVALID_VOTER_KEY), the
leader's endpoints, NodeEndpoints in the answer (core/kraft/raft_wire.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(53, 0, 1)
def handle_begin_quorum_epoch(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 53, request)
