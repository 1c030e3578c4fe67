"""DescribeLogDirs: v1-5. Every log directory of the broker and the partitions in each (JBOD).

Behaviour: Kafka's ``ReplicaManager.describeLogDirs``
(``core/src/main/scala/kafka/server/ReplicaManager.scala``): one result per directory of
``log.dirs``; an online one carries its partitions (those asked for; ``topics`` null: all), each
with its size in bytes and ``offset_lag`` = max(high watermark - log end offset, 0) (Kafka's
``getLogEndOffsetLag`` for a current, not future, log), and v4+ the volume's total and usable
bytes; an offline one is KAFKA_STORAGE_ERROR with no partitions. ``is_future_key`` is always
false: a move completes within AlterReplicaLogDirs here (``reference_impl/log/dir_set.py``).
DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (v3+ top-level error) and no dirs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .access import Op, cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(35, 1, 5)
def handle_describe_log_dirs(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if not cluster_allowed(broker, ctx, Op.DESCRIBE):  # Kafka: DESCRIBE on the cluster, else no dirs
        body = {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed, "results": []}
        return Respond(build(response_class(35, ctx.api_version), body))
    asked: set[tuple[str, int]] | None = None
    if request.topics is not None:
        asked = {(str(t.topic), int(p)) for t in request.topics for p in t.partitions}
    results = []
    for info in broker.store.log_dirs():
        if not info.online:
            results.append(
                {"error_code": ErrorCode.kafka_storage_error, "log_dir": info.path, "total_bytes": -1,
                 "usable_bytes": -1, "topics": []}
            )  # fmt: skip
            continue
        topics: dict[str, list[dict[str, Any]]] = {}
        for key in info.partitions:
            part = broker.partitions.get(key)
            if part is None or part.offline is not None or (asked is not None and key not in asked):
                continue
            topics.setdefault(key[0], []).append(
                {
                    "partition_index": key[1],
                    "partition_size": broker.store.size_bytes(*key),
                    "offset_lag": max(0, part.high_watermark - part.log.log_end_offset),
                    "is_future_key": False,
                }
            )
        results.append(
            {
                "error_code": ErrorCode.none,
                "log_dir": info.path,
                "total_bytes": info.total_bytes,
                "usable_bytes": info.usable_bytes,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
            }
        )
    body = {"throttle_time": 0, "error_code": ErrorCode.none, "results": results}
    return Respond(build(response_class(35, ctx.api_version), body))
