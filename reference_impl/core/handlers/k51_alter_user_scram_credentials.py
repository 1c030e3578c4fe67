"""AlterUserScramCredentials: v0. Add, replace or delete users' SCRAM credentials (KIP-554).

The controller decides (:mod:`..controller.scram`, Kafka's ``ScramControlManager``) and commits
``UserScramCredentialRecord`` / ``RemoveUserScramCredentialRecord`` to the metadata log, so every
broker learns them as it replays the log and they survive restarts. In a cluster a broker forwards
the request to the active controller (KIP-590, as Kafka's ``KafkaApis`` ``maybeForwardToController``)
and the answer waits for the records' commit. Every user is refused CLUSTER_AUTHORIZATION_FAILED
when the principal may not ALTER the cluster (:func:`.scram_common.cluster_authorized`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..controller import scram
from .registry import Reply, Respond, handles
from .scram_common import ALTER, CLUSTER_AUTHORIZATION_MESSAGE, cluster_authorized

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(51, 0, 0)
def handle_alter_user_scram_credentials(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    deletions = [scram.Deletion(d.name, int(d.mechanism)) for d in request.deletions]
    upsertions = [
        scram.Upsertion(u.name, int(u.mechanism), int(u.iterations), bytes(u.salt), bytes(u.salted_password))
        for u in request.upsertions
    ]
    users = list(dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions]))
    results: list[scram.Result]
    if not cluster_authorized(broker, ctx, ALTER):
        results = [(u, ErrorCode.cluster_authorization_failed, CLUSTER_AUTHORIZATION_MESSAGE) for u in users]
    else:
        try:
            results = broker.controller.writer().alter_scram(deletions, upsertions, ctx.received_ms)
        except KafkaError as exc:  # NOT_CONTROLLER: for every user, as Kafka's getErrorResponse
            results = [(u, exc.code, exc.message) for u in users]
    body = {
        "throttle_time": 0,
        "results": [
            {"user": u, "error_code": code, "error_message": message} for u, code, message in results
        ],
    }
    return Respond(build(response_class(51, ctx.api_version), body))
