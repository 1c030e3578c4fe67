"""DescribeUserScramCredentials: v0. Which SCRAM mechanisms (and iterations) each user has.

Kafka's ``ScramImage.describe`` (``metadata/src/main/java/org/apache/kafka/image/ScramImage.java``),
answered by any broker from its metadata image: no users (null or empty) lists every user with a
credential; a user asked twice is DUPLICATE_RESOURCE "Cannot describe SCRAM credentials for the same
user twice in a single request: U", an unknown one RESOURCE_NOT_FOUND "Attempt to describe a user
credential that does not exist: U". Never the salt or keys. Refused as a whole with
CLUSTER_AUTHORIZATION_FAILED when the principal may not DESCRIBE the cluster
(:func:`.scram_common.cluster_authorized`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .registry import Reply, Respond, handles
from .scram_common import CLUSTER_AUTHORIZATION_MESSAGE, DESCRIBE, cluster_authorized

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
NOT_FOUND = "Attempt to describe a user credential that does not exist: "


@handles(50, 0, 0)
def handle_describe_user_scram_credentials(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    answer = response_class(50, ctx.api_version)
    if not cluster_authorized(broker, ctx, DESCRIBE):
        body = {
            "throttle_time": 0,
            "error_code": ErrorCode.cluster_authorization_failed,
            "error_message": CLUSTER_AUTHORIZATION_MESSAGE,
            "results": [],
        }
        return Respond(build(answer, body))
    credentials = broker.image.scram
    asked: dict[str, bool] = {}  # user → asked more than once
    if not request.users:
        for _mechanism, user in credentials:
            asked[user] = False
    else:
        for u in request.users:
            asked[u.name] = u.name in asked
    results = []
    for user, twice in asked.items():
        result: dict[str, Any] = {"user": user, "error_code": ErrorCode.none, "error_message": None}
        infos = [
            {"mechanism": mechanism, "iterations": record.iterations}
            for (mechanism, name), record in sorted(credentials.items())
            if name == user
        ]
        if twice:
            result.update(error_code=ErrorCode.duplicate_resource, error_message=DUPLICATE + user)
            infos = []
        elif not infos:
            result.update(error_code=ErrorCode.resource_not_found, error_message=NOT_FOUND + user)
        result["credential_infos"] = infos
        results.append(result)
    body = {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "results": results}
    return Respond(build(answer, body))
