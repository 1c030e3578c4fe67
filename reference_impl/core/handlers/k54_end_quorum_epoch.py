"""EndQuorumEpoch: v0-1. A resigning quorum leader names its preferred successors (KIP-595).

A voter in the list stands for election sooner the higher it is placed. v1 (KIP-853):
PreferredCandidates with their directory ids instead of PreferredSuccessors, the leader's
endpoints, NodeEndpoints in the answer (core/kraft/raft_wire.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(54, 0, 1)
def handle_end_quorum_epoch(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 54, request)
