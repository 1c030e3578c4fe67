"""The shared body of the quorum and controller API handlers (Vote .. AllocateProducerIds).

A cluster-mode broker hands the request to its :class:`ClusterQuorum`, which
answers when its Raft replica or controller does. A one-node broker is a
one-voter quorum of its own: it has no peers to vote for or fetch from, and
answers these APIs with NOT_CONTROLLER (controller APIs) or an empty answer
naming no partition (quorum APIs), so a probe of an advertised version
always gets a well-formed reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode

from ..kraft.quorum import quorum_error
from .registry import Reply

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

CONTROLLER_APIS = frozenset({56, 62, 63, 67, 73})


def serve_quorum_api(broker: HandlerHost, ctx: RequestContext, api_key: int, request: Any) -> Reply:
    if broker.quorum is not None:
        return broker.quorum.serve(ctx, api_key, request)
    code = ErrorCode.not_controller if api_key in CONTROLLER_APIS else ErrorCode.none
    return quorum_error(ctx, api_key, code)
