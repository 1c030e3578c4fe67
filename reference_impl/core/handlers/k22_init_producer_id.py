"""InitProducerId: v0-5. A producer id and epoch for an idempotent or transactional producer.

Behaviour: without a transactional id the request is always granted a new
producer id with epoch 0 (Kafka hands idempotent producers a fresh id even
when they name their old one, KIP-360). Producer ids come in blocks recorded
in the metadata log, so none is handed out twice across restarts. With a
transactional id the transaction coordinator answers (fencing older epochs).
Version notes: v3+ carries the current producer id and epoch (KIP-360);
v6 (KIP-939 two-phase commit) is not implemented.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..broker import Broker, RequestContext


@handles(22, 0, 5)
def handle_init_producer_id(broker: Broker, ctx: RequestContext, request: Any) -> Reply:
    if request.transactional_id is None:
        pid = broker.controller.allocate_producer_id(ctx.received_ms)
        body: dict[str, Any] = {"error_code": ErrorCode.none, "producer_id": pid, "producer_epoch": 0}
    else:
        body = {"error_code": ErrorCode.not_coordinator, "producer_id": -1, "producer_epoch": -1}
    return Respond(build(response_class(22, ctx.api_version), {"throttle_time": 0, **body}))
