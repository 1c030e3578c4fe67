"""DescribeTransactions: v0. The state of transactional ids (KIP-664).

TRANSACTIONAL_ID_NOT_FOUND for an id the coordinator does not know.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .access import TXN, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(65, 0, 0)
def handle_describe_transactions(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    states = []
    for txn_id in request.transactional_ids:
        meta = broker.txn_coordinator.txns.get(txn_id)
        described = allowed(broker, ctx, Op.DESCRIBE, TXN, txn_id)  # Kafka: DESCRIBE on the id
        if meta is None or not described:
            states.append(
                {
                    "error_code": ErrorCode.transactional_id_not_found
                    if described
                    else ErrorCode.transactional_id_authorization_failed,
                    "transactional_id": txn_id,
                    "transaction_state": "",
                    "transaction_timeout": 0,
                    "transaction_start_time": -1,
                    "producer_id": -1,
                    "producer_epoch": -1,
                    "topics": [],
                }
            )
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(p)
        states.append(
            {
                "error_code": ErrorCode.none,
                "transactional_id": txn_id,
                "transaction_state": meta.state.label,
                "transaction_timeout": meta.timeout_ms,
                "transaction_start_time": meta.start_ms,
                "producer_id": meta.producer_id,
                "producer_epoch": meta.producer_epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            }
        )
    return Respond(
        build(response_class(65, ctx.api_version), {"throttle_time": 0, "transaction_states": states})
    )
