"""RemoveRaftVoter: v0. KIP-853: change the metadata quorum's voters.

Kafka's checks and errors: reference_impl/core/kraft/voter_admin.py; the leader's side:
reference_impl/core/raft/voter_changes.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_voter_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(81, 0, 0)
def handle_remove_raft_voter(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_voter_api(broker, ctx, 81, request)
