"""EndTxn: v0-4. Commit or abort the producer's open transaction.

Behaviour: the coordinator writes PrepareCommit/PrepareAbort, a marker to
every partition of the transaction, then CompleteCommit/CompleteAbort; a
retry of a completed EndTxn with the same outcome succeeds; otherwise
INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
(INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS.
Not implemented: v5 (transaction version 2, KIP-890).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build

from .registry import Reply, Respond, handles
from .txn_common import fenced_code, run

if TYPE_CHECKING:
    from ..broker import Broker, RequestContext


@handles(26, 0, 4)
def handle_end_txn(broker: Broker, ctx: RequestContext, request: Any) -> Reply:
    code = run(
        broker,
        lambda c: c.end_txn(
            request.transactional_id,
            int(request.producer_id),
            int(request.producer_epoch),
            bool(request.committed),
            ctx.received_ms,
        ),
    )
    return Respond(
        build(
            response_class(26, ctx.api_version),
            {"throttle_time": 0, "error_code": fenced_code(code, ctx.api_version, 2)},
        )
    )
