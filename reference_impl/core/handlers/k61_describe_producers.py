"""DescribeProducers: v0. The producers with state on each partition (KIP-664).

Per producer: id, epoch, last sequence and timestamp, coordinator epoch of
its last marker, and where its open transaction started (-1 if none).
Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .access import TOPIC, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(61, 0, 0)
def handle_describe_producers(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    topics = []
    for t in request.topics:
        readable = allowed(broker, ctx, Op.READ, TOPIC, t.name)  # Kafka: READ on the topic
        partitions = []
        for index in t.partition_indexes:
            part = broker.partition(t.name, int(index))
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": ErrorCode.none,
                "error_message": None,
                "active_producers": [],
            }
            if not readable:
                entry["error_code"] = ErrorCode.topic_authorization_failed
            elif part is None:
                entry["error_code"] = ErrorCode.unknown_topic_or_partition
            elif not part.is_leader:
                entry["error_code"] = ErrorCode.not_leader_or_follower
            else:
                entry["active_producers"] = [
                    {
                        "producer_id": e.producer_id,
                        "producer_epoch": e.epoch,
                        "last_sequence": e.last_seq,
                        "last_timestamp": e.last_timestamp,
                        "coordinator_epoch": e.coordinator_epoch,
                        "current_txn_start_offset": -1
                        if e.current_txn_first_offset is None
                        else e.current_txn_first_offset,
                    }
                    for e in sorted(part.producers.producers.values(), key=lambda e: e.producer_id)
                ]
            partitions.append(entry)
        topics.append({"name": t.name, "partitions": partitions})
    return Respond(build(response_class(61, ctx.api_version), {"throttle_time": 0, "topics": topics}))
