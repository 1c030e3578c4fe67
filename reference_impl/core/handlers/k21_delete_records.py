"""DeleteRecords: v0-2. Move a partition's log start offset forward.

Behaviour: offset -1 means the high watermark; above the high watermark is
OFFSET_OUT_OF_RANGE; the answer's ``low_watermark`` is the new log start
offset. Records below it are no longer readable at once; their segments
are deleted by the next retention pass. An internal topic's records are its
coordinator's: INVALID_TOPIC_EXCEPTION (Kafka's ``ReplicaManager.deleteRecordsOnLocalLog``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..internal_topics import refuses_client_writes
from .access import TOPIC, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(21, 0, 2)
def handle_delete_records(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    topics = []
    for t in request.topics:
        deletable = allowed(broker, ctx, Op.DELETE, TOPIC, t.name)  # Kafka: DELETE on the topic
        partitions = []
        for p in t.partitions:
            entry: dict[str, Any] = {"partition_index": p.partition_index, "low_watermark": -1}
            part = broker.partition(t.name, p.partition_index)
            try:
                if not deletable:
                    raise KafkaError(ErrorCode.topic_authorization_failed)
                if part is None:
                    raise KafkaError(ErrorCode.unknown_topic_or_partition)
                if refuses_client_writes(part.topic):
                    raise KafkaError(ErrorCode.invalid_topic_exception)
                part.check_online()
                entry["low_watermark"] = part.delete_records_before(int(p.offset))
                entry["error_code"] = ErrorCode.none
                broker.notify_partition_changed(part.key, ctx.received_ms)
            except KafkaError as exc:
                entry["error_code"] = exc.code
            partitions.append(entry)
        topics.append({"name": t.name, "partitions": partitions})
    return Respond(build(response_class(21, ctx.api_version), {"throttle_time": 0, "topics": topics}))
