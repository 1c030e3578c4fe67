"""CreatePartitions: v0-3. Add partitions to a topic (never remove them).

Behaviour: INVALID_PARTITIONS when the count is not above the current one,
INVALID_REPLICA_ASSIGNMENT when the assignment does not fit, UNKNOWN_TOPIC_OR_PARTITION
for a missing topic, INVALID_REQUEST for a topic listed twice; ``validate_only``.
A request adding more than 10,000 partitions in all is refused whole with
POLICY_VIOLATION on every topic: Kafka's controller bounds the records of one
operation at 10,000 (``QuorumController.MAX_RECORDS_PER_USER_OP``, a
``BoundedList``) and refuses CreateTopics the same way.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..controller.writer import excessive_partitions
from .access import TOPIC, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(37, 0, 3)
def handle_create_partitions(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    counts = Counter(t.name for t in request.topics)
    refused = excessive_partitions(sum(_added(broker, t.name, int(t.count)) for t in request.topics))
    results = []
    for t in request.topics:
        entry: dict[str, Any] = {"name": t.name, "error_code": ErrorCode.none, "error_message": None}
        try:
            if refused is not None:
                raise refused
            if counts[t.name] > 1:
                raise KafkaError(ErrorCode.invalid_request, f"topic {t.name} listed twice")
            if not allowed(broker, ctx, Op.ALTER, TOPIC, t.name):  # Kafka: ALTER on the topic
                raise KafkaError(ErrorCode.topic_authorization_failed, "The topic authorization failed.")
            assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
            broker.controller.writer().create_partitions(
                t.name,
                int(t.count),
                assignments,
                validate_only=bool(request.validate_only),
                now_ms=ctx.received_ms,
            )
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        results.append(entry)
    broker.sync_partitions(ctx.received_ms)
    return Respond(build(response_class(37, ctx.api_version), {"throttle_time": 0, "results": results}))


def _added(broker: HandlerHost, name: str, count: int) -> int:
    """Partitions the entry would add to the topic as this broker's image knows it (0 if none)."""
    topic = broker.image.topics.get(name)
    return max(count - len(topic.partitions), 0) if topic is not None else 0
