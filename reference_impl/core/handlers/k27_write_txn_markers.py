"""WriteTxnMarkers: v1-2. Write COMMIT or ABORT markers to partitions this broker leads.

Sent by a transaction coordinator to partition leaders. Errors per partition:
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH,
TRANSACTION_COORDINATOR_FENCED (an older coordinator epoch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..broker import Broker, RequestContext


@handles(27, 1, 2)
def handle_write_txn_markers(broker: Broker, ctx: RequestContext, request: Any) -> Reply:
    markers = []
    for m in request.markers:
        topics = []
        for t in m.topics:
            partitions = []
            for index in t.partition_indexes:
                part = broker.partition(t.name, int(index))
                code = ErrorCode.none
                try:
                    if part is None:
                        raise KafkaError(ErrorCode.unknown_topic_or_partition)
                    part.append_marker(
                        int(m.producer_id),
                        int(m.producer_epoch),
                        int(m.coordinator_epoch),
                        bool(m.transaction_result),
                        ctx.received_ms,
                    )
                    broker.notify_partition_changed(part.key, ctx.received_ms)
                    for listener in broker.txn_coordinator.marker_listeners:
                        listener(part.key, int(m.producer_id), bool(m.transaction_result), ctx.received_ms)
                except KafkaError as exc:
                    code = exc.code
                partitions.append({"partition_index": index, "error_code": code})
            topics.append({"name": t.name, "partitions": partitions})
        markers.append({"producer_id": m.producer_id, "topics": topics})
    return Respond(build(response_class(27, ctx.api_version), {"markers": markers}))
