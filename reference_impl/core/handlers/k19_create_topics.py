"""CreateTopics: v2-7. Create topics with partitions, replication factor, assignment and configs.

Behaviour: -1 partitions or replication factor take the broker defaults
(``num.partitions``, ``default.replication.factor``); ``validate_only``
checks without creating; a topic listed twice gets INVALID_REQUEST; other
errors come from the controller (TOPIC_ALREADY_EXISTS,
INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR,
INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG). A request asking for more than
10,000 partitions in all is refused whole: every topic gets POLICY_VIOLATION
(Kafka's ``ReplicationControlManager.validateTotalNumberOfPartitions``).
A ``controller_mutation_rate`` quota (KIP-599, core/mutation_quotas.py) is charged each topic's
partitions once its other checks pass: from v6 an exhausted quota refuses the topic with
THROTTLING_QUOTA_EXCEEDED, before v6 the topic is created and the answer only throttles.
Version notes: v5+ returns partitions, replication factor and the topic's
configs; v7+ the topic id.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..configs.resolution import describe_topic_configs
from ..controller.writer import NewTopic, excessive_partitions, requested_partitions
from ..mutation_quotas import throttle_answer
from .access import TOPIC, Op, allowed, cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(19, 2, 7)
def handle_create_topics(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    counts = Counter(t.name for t in request.topics)
    default_partitions = broker.config.get_int("num.partitions")
    refused = excessive_partitions(
        sum(
            requested_partitions(int(t.num_partitions), len(t.assignments), default_partitions)
            for t in request.topics
        )
    )
    results = []
    may_create_any = cluster_allowed(broker, ctx, Op.CREATE)
    quota = broker.client_quotas.controller_mutation.quota_for(ctx)
    for t in request.topics:
        result: dict[str, Any] = {
            "name": t.name,
            "error_code": ErrorCode.none,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
            "topic_id": uuid.UUID(int=0),
        }
        try:
            if refused is not None:
                raise refused
            if counts[t.name] > 1:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Create topics request from client `{ctx.client_id}` contains multiple "
                    f"entries for the following topics: {t.name}",
                )
            if not (may_create_any or allowed(broker, ctx, Op.CREATE, TOPIC, t.name)):
                raise KafkaError(ErrorCode.topic_authorization_failed, "Authorization failed.")
            assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            topic = NewTopic(
                t.name,
                int(t.num_partitions),
                int(t.replication_factor),
                assignments or None,
                {c.name: c.value for c in t.configs},
                default_partitions=default_partitions,
                default_replication=broker.config.get_int("default.replication.factor"),
            )
            if quota.enabled:  # ReplicationControlManager.createTopic: after the topic's checks
                checked = broker.controller.create_topic(topic, validate_only=True, now_ms=ctx.received_ms)
                quota.record(checked.num_partitions, ctx.received_ms)
            created = broker.controller.create_topic(
                topic, validate_only=bool(request.validate_only), now_ms=ctx.received_ms
            )
        except KafkaError as exc:
            result.update(error_code=exc.code, error_message=exc.message)
        else:
            configs = [
                {
                    "name": e.name,
                    "value": e.value,
                    "read_only": e.read_only,
                    "config_source": int(e.source),
                    "is_sensitive": False,
                }
                for e in describe_topic_configs(created.configs, broker.config)
            ]
            if not allowed(broker, ctx, Op.DESCRIBE_CONFIGS, TOPIC, t.name):  # Kafka hides them (v5+)
                configs = []
                result["topic_config_error_code"] = ErrorCode.topic_authorization_failed
            result.update(
                num_partitions=created.num_partitions,
                replication_factor=created.replication_factor,
                configs=configs,
                topic_id=created.topic_id,
            )
        results.append(result)
    broker.sync_partitions(ctx.received_ms)
    body = {"throttle_time": throttle_answer(broker, ctx, quota), "topics": results}
    return Respond(build(response_class(19, ctx.api_version), body))
