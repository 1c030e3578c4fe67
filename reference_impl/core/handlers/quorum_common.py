"""The shared body of the quorum and controller API handlers (Vote .. AllocateProducerIds).

Every broker hands the request to its :class:`ClusterQuorum` (a single broker's is a quorum whose
only voter it is), which answers when its Raft replica or controller does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode

from ..kraft import voter_admin
from .access import Op, cluster_allowed
from .registry import Reply

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

CONTROLLER_APIS = frozenset({56, 62, 63, 67, 73})


def serve_quorum_api(broker: HandlerHost, ctx: RequestContext, api_key: int, request: Any) -> Reply:
    return broker.quorum.serve(ctx, api_key, request)


def serve_voter_api(broker: HandlerHost, ctx: RequestContext, api_key: int, request: Any) -> Reply:
    """AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter: ALTER on the cluster for add and remove,
    CLUSTER_ACTION for update (ControllerApis), then the quorum's answer; a single broker is its own
    static quorum (kraft.version 0)."""
    if not cluster_allowed(broker, ctx, Op.CLUSTER_ACTION if api_key == 82 else Op.ALTER):
        return voter_admin.answer(ctx, api_key, ErrorCode.cluster_authorization_failed)
    return broker.quorum.serve_voter_change(ctx, api_key, request)
