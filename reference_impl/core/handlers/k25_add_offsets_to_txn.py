"""AddOffsetsToTxn: v0-4. Put a consumer group's offsets partition into the open transaction.

Behaviour: the group's partition of ``__consumer_offsets`` joins the
transaction, so TxnOffsetCommit offsets become visible exactly when the
transaction commits; errors as AddPartitionsToTxn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build

from ..internal_topics import CONSUMER_OFFSETS, partition_for
from .registry import Reply, Respond, handles
from .txn_common import fenced_code, run

if TYPE_CHECKING:
    from ..broker import Broker, RequestContext


@handles(25, 0, 4)
def handle_add_offsets_to_txn(broker: Broker, ctx: RequestContext, request: Any) -> Reply:
    CONSUMER_OFFSETS.ensure(broker, ctx.received_ms)
    key = (CONSUMER_OFFSETS.name, partition_for(request.group_id, CONSUMER_OFFSETS.partitions(broker)))
    code = run(
        broker,
        lambda c: c.add_partitions(
            request.transactional_id,
            int(request.producer_id),
            int(request.producer_epoch),
            [key],
            ctx.received_ms,
        ),
    )
    return Respond(
        build(
            response_class(25, ctx.api_version),
            {"throttle_time": 0, "error_code": fenced_code(code, ctx.api_version, 2)},
        )
    )
