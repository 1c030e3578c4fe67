"""CreatePartitions: v0-3. Add partitions to a topic (never remove them).

Behaviour: INVALID_PARTITIONS when the count is not above the current one,
INVALID_REPLICA_ASSIGNMENT when the assignment does not fit, UNKNOWN_TOPIC_OR_PARTITION
for a missing topic, INVALID_REQUEST for a topic listed twice; ``validate_only``.
A request adding more than 10,000 partitions in all is refused whole with
POLICY_VIOLATION on every topic: Kafka's controller bounds the records of one
operation at 10,000 (``QuorumController.MAX_RECORDS_PER_USER_OP``, a
``BoundedList``) and refuses CreateTopics the same way.
A ``controller_mutation_rate`` quota (KIP-599, core/mutation_quotas.py) is charged the partitions
added once the topic's other checks pass: from v3 an exhausted quota refuses the topic with
THROTTLING_QUOTA_EXCEEDED, before v3 they are added and the answer only throttles.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..controller.writer import excessive_partitions
from ..mutation_quotas import throttle_answer
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
    quota = broker.client_quotas.controller_mutation.quota_for(ctx)
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
            if quota.enabled:  # ReplicationControlManager.createPartitions: after the topic's checks
                broker.controller.writer().create_partitions(
                    t.name, int(t.count), assignments, validate_only=True, now_ms=ctx.received_ms
                )
                quota.record(_added(broker, t.name, int(t.count)), ctx.received_ms)
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
    body = {"throttle_time": throttle_answer(broker, ctx, quota), "results": results}
    return Respond(build(response_class(37, ctx.api_version), body))


def _added(broker: HandlerHost, name: str, count: int) -> int:
    """Partitions the entry would add to the topic as this broker's image knows it (0 if none)."""
    topic = broker.image.topics.get(name)
    return max(count - len(topic.partitions), 0) if topic is not None else 0
