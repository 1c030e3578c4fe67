"""AddOffsetsToTxn: v0-4. Put a consumer group's offsets partition into the open transaction.

Behaviour: the group's partition of ``__consumer_offsets`` joins the
transaction, so TxnOffsetCommit offsets become visible exactly when the
transaction commits; errors as AddPartitionsToTxn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode

from ..internal_topics import CONSUMER_OFFSETS, partition_for
from .access import GROUP, TXN, Op, allowed
from .registry import Reply, Respond, handles
from .txn_common import TxnReply, error_code_only

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(25, 0, 4)
def handle_add_offsets_to_txn(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if not allowed(broker, ctx, Op.WRITE, TXN, request.transactional_id):  # Kafka: WRITE on the id,
        return Respond(error_code_only(25, ctx)(ErrorCode.transactional_id_authorization_failed))
    if not allowed(broker, ctx, Op.READ, GROUP, request.group_id):  # then READ on the group
        return Respond(error_code_only(25, ctx)(ErrorCode.group_authorization_failed))
    CONSUMER_OFFSETS.ensure(broker, ctx.received_ms)
    key = (CONSUMER_OFFSETS.name, partition_for(request.group_id, CONSUMER_OFFSETS.partitions(broker)))

    render = error_code_only(25, ctx)
    reply = TxnReply(broker, ctx, render, ErrorCode.coordinator_not_available)
    return reply.run(
        lambda c: c.add_partitions(
            request.transactional_id,
            int(request.producer_id),
            int(request.producer_epoch),
            [key],
            ctx.received_ms,
            reply.answer,
        ),
        lambda code: code,
    )
