"""InitProducerId: v0-5. A producer id and epoch for an idempotent or transactional producer.

Behaviour: without a transactional id the request is always granted a new
producer id with epoch 0 (Kafka hands idempotent producers a fresh id even
when they name their old one, KIP-360). Producer ids come in blocks recorded
in the metadata log, so none is handed out twice across restarts. With a
transactional id the transaction coordinator bumps the epoch, fencing older
producers, and answers once the ISR has the new state; an open transaction
of the fenced producer is aborted first and the caller told
CONCURRENT_TRANSACTIONS (retriable). INVALID_TRANSACTION_TIMEOUT above
``transaction.max.timeout.ms``. An empty transactional id is INVALID_REQUEST
(Kafka's ``TransactionCoordinator.handleInitProducerId``: "consistent with
the producer client", which refuses one), on any broker.
Version notes: v3+ carries the current producer id and epoch (KIP-360);
v4+ PRODUCER_FENCED (older versions: INVALID_PRODUCER_EPOCH); v6 (KIP-939
two-phase commit) is not implemented.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl import defects
from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get, millis
from reference_impl.protocol.errors import ErrorCode, KafkaError

from .access import TOPIC, TXN, Op, allowed, any_allowed, cluster_allowed
from .registry import Reply, Respond, handles
from .txn_common import TxnReply, fenced_code

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(22, 0, 5)
def handle_init_producer_id(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def render(answer: tuple[ErrorCode, int, int]) -> Any:
        code, pid, epoch = answer
        return build(
            response_class(22, ctx.api_version),
            {
                "throttle_time": 0,
                "error_code": fenced_code(code, ctx.api_version, 4),
                "producer_id": pid,
                "producer_epoch": epoch,
            },
        )

    if request.transactional_id == "" and not defects.enabled(defects.INTERNAL_TOPIC_WRITES):
        return Respond(render((ErrorCode.invalid_request, -1, -1)))
    if request.transactional_id is not None and not allowed(
        broker, ctx, Op.WRITE, TXN, request.transactional_id
    ):  # Kafka's handleInitProducerIdRequest: WRITE on the transactional id
        return Respond(render((ErrorCode.transactional_id_authorization_failed, -1, -1)))
    if request.transactional_id is None and not (
        cluster_allowed(broker, ctx, Op.IDEMPOTENT_WRITE) or any_allowed(broker, ctx, Op.WRITE, TOPIC)
    ):  # idempotence: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679)
        return Respond(render((ErrorCode.cluster_authorization_failed, -1, -1)))
    if request.transactional_id is None:
        try:
            pid = broker.controller.allocate_producer_id(ctx.received_ms)
            code, epoch = ErrorCode.none, 0
        except KafkaError as exc:  # a cluster broker waiting for its first block of ids
            code, pid, epoch = exc.code, -1, -1
        return Respond(render((code, pid, epoch)))
    reply = TxnReply(broker, ctx, render, (ErrorCode.coordinator_not_available, -1, -1))
    return reply.run(
        lambda c: c.init_producer_id(
            request.transactional_id,
            millis(request.transaction_timeout),
            int(get(request, "producer_id", -1)),
            int(get(request, "producer_epoch", -1)),
            ctx.received_ms,
            lambda code, pid, epoch: reply.answer((code, pid, epoch)),
        ),
        lambda code: (code, -1, -1),
    )
