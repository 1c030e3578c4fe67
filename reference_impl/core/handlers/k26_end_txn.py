"""EndTxn: v0-5. Commit or abort the producer's open transaction.

Behaviour: the coordinator writes PrepareCommit/PrepareAbort and answers once
the ISR has it; then a marker goes to every partition of the transaction, at
its leader, then CompleteCommit/CompleteAbort (requests meanwhile get
CONCURRENT_TRANSACTIONS); a retry of a completed EndTxn with the same outcome succeeds; otherwise
INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
(INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS.
v5 is transaction version 2 (KIP-890), decided from the request version as Kafka's
``TransactionVersion.transactionVersionForEndTxn`` does
(server-common/src/main/java/org/apache/kafka/server/common/TransactionVersion.java), whatever
``transaction.version`` is finalized: every end bumps the producer epoch (the markers carry the new
one, fencing the ended transaction's writes and late markers), an exhausted epoch hands over a new
producer id at epoch 0, and the answer carries the producer id and epoch to use next; a retry is
the request at the epoch just below (answered with the current id and epoch), and an abort with
nothing open still bumps the epoch (Kafka's ``TransactionCoordinator.endTransaction`` table).
Versions 0-4 keep the version 1 rules (no bump; the answer has no id and epoch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .access import TXN, Op, allowed
from .registry import Reply, Respond, handles
from .txn_common import TxnReply, fenced_code

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

FIRST_TV2_VERSION = 5


@handles(26, 0, 5)
def handle_end_txn(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def render(answer: tuple[ErrorCode, int, int]) -> Any:
        code, pid, epoch = answer
        body: dict[str, Any] = {"throttle_time": 0, "error_code": fenced_code(code, ctx.api_version, 2)}
        if ctx.api_version >= FIRST_TV2_VERSION:
            body.update(producer_id=pid, producer_epoch=epoch)
        return build(response_class(26, ctx.api_version), body)

    if not allowed(broker, ctx, Op.WRITE, TXN, request.transactional_id):  # Kafka: WRITE on the id
        return Respond(render((ErrorCode.transactional_id_authorization_failed, -1, -1)))
    reply = TxnReply(broker, ctx, render, (ErrorCode.coordinator_not_available, -1, -1))
    return reply.run(
        lambda c: c.end_txn(
            request.transactional_id,
            int(request.producer_id),
            int(request.producer_epoch),
            bool(request.committed),
            ctx.received_ms,
            lambda code, pid, epoch: reply.answer((code, pid, epoch)),
            bump=ctx.api_version >= FIRST_TV2_VERSION,
        ),
        lambda code: (code, -1, -1),
    )
