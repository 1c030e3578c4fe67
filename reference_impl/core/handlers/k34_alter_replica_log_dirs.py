"""AlterReplicaLogDirs: v1-2. Move replicas between this broker's log directories (KIP-113, JBOD).

Behaviour: Kafka's ``KafkaApis.handleAlterReplicaLogDirsRequest`` and
``ReplicaManager.alterReplicaLogDirs`` (``core/src/main/scala/kafka/server/``): ALTER on the cluster
or every partition is CLUSTER_AUTHORIZATION_FAILED; a path that is not one of ``log.dirs`` (compared
as given, as Kafka compares absolute paths) is LOG_DIR_NOT_FOUND; an offline directory or replica
KAFKA_STORAGE_ERROR; a replica this broker does not hold REPLICA_NOT_AVAILABLE (the directory is
remembered for it if the image places it here); a partition named twice goes to the last path
(Kafka's map). The move itself copies then swaps within the call
(``reference_impl/log/dir_set.py``), where Kafka copies in the background through a ``-future``
log and answers at once; either way the partition keeps serving and DescribeLogDirs shows it in
its new directory once moved (here: in the answer's wake, never as ``is_future_key``).

Bound: at most :data:`MAX_PARTITIONS` partitions per request are considered; the others are
answered INVALID_REQUEST (the reference's own bound, not Kafka's).
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

MAX_PARTITIONS = 10_000


@handles(34, 1, 2)
def handle_alter_replica_log_dirs(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    wanted: dict[tuple[str, int], str] = {}
    over: set[tuple[str, int]] = set()
    for entry in request.dirs:
        for topic in entry.topics:
            for index in topic.partitions:
                key = (str(topic.name), int(index))
                if key in wanted or len(wanted) < MAX_PARTITIONS:
                    wanted[key] = str(entry.path)
                else:
                    over.add(key)
    if cluster_allowed(broker, ctx, Op.ALTER):
        errors = broker.replica_manager.alter_replica_log_dirs(wanted, ctx.received_ms)
    else:
        errors = dict.fromkeys(wanted, ErrorCode.cluster_authorization_failed)
    errors.update(dict.fromkeys(over, ErrorCode.invalid_request))
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (name, index), code in errors.items():
        by_topic.setdefault(name, []).append({"partition_index": index, "error_code": code})
    results = [{"topic_name": name, "partitions": parts} for name, parts in by_topic.items()]
    return Respond(build(response_class(34, ctx.api_version), {"throttle_time": 0, "results": results}))
