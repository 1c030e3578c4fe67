"""DeleteTopics: v1-6. Delete topics by name (v1-5) or by name or id (v6).

Behaviour: UNKNOWN_TOPIC_OR_PARTITION for a missing name, UNKNOWN_TOPIC_ID
for a missing id, INVALID_REQUEST when a v6 entry gives both or neither.
The partitions' logs are removed from disk when the deletion is applied;
delayed fetches on them complete with UNKNOWN_TOPIC_OR_PARTITION.
A ``controller_mutation_rate`` quota (KIP-599, core/mutation_quotas.py) is charged each deleted
topic's partitions: from v5 an exhausted quota refuses the topic with THROTTLING_QUOTA_EXCEEDED,
before v5 it is deleted and the answer only throttles.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..mutation_quotas import throttle_answer
from .access import TOPIC, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

ZERO_UUID = uuid.UUID(int=0)


@handles(20, 1, 6)
def handle_delete_topics(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    wanted: list[tuple[str | None, uuid.UUID | None]] = [
        (n, None) for n in get(request, "topic_names", ()) or ()
    ]
    wanted += [
        (t.name, t.topic_id if t.topic_id != ZERO_UUID else None) for t in get(request, "topics", ()) or ()
    ]
    responses = []
    quota = broker.client_quotas.controller_mutation.quota_for(ctx)
    for name, topic_id in wanted:
        entry: dict[str, Any] = {
            "name": name,
            "topic_id": topic_id or ZERO_UUID,
            "error_code": ErrorCode.none,
            "error_message": None,
        }
        try:
            if (name is None) == (topic_id is None):
                raise KafkaError(ErrorCode.invalid_request, "give a topic name or a topic id, not both")
            if topic_id is not None:
                topic = broker.image.topic_by_id(topic_id)
                if topic is None:
                    raise KafkaError(ErrorCode.unknown_topic_id, f"no topic with id {topic_id}")
                name = entry["name"] = topic.name
            assert name is not None
            if not allowed(broker, ctx, Op.DELETE, TOPIC, name):  # Kafka: DELETE on the topic
                raise KafkaError(ErrorCode.topic_authorization_failed, "Authorization failed.")
            existing = broker.image.topics.get(name)
            if existing is not None:  # ReplicationControlManager.deleteTopic: once the topic is found
                quota.record(len(existing.partitions), ctx.received_ms)
            entry["topic_id"] = broker.controller.writer().delete_topic(name, ctx.received_ms)
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        responses.append(entry)
    broker.sync_partitions(ctx.received_ms)
    body = {"throttle_time": throttle_answer(broker, ctx, quota), "responses": responses}
    return Respond(build(response_class(20, ctx.api_version), body))
