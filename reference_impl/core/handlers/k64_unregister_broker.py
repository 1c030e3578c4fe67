"""UnregisterBroker: v0. Remove a broker's registration from the cluster metadata (KIP-631).

Behaviour (Kafka's ``ControllerApis.handleUnregisterBroker`` and
``ReplicationControlManager.unregisterBroker``, core/src/main/scala/kafka/server/ControllerApis.scala,
metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java): ALTER on the
cluster is required (CLUSTER_AUTHORIZATION_FAILED); an id with no registration is
BROKER_ID_NOT_REGISTERED; otherwise the broker leaves every ISR, the partitions it led elect
another leader, and an ``UnregisterBrokerRecord`` removes the registration (see
:mod:`..controller.membership`). A broker listener forwards it to the active controller
(``KafkaApis``: ``forwardToControllerOrFail``); the answer comes once the records are committed.
A broker still running registers again on its next heartbeat, so operators stop it first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from ..controller import messages as cm
from .access import Op, cluster_allowed
from .controller_admin import submit
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

UNREGISTER_TIMEOUT_MS = 30_000
"""The request carries no timeout; Kafka's controller bounds it by its request deadline."""


@handles(64, 0, 0)
def handle_unregister_broker(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    body = cm.UnregisterBrokerRequest(correlation_id=0, broker_id=int(request.broker_id))

    def to_wire(answer: cm.UnregisterBrokerResponse) -> Any:
        return build(
            response_class(64, ctx.api_version),
            {"throttle_time": 0, "error_code": answer.error_code, "error_message": answer.error_message},
        )

    if not cluster_allowed(broker, ctx, Op.ALTER):  # Kafka: ALTER on the cluster
        refused = ErrorCode.cluster_authorization_failed
        return Respond(to_wire(cm.UnregisterBrokerResponse(correlation_id=0, error_code=refused)))
    return submit(broker, ctx, body, to_wire, UNREGISTER_TIMEOUT_MS)
