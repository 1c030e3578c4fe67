"""Metadata: v0-13. Brokers, the controller, and topics with their partitions.

Behaviour: topics null (v1+; empty in v0) lists every topic but the internal
metadata log; a named topic that does not exist is created when
``allow_auto_topic_creation`` (v4+, always in older versions) and the broker's
``auto.create.topics.enable`` are both true, and is answered with
LEADER_NOT_AVAILABLE this time, as Kafka answers while creation completes;
otherwise UNKNOWN_TOPIC_OR_PARTITION. An illegal name gets
INVALID_TOPIC_EXCEPTION. Topics asked for by id (v12+, name null) that do
not exist get UNKNOWN_TOPIC_ID; v10-11 carry the id and the nullable name but
may not use them, and such a request is answered INVALID_REQUEST for every topic.
With an authorizer (issue 18, Kafka's ``KafkaApis.handleTopicMetadataRequest``): the full list
holds only the topics the principal may DESCRIBE; a topic asked for without DESCRIBE is
TOPIC_AUTHORIZATION_FAILED whether it exists or not; auto-creation needs CREATE on the cluster or
on the topic (else TOPIC_AUTHORIZATION_FAILED); ``include_topic_authorized_operations`` (v8+) and
``include_cluster_authorized_operations`` (v8-10) fill the bitfields (else ``Integer.MIN_VALUE``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..controller.writer import NewTopic, validate_topic_name
from ..metadata.image import TopicInfo
from .access import CLUSTER, TOPIC, Op, allowed, bitfield, cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

ZERO_UUID = uuid.UUID(int=0)


def topic_entry(broker: HandlerHost, topic: TopicInfo) -> dict[str, Any]:
    partitions = []
    for p in sorted(topic.partitions.values(), key=lambda p: p.partition):
        alive = {b for b, info in broker.image.brokers.items() if not info.fenced}
        offline = [r for r in p.replicas if r not in alive]
        partitions.append(
            {
                "error_code": ErrorCode.none if p.leader >= 0 else ErrorCode.leader_not_available,
                "partition_index": p.partition,
                "leader_id": p.leader,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": list(p.replicas),
                "isr_nodes": list(p.isr),
                "offline_replicas": offline,
            }
        )
    return {
        "error_code": 0,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": partitions,
    }


def _error_entry(name: str | None, code: ErrorCode, topic_id: uuid.UUID = ZERO_UUID) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False, "partitions": []}


@handles(3, 0, 13)
def handle_metadata(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
    requested = request.topics
    if (
        requested is not None
        and version < 12
        and any(t.name is None or get(t, "topic_id", None) not in (None, ZERO_UUID) for t in requested)
    ):
        return Respond(_invalid_request_answer(version, requested))

    def described(name: str) -> bool:
        return allowed(broker, ctx, Op.DESCRIBE, TOPIC, name)

    if requested is None or (version == 0 and not requested):
        topics = [
            topic_entry(broker, t)
            for t in sorted(broker.image.topics.values(), key=lambda t: t.name)
            if described(t.name)
        ]
    else:
        allow_auto = bool(get(request, "allow_auto_topic_creation", True)) and broker.config.get_bool(
            "auto.create.topics.enable"
        )
        topics = []
        for wanted in requested:
            name = wanted.name
            if name is None:
                topic_id = get(wanted, "topic_id", None)
                found = broker.image.topic_by_id(topic_id) if topic_id else None
                if found is not None and not described(found.name):
                    topics.append(_error_entry(None, ErrorCode.topic_authorization_failed, found.topic_id))
                    continue
                topics.append(
                    topic_entry(broker, found)
                    if found
                    else _error_entry(None, ErrorCode.unknown_topic_id, topic_id or ZERO_UUID)
                )
                continue
            if not described(name):
                topics.append(_error_entry(name, ErrorCode.topic_authorization_failed))
                continue
            topic = broker.image.topics.get(name)
            if topic is not None:
                topics.append(topic_entry(broker, topic))
                continue
            if allow_auto and not (
                cluster_allowed(broker, ctx, Op.CREATE) or allowed(broker, ctx, Op.CREATE, TOPIC, name)
            ):
                topics.append(_error_entry(name, ErrorCode.topic_authorization_failed))
                continue
            topics.append(_error_entry(name, _auto_create(broker, name, allow_auto, ctx.received_ms)))
    wants_topic_ops = get(request, "include_topic_authorized_operations", False)
    for entry in topics:
        entry["topic_authorized_operations"] = (
            bitfield(broker, ctx, wants_topic_ops, TOPIC, entry["name"])
            if entry["error_code"] in (ErrorCode.none, 0) and entry["name"]
            else bitfield(broker, ctx, False, TOPIC, "")
        )
    brokers = [
        {"node_id": b.node_id, "host": h, "port": p, "rack": b.rack}
        for b in sorted(broker.image.brokers.values(), key=lambda b: b.node_id)
        if not b.fenced
        for h, p in [broker.endpoint_for(b.node_id, b.host, b.port, ctx.listener)]
    ]
    return Respond(
        build(
            response_class(3, version),
            {
                "throttle_time": 0,
                "brokers": brokers,
                "cluster_id": broker.image.cluster_id,
                "controller_id": broker.controller_for_clients(),
                "topics": topics,
                "error_code": 0,
                "cluster_authorized_operations": bitfield(
                    broker,
                    ctx,
                    get(request, "include_cluster_authorized_operations", False),
                    CLUSTER,
                    "kafka-cluster",
                ),
            },
        )
    )


def _invalid_request_answer(version: int, requested: Any) -> Any:
    """v10-11 carry topic ids and nullable names but cannot use them: Kafka's KafkaApis refuses a null
    name or a non-zero id there (InvalidRequestException) and MetadataRequest.getErrorResponse answers
    every requested topic INVALID_REQUEST, a null name as "" (the response's name is not nullable
    before v12)."""
    return build(
        response_class(3, version),
        {
            "throttle_time": 0,
            "brokers": [],
            "topics": [
                _error_entry(t.name or "", ErrorCode.invalid_request, get(t, "topic_id", None) or ZERO_UUID)
                for t in requested
            ],
        },
    )


def _auto_create(broker: HandlerHost, name: str, allowed: bool, now_ms: int) -> ErrorCode:
    try:
        validate_topic_name(name)
    except KafkaError as exc:
        return exc.code
    if not allowed:
        return ErrorCode.unknown_topic_or_partition
    try:
        topic = NewTopic(
            name,
            default_partitions=broker.config.get_int("num.partitions"),
            default_replication=broker.config.get_int("default.replication.factor"),
        )
        broker.controller.create_topic(topic, validate_only=False, now_ms=now_ms)
    except KafkaError as exc:
        creating = (ErrorCode.topic_already_exists, ErrorCode.topic_authorization_failed)
        return ErrorCode.leader_not_available if exc.code in creating else exc.code
    broker.sync_partitions(now_ms)
    return ErrorCode.leader_not_available
