"""DescribeTopicPartitions (KIP-966): v0. Topics and their partitions, paginated.

What Kafka does (``core/src/main/java/kafka/server/handlers/DescribeTopicPartitionsRequestHandler.java``
and ``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse`` in
``core/src/main/scala/kafka/server/metadata/KRaftMetadataCache.scala``), and so this handler:

* An empty topic list means every topic the principal may DESCRIBE (unauthorized ones are left out
  silently); named topics without DESCRIBE are answered TOPIC_AUTHORIZATION_FAILED with the zero
  topic id, after the others; a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (or
  INVALID_TOPIC_EXCEPTION for a name Kafka refuses) and takes no room in the page.
* Topics come in name order, starting at the cursor's topic (names ``>=`` it); the cursor's
  partition index is where that topic starts (0 if the cursor topic is not authorized). With named
  topics, the cursor's topic must be one of them, else the whole request is INVALID_REQUEST (each
  named topic answered with that code, as ``DescribeTopicPartitionsRequest.getErrorResponse``).
* At most ``min(response_partition_limit, max.request.partition.size.limit)`` partitions are
  returned. When a topic's partitions do not all fit, the topic is answered with the ones that do
  and ``next_cursor`` names it and its first partition left out; when the page is full exactly at
  a topic's end and more topics follow, ``next_cursor`` is the next topic at partition 0.
* Each partition: leader (-1 when its broker is not registered), epoch, replicas, ISR, offline
  replicas, error NONE. Eligible leader replicas (KIP-966 part 1) are not kept by the reference's
  controller; Kafka with ``eligible.leader.replicas.version`` at 0 (ELR off, 4.0's default) keeps
  them empty, and answers ``[]`` for ``eligible_leader_replicas`` and
  ``last_known_elr`` (``Replicas.toList`` of an empty array), which is what is answered here.
  (Gap ledger: docs/APIVERSIONS.md.)
* ``topic_authorized_operations`` is always filled (the request has no flag for it).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..controller.writer import validate_topic_name
from ..metadata.image import TopicInfo
from .access import TOPIC, Op, allowed, bitfield
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

ZERO_UUID = uuid.UUID(int=0)
API_KEY = 75


def _partition(registered: set[int], alive: set[int], topic: TopicInfo, index: int) -> dict[str, Any] | None:
    p = topic.partitions.get(index)
    if p is None:
        return None
    return {
        "error_code": ErrorCode.none,
        "partition_index": index,
        "leader_id": p.leader if p.leader in registered else -1,
        "leader_epoch": p.leader_epoch,
        "replica_nodes": list(p.replicas),
        "isr_nodes": list(p.isr),
        "eligible_leader_replicas": [],
        "last_known_elr": [],
        "offline_replicas": [r for r in p.replicas if r not in alive],
    }


def _topic(
    code: ErrorCode, name: str, topic_id: uuid.UUID, internal: bool, parts: list[Any]
) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": topic_id,
        "is_internal": internal,
        "partitions": parts,
        "topic_authorized_operations": -(2**31),
    }


def _answer(version: int, topics: list[dict[str, Any]], cursor: dict[str, Any] | None) -> Respond:
    return Respond(
        build(
            response_class(API_KEY, version),
            {"throttle_time": 0, "topics": topics, "next_cursor": cursor},
        )
    )


@handles(API_KEY, 0, 0)
def handle_describe_topic_partitions(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
    cursor = request.cursor
    cursor_name = cursor.topic_name if cursor is not None else ""
    fetch_all = not request.topics
    if fetch_all:
        wanted = {name for name in broker.image.topics if name >= cursor_name}
    else:
        wanted = {t.name for t in request.topics if t.name >= cursor_name}
        if cursor is not None and cursor.topic_name not in wanted:
            named = sorted({t.name for t in request.topics})
            return _answer(
                version, [_topic(ErrorCode.invalid_request, n, ZERO_UUID, False, []) for n in named], None
            )
    refused = (
        [] if fetch_all else [n for n in sorted(wanted) if not allowed(broker, ctx, Op.DESCRIBE, TOPIC, n)]
    )
    names = sorted(
        n
        for n in wanted
        if n not in refused and (not fetch_all or allowed(broker, ctx, Op.DESCRIBE, TOPIC, n))
    )
    first_index = (
        int(cursor.partition_index)
        if cursor is not None and cursor_name and allowed(broker, ctx, Op.DESCRIBE, TOPIC, cursor_name)
        else 0
    )
    limit = min(
        int(request.response_partition_limit), broker.config.get_int("max.request.partition.size.limit")
    )
    registered = set(broker.image.brokers)
    alive = {b for b, info in broker.image.brokers.items() if not info.fenced}
    remaining = limit
    answered: list[dict[str, Any]] = []
    next_cursor: dict[str, Any] | None = None
    for name in names:
        if remaining <= 0:
            if remaining == 0:
                next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = broker.image.topics.get(name)
        if topic is None:
            if not fetch_all:
                try:
                    validate_topic_name(name)
                    code = ErrorCode.unknown_topic_or_partition
                except KafkaError:
                    code = ErrorCode.invalid_topic_exception
                answered.append(_topic(code, name, ZERO_UUID, False, []))
            continue
        start = first_index if name == cursor_name else 0
        count = len(topic.partitions)
        upper = min(count, max(start, 0) + remaining)
        parts = [
            entry
            for i in range(max(start, 0), upper)
            if (entry := _partition(registered, alive, topic, i)) is not None
        ]
        entry = _topic(ErrorCode.none, name, topic.topic_id, topic.is_internal, parts)
        entry["topic_authorized_operations"] = bitfield(broker, ctx, True, TOPIC, name)
        answered.append(entry)
        if upper < count:
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= len(parts)
    answered.extend(_topic(ErrorCode.topic_authorization_failed, n, ZERO_UUID, False, []) for n in refused)
    return _answer(version, answered, next_cursor)
