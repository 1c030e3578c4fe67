"""AlterClientQuotas: v0-1. Set or remove client quotas (issue 20), kept as ClientQuotaRecords.

The controller decides (:mod:`..controller.client_quotas`, Kafka's ``ClientQuotaControlManager``)
and commits ``ClientQuotaRecord`` to the metadata log, so every broker learns the quotas as it
replays the log (DescribeClientQuotas, API 48, answers from there) and they survive restarts. In a
cluster a broker forwards the request to the active controller (KIP-590; Kafka 4's ``KafkaApis``
always forwards it, ``ControllerApis.handleAlterClientQuotas`` answers) and the answer waits for the
records' commit. Kafka's controller authorizes ALTER_CONFIGS on the cluster first and, refused,
answers every request entry CLUSTER_AUTHORIZATION_FAILED (``AlterClientQuotasRequest.
getErrorResponse``), as it answers NOT_CONTROLLER or POLICY_VIOLATION for the whole request.
Otherwise one result per distinct entity (``AlterClientQuotasResponse.fromQuotaEntities``). v1 is
v0 made flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.acl_codes import Operation
from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..controller.client_quotas import Alteration, EntityPairs, Result
from .access import cluster_allowed
from .registry import Reply, Respond, handles
from .scram_common import CLUSTER_AUTHORIZATION_MESSAGE

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


def _alterations(request: Any) -> list[Alteration]:
    return [
        Alteration(
            entity=tuple((e.entity_type, e.entity_name) for e in entry.entity),
            ops=tuple((op.key, None if op.remove else float(op.value)) for op in entry.ops),
        )
        for entry in request.entries
    ]


def _entry(entity: EntityPairs, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
    }


@handles(49, 0, 1)
def handle_alter_client_quotas(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    alterations = _alterations(request)
    results: list[Result]
    refusal: KafkaError | None = None
    if not cluster_allowed(broker, ctx, Operation.ALTER_CONFIGS):
        refusal = KafkaError(ErrorCode.cluster_authorization_failed, CLUSTER_AUTHORIZATION_MESSAGE)
    elif not alterations:
        results = []  # QuorumController.alterClientQuotas: nothing to do, nothing written
    else:
        try:
            results = broker.controller.writer().alter_client_quotas(
                alterations, validate_only=bool(request.validate_only), now_ms=ctx.received_ms
            )
        except KafkaError as exc:  # NOT_CONTROLLER, POLICY_VIOLATION: the whole request
            refusal = exc
    if refusal is not None:
        results = [(a.entity, refusal.code, refusal.message) for a in alterations]
    body = {"throttle_time": 0, "entries": [_entry(*r) for r in results]}
    return Respond(build(response_class(49, ctx.api_version), body))
