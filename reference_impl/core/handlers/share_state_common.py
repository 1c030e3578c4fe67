"""What the share coordinator's inter-broker APIs (83-87) share: the request checks, one operation per
share-partition key, the answer grouped by topic once every key is answered.

Kafka: ``KafkaApis.handleInitializeShareGroupStateRequest`` / ``handleReadShareGroupStateRequest`` /
``handleWriteShareGroupStateRequest`` / ``handleDeleteShareGroupStateRequest`` /
``handleReadShareGroupStateSummaryRequest`` (core/src/main/scala/kafka/server/KafkaApis.scala: CLUSTER_ACTION
on the cluster, else every partition CLUSTER_AUTHORIZATION_FAILED, the requests' ``getErrorResponse``)
and ``ShareCoordinatorService`` (an empty group id, no topics or a topic with no partitions: an answer
with no results; one coordinator operation per group:topic:partition key). Bounds (hostile input, not
Kafka's): at most ``MAX_KEYS`` keys and ``MAX_BATCHES`` state batches per partition, else every
partition is INVALID_REQUEST.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from ..group.commit_wait import Done
from ..group.share_state import WRITE_TIMEOUT_MS, ShareStateCoordinator
from ..group.share_state_records import StateKey, StateWrite, batches_from_wire
from .access import Op, cluster_allowed
from .later import LaterReply
from .registry import Reply, Respond

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

MAX_KEYS = 1_000
MAX_BATCHES = 10_000
PartitionDone = Callable[[dict[str, Any]], None]
Operation = Callable[[ShareStateCoordinator, StateKey, Any, PartitionDone], None]
ErrorBody = Callable[[ErrorCode], dict[str, Any]]


def _oversized(request: Any) -> bool:
    keys = 0
    for topic in request.topics:
        for p in topic.partitions:
            keys += 1
            if keys > MAX_KEYS or len(getattr(p, "state_batches", ())) > MAX_BATCHES:
                return True
    return False


def serve(
    broker: HandlerHost,
    ctx: RequestContext,
    request: Any,
    api_key: int,
    op: Operation,
    error_body: ErrorBody,
) -> Reply:
    """Run ``op`` for every partition named; the answer once all of them called their ``done``."""
    cls = response_class(api_key, ctx.api_version)
    order: list[tuple[uuid.UUID | None, list[tuple[int, Any]]]] = [
        (t.topic_id, [(int(p.partition), p) for p in t.partitions]) for t in request.topics
    ]
    results: dict[tuple[int, int], dict[str, Any]] = {}

    def render(_value: Any = None) -> Any:
        out = []
        for ti, (topic_id, parts) in enumerate(order):
            out.append(
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {"partition": index}
                        | results.get((ti, pi), error_body(ErrorCode.coordinator_not_available))
                        for pi, (index, _) in enumerate(parts)
                    ],
                }
            )
        return build(cls, {"results": out})

    def refuse(code: ErrorCode) -> Reply:
        for ti, (_, parts) in enumerate(order):
            for pi in range(len(parts)):
                results[(ti, pi)] = error_body(code)
        return Respond(render())

    if not cluster_allowed(broker, ctx, Op.CLUSTER_ACTION):
        return refuse(ErrorCode.cluster_authorization_failed)
    if not request.group_id or not order or any(not parts for _, parts in order):
        return Respond(build(cls, {"results": []}))
    if _oversized(request):
        return refuse(ErrorCode.invalid_request)
    coordinator = broker.group_coordinator.share.state
    reply = LaterReply(ctx, render, ctx.received_ms + WRITE_TIMEOUT_MS * 2, None, "share-state", broker)
    total = sum(len(parts) for _, parts in order)

    def done_for(ti: int, pi: int) -> PartitionDone:
        def done(body: dict[str, Any]) -> None:
            if (ti, pi) in results:
                return
            results[(ti, pi)] = body
            if len(results) == total:
                reply.answer(None)

        return done

    for ti, (topic_id, parts) in enumerate(order):
        for pi, (index, p) in enumerate(parts):
            if topic_id is None or topic_id.int == 0:
                done_for(ti, pi)(error_body(ErrorCode.invalid_request))
                continue
            key = StateKey(request.group_id, topic_id, index)
            op(coordinator, key, p, done_for(ti, pi))
    if len(results) == total:
        return Respond(render())
    return reply.deferred()


Write = Callable[[ShareStateCoordinator, StateKey, Any, int, Done], None]


def _initialize(c: ShareStateCoordinator, key: StateKey, p: Any, now_ms: int, done: Done) -> None:
    c.initialize(
        key, state_epoch=int(p.state_epoch), start_offset=int(p.start_offset), now_ms=now_ms, done=done
    )


def _write(c: ShareStateCoordinator, key: StateKey, p: Any, now_ms: int, done: Done) -> None:
    batches = batches_from_wire(p.state_batches)
    w = StateWrite(key, int(p.state_epoch), int(p.leader_epoch), int(p.start_offset), batches)
    c.write(w, now_ms=now_ms, done=done)


def _delete(c: ShareStateCoordinator, key: StateKey, _p: Any, now_ms: int, done: Done) -> None:
    c.delete(key, now_ms=now_ms, done=done)


WRITES: dict[int, Write] = {83: _initialize, 85: _write, 86: _delete}
"""The coordinator operation of InitializeShareGroupState, WriteShareGroupState and
DeleteShareGroupState, from one partition of the request."""


def serve_writes(broker: HandlerHost, ctx: RequestContext, request: Any, api_key: int) -> Reply:
    """Initialize, Write and Delete: the API's operation (``WRITES``) for every partition named, each
    answered with its error alone once the coordinator is done with it."""
    write = WRITES[api_key]

    def op(coordinator: ShareStateCoordinator, key: StateKey, p: Any, done: PartitionDone) -> None:
        write(coordinator, key, p, ctx.received_ms, lambda code: done(error_only(code)))

    return serve(broker, ctx, request, api_key, op, error_only)


def serve_reads(
    broker: HandlerHost,
    ctx: RequestContext,
    request: Any,
    api_key: int,
    unknown: dict[str, Any],
    read: Callable[[ShareStateCoordinator, StateKey, Any], tuple[ErrorCode, dict[str, Any] | None]],
) -> Reply:
    """Read and ReadSummary: ``read(coordinator, key, partition)`` for every partition named, its
    error and the fields it answered (None: ``unknown``'s values, with the error)."""

    def error_body(code: ErrorCode) -> dict[str, Any]:
        return error_only(code) | unknown

    def op(coordinator: ShareStateCoordinator, key: StateKey, p: Any, done: PartitionDone) -> None:
        code, fields = read(coordinator, key, p)
        done(error_body(code) if fields is None else error_body(ErrorCode.none) | fields)

    return serve(broker, ctx, request, api_key, op, error_body)


def error_only(code: ErrorCode) -> dict[str, Any]:
    """The partition result of Initialize/Write/Delete: error code and message only."""
    return {"error_code": code, "error_message": None if code is ErrorCode.none else code.name}
