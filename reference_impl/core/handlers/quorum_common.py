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

from ..kraft import voter_admin
from ..kraft.quorum import quorum_error
from .access import Op, cluster_allowed
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


def serve_voter_api(broker: HandlerHost, ctx: RequestContext, api_key: int, request: Any) -> Reply:
    """AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter: ALTER on the cluster for add and remove,
    CLUSTER_ACTION for update (ControllerApis), then the quorum's answer; a single broker is its own
    static quorum (kraft.version 0)."""
    if not cluster_allowed(broker, ctx, Op.CLUSTER_ACTION if api_key == 82 else Op.ALTER):
        return voter_admin.answer(ctx, api_key, ErrorCode.cluster_authorization_failed)
    if broker.quorum is not None:
        return broker.quorum.serve_voter_change(ctx, api_key, request)
    return voter_admin.serve_static(broker.image.cluster_id, ctx, api_key, request)
