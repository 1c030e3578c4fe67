"""What the SCRAM credential APIs (DescribeUserScramCredentials, AlterUserScramCredentials) share.

Authorization: Kafka checks DESCRIBE (50) and ALTER (51) on the CLUSTER resource before anything
else and answers every user CLUSTER_AUTHORIZATION_FAILED when refused (``KafkaApis.
handleDescribeUserScramCredentialsRequest``, ``ControllerApis.handleAlterUserScramCredentials``).
:func:`cluster_authorized` is the one place the authorizer (issue 18's ACLs) plugs in; with no
authorizer configured every principal is allowed, as Kafka without ``authorizer.class.name``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference_impl.protocol.acl_codes import Operation

from .access import cluster_allowed

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

DESCRIBE = "DESCRIBE"
ALTER = "ALTER"
CLUSTER_AUTHORIZATION_MESSAGE = "Cluster authorization failed."


def cluster_authorized(broker: HandlerHost, ctx: RequestContext, operation: str) -> bool:
    """May the request's principal perform ``operation`` (DESCRIBE or ALTER) on the cluster? The
    authorizer's answer (:mod:`.access`); everyone without one."""
    return cluster_allowed(broker, ctx, Operation[operation])
