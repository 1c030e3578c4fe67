"""EndTxn: v0-4. Commit or abort the producer's open transaction.

Behaviour: the coordinator writes PrepareCommit/PrepareAbort and answers once
the ISR has it; then a marker goes to every partition of the transaction, at
its leader, then CompleteCommit/CompleteAbort (requests meanwhile get
CONCURRENT_TRANSACTIONS); a retry of a completed EndTxn with the same outcome succeeds; otherwise
INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
(INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS.
Not implemented: v5 (transaction version 2, KIP-890).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode

from .access import TXN, Op, allowed
from .registry import Reply, Respond, handles
from .txn_common import TxnReply, error_code_only

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(26, 0, 4)
def handle_end_txn(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    render = error_code_only(26, ctx)
    if not allowed(broker, ctx, Op.WRITE, TXN, request.transactional_id):  # Kafka: WRITE on the id
        return Respond(render(ErrorCode.transactional_id_authorization_failed))
    reply = TxnReply(broker, ctx, render, ErrorCode.coordinator_not_available)
    return reply.run(
        lambda c: c.end_txn(
            request.transactional_id,
            int(request.producer_id),
            int(request.producer_epoch),
            bool(request.committed),
            ctx.received_ms,
            reply.answer,
        ),
        lambda code: code,
    )
