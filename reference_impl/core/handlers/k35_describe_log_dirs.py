"""DescribeLogDirs: v1-5. The broker's log directory and the size of each partition in it.

Behaviour: ``topics`` null describes every partition; ``offset_lag`` is the
log end offset minus the high watermark (how far the current log is ahead
of what is committed); v4+ reports the volume's total and usable bytes.
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
    if request.topics is None:
        wanted = sorted(broker.partitions)
    else:
        wanted = [
            (t.topic, p) for t in request.topics for p in t.partitions if (t.topic, p) in broker.partitions
        ]
    topics: dict[str, list[dict[str, Any]]] = {}
    for key in wanted:
        part = broker.partitions[key]
        topics.setdefault(key[0], []).append(
            {
                "partition_index": key[1],
                "partition_size": broker.store.size_bytes(*key),
                "offset_lag": max(0, part.log.log_end_offset - part.high_watermark),
                "is_future_key": False,
            }
        )
    total, usable = broker.store.disk_usage()
    result = {
        "error_code": ErrorCode.none,
        "log_dir": broker.store.log_dir,
        "total_bytes": total,
        "usable_bytes": usable,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
    }
    return Respond(
        build(
            response_class(35, ctx.api_version),
            {"throttle_time": 0, "error_code": ErrorCode.none, "results": [result]},
        )
    )
