"""What the SCRAM credential APIs (DescribeUserScramCredentials, AlterUserScramCredentials) share.

Authorization: Kafka checks DESCRIBE (50) and ALTER (51) on the CLUSTER resource before anything
else and answers every user CLUSTER_AUTHORIZATION_FAILED when refused (``KafkaApis.
handleDescribeUserScramCredentialsRequest``, ``ControllerApis.handleAlterUserScramCredentials``).
:func:`cluster_authorized` is the one place the authorizer (issue 18's ACLs) plugs in; with no
authorizer configured every principal is allowed, as Kafka without ``authorizer.class.name``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

DESCRIBE = "DESCRIBE"
ALTER = "ALTER"
CLUSTER_AUTHORIZATION_MESSAGE = "Cluster authorization failed."


def cluster_authorized(broker: HandlerHost, ctx: RequestContext, operation: str) -> bool:
    """May the request's principal perform ``operation`` on the cluster? The hook for the
    authorizer: allowed until one is configured."""
    return True
