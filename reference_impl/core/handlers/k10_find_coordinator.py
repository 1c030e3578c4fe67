"""FindCoordinator: v0-6. Which broker coordinates a consumer group (key type 0) or a transactional id (1).

Behaviour: the coordinator is the leader of the key's partition of the
internal topic (``__consumer_offsets`` or ``__transaction_state``), the
partition being ``abs(javaHashCode(key)) % partitions``. The first request
for a topic that does not exist yet creates it (compacted,
``offsets.topic.num.partitions`` partitions, replication capped at the live
brokers) and is answered COORDINATOR_NOT_AVAILABLE, as Kafka does while the
topic is being created; the client retries. A partition without a live leader
is COORDINATOR_NOT_AVAILABLE too.
Version notes: v1+ key type; v4+ batched keys (KIP-699), each with its own
error; v6 adds share coordinator keys (type 2, KIP-932): ``groupId:topicId:partition`` (Kafka's
``SharePartitionKey``), on ``__share_group_state``, CLUSTER_ACTION needed
(CLUSTER_AUTHORIZATION_FAILED), a malformed key or an older version INVALID_REQUEST.
Errors before v4 are top-level, with node -1, host "" and port -1.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..internal_topics import (
    CONSUMER_OFFSETS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    InternalTopic,
    partition_for,
)
from .access import GROUP, TXN, Op, allowed, cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

_TOPICS: dict[int, InternalTopic] = {0: CONSUMER_OFFSETS, 1: TRANSACTION_STATE, 2: SHARE_GROUP_STATE}
_MESSAGES = {
    ErrorCode.coordinator_not_available: "The coordinator is not available.",
    ErrorCode.invalid_request: "Unsupported coordinator key type.",
}


def find_coordinator(
    broker: HandlerHost, key_type: int, key: str, now_ms: int
) -> tuple[ErrorCode, int, str, int]:
    """(error, node id, host, port) of the coordinator of ``key``."""
    topic = _TOPICS.get(key_type)
    if topic is None:
        return ErrorCode.invalid_request, -1, "", -1
    info = broker.image.topics.get(topic.name)
    if info is None:
        with contextlib.suppress(KafkaError):  # a concurrent creation: the retry finds it
            topic.ensure(broker, now_ms)
        return ErrorCode.coordinator_not_available, -1, "", -1
    partition = info.partitions.get(partition_for(key, len(info.partitions)))
    node = broker.image.brokers.get(partition.leader) if partition is not None else None
    if node is None or node.fenced:
        return ErrorCode.coordinator_not_available, -1, "", -1
    return ErrorCode.none, node.node_id, node.host, node.port


def _authorized_find(
    broker: HandlerHost, ctx: RequestContext, key_type: int, key: str
) -> tuple[ErrorCode, int, str, int]:
    """Kafka's ``getCoordinator``: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the
    transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) first."""
    if key_type == 0 and not allowed(broker, ctx, Op.DESCRIBE, GROUP, key):
        return ErrorCode.group_authorization_failed, -1, "", -1
    if key_type == 1 and not allowed(broker, ctx, Op.DESCRIBE, TXN, key):
        return ErrorCode.transactional_id_authorization_failed, -1, "", -1
    if key_type == 2:
        if ctx.api_version < 6 or not _share_key(key):
            return ErrorCode.invalid_request, -1, "", -1
        if not cluster_allowed(broker, ctx, Op.CLUSTER_ACTION):
            return ErrorCode.cluster_authorization_failed, -1, "", -1
    return find_coordinator(broker, key_type, key, ctx.received_ms)


def _share_key(key: str) -> bool:
    """``SharePartitionKey.getInstance(String)``: group, topic id and partition, colon-separated."""
    parts = key.rsplit(":", 2)
    return len(parts) == 3 and all(parts) and parts[2].isdigit() and len(parts[2]) <= 10


@handles(10, 0, 6)
def handle_find_coordinator(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
    key_type = int(get(request, "key_type", 0))
    cls = response_class(10, version)
    if version < 4:
        code, node_id, host, port = _authorized_find(broker, ctx, key_type, request.key)
        host, port = broker.endpoint_for(node_id, host, port, ctx.listener)
        body: dict[str, Any] = {
            "throttle_time": 0,
            "error_code": code,
            "error_message": _MESSAGES.get(code),
            "node_id": node_id,
            "host": host,
            "port": port,
        }
        return Respond(build(cls, body))
    coordinators = []
    for key in request.coordinator_keys:
        code, node_id, host, port = _authorized_find(broker, ctx, key_type, key)
        host, port = broker.endpoint_for(node_id, host, port, ctx.listener)
        coordinators.append(
            {
                "key": key,
                "node_id": node_id,
                "host": host,
                "port": port,
                "error_code": code,
                "error_message": _MESSAGES.get(code),
            }
        )
    return Respond(build(cls, {"throttle_time": 0, "coordinators": coordinators}))
