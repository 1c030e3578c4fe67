"""Vote: v0-2. A candidate asks this voter for its vote in an epoch (KIP-595).

Granted once per epoch, to a candidate whose log is at least as up to date
(last epoch, then end offset), persisted in quorum-state before answering.
v1 (KIP-853): the receiving voter's id and directory id (a mismatch is INVALID_VOTER_KEY), the
candidate's directory id, the leader's NodeEndpoints in the answer. v2 (KIP-996): PreVote, answered
without any change of state (core/raft/voting.py). Wire forms: core/kraft/raft_wire.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(52, 0, 2)
def handle_vote(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 52, request)
