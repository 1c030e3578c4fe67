"""OffsetFetch: v1-10. A group's committed offsets, for named partitions or all of them.

Behaviour: a partition without a committed offset (or of an unknown group
or topic) answers offset -1, leader epoch -1, metadata "". With
``require_stable`` (v7+) a partition whose offset is pending in an open
transaction answers UNSTABLE_OFFSET_COMMIT (retriable).
Errors for a group: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
(top-level from v2, per partition in v1).
Version notes: v2+ a null topic list asks for every committed offset, and a
top-level error; v5+ leader epochs; v7+ ``require_stable``; v8+ several
groups per request (KIP-709); v9+ member id and epoch: for a KIP-848
consumer-protocol group, a member id or epoch >= 0 must name a member at its
current epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; ``ConsumerGroup.validateOffsetFetch``);
ignored by classic groups; v10 topics by id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from .access import GROUP, TOPIC, Op, allowed, unchecked
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


def _partition(index: int, offset: Any, code: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": offset.offset if offset is not None else -1,
        "committed_leader_epoch": offset.leader_epoch if offset is not None else -1,
        "metadata": offset.metadata if offset is not None else "",
        "error_code": code,
    }


def fetch_group(
    broker: HandlerHost,
    ctx: RequestContext,
    group_id: str,
    wanted: list[tuple[str, list[int]]] | None,
    stable: bool,
    now_ms: int,
    member: tuple[str | None, int] = (None, -1),
) -> tuple[ErrorCode, dict[str, list[dict[str, Any]]]]:
    """The group's error and its partitions by topic, in request order. With an authorizer (Kafka's
    ``handleOffsetFetchRequest``): GROUP_AUTHORIZATION_FAILED without DESCRIBE on the group; topics
    without DESCRIBE are TOPIC_AUTHORIZATION_FAILED when named, left out when all are asked for."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    if not allowed(broker, ctx, Op.DESCRIBE, GROUP, group_id):
        code = ErrorCode.group_authorization_failed
        for topic, partitions in wanted or []:
            by_topic[topic] = [_partition(p, None, code) for p in partitions]
        return code, by_topic
    if not unchecked(broker, ctx):
        denied = {t for t, _ in wanted or [] if not allowed(broker, ctx, Op.DESCRIBE, TOPIC, t)}
        if denied and wanted is not None:
            error, found = fetch_group(
                broker, ctx, group_id, [w for w in wanted if w[0] not in denied], stable, now_ms
            )
            code = ErrorCode.topic_authorization_failed
            for topic, partitions in wanted:
                by_topic[topic] = (
                    [_partition(p, None, code) for p in partitions]
                    if topic in denied
                    else found.get(topic, [])
                )
            return error, by_topic
    try:
        rows = broker.group_coordinator.fetch_offsets(group_id, wanted, stable, now_ms, member)
    except KafkaError as exc:
        for topic, partitions in wanted or []:
            by_topic[topic] = [_partition(p, None, exc.code) for p in partitions]
        return exc.code, by_topic
    for topic, _parts in wanted or []:
        by_topic.setdefault(topic, [])
    for topic, partition, offset, code in rows:
        if wanted is None and not allowed(broker, ctx, Op.DESCRIBE, TOPIC, topic):
            continue
        by_topic.setdefault(topic, []).append(_partition(partition, offset, code))
    return ErrorCode.none, by_topic


@handles(9, 1, 10)
def handle_offset_fetch(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    version = ctx.api_version
    cls = response_class(9, version)
    stable = bool(get(request, "require_stable", False))
    now = ctx.received_ms
    if version < 8:
        wanted = (
            None if request.topics is None else [(t.name, list(t.partition_indexes)) for t in request.topics]
        )
        error, by_topic = fetch_group(broker, ctx, request.group_id, wanted, stable, now)
        topics = [{"name": name, "partitions": parts} for name, parts in by_topic.items()]
        return Respond(build(cls, {"throttle_time": 0, "topics": topics, "error_code": error}))
    names = {t.topic_id: t.name for t in broker.image.topics.values()}
    ids = {name: tid for tid, name in names.items()}
    groups = []
    for g in request.groups:
        if g.topics is None:
            wanted = None
        elif version >= 10:
            wanted = [(names.get(t.topic_id, ""), list(t.partition_indexes)) for t in g.topics]
        else:
            wanted = [(t.name, list(t.partition_indexes)) for t in g.topics]
        member = (get(g, "member_id"), int(get(g, "member_epoch", -1))) if version >= 9 else (None, -1)
        error, by_topic = fetch_group(broker, ctx, g.group_id, wanted, stable, now, member)
        if error is not ErrorCode.none:
            by_topic = {}
        group_topics: list[dict[str, Any]] = [
            {"name": name, "topic_id": ids.get(name), "partitions": parts}
            for name, parts in by_topic.items()
            if version < 10 or name in ids
        ]
        groups.append({"group_id": g.group_id, "topics": group_topics, "error_code": error})
    return Respond(build(cls, {"throttle_time": 0, "groups": groups}))
