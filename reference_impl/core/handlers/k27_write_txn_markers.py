"""WriteTxnMarkers: v1-2. Write COMMIT or ABORT markers to partitions this broker leads.

Sent by a transaction coordinator to partition leaders. Each marker is
appended as an acks=all write (Kafka appends them with required acks -1):
the answer waits until the ISR has it. Errors per partition:
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH,
TRANSACTION_COORDINATOR_FENCED (an older coordinator epoch), NOT_ENOUGH_REPLICAS
(before the append), NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT.
v2 carries each marker's transaction version: a version 2 marker whose epoch is not above the
producer's data epoch is INVALID_PRODUCER_EPOCH (KIP-890; Kafka's ``ProducerAppendInfo``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..txn.markers import MARKER_WRITE_TIMEOUT_MS, MarkerWait, append_marker_as_leader
from .access import Op, cluster_allowed
from .registry import Deferred, Reply, Respond, handles

if TYPE_CHECKING:
    from ..partition import Partition
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(27, 1, 2)
def handle_write_txn_markers(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    codes: dict[tuple[int, str, int], ErrorCode] = {}
    waiting: list[tuple[Partition, int, int]] = []
    waiting_for: dict[tuple[str, int], list[tuple[int, str, int]]] = {}
    refused = not cluster_allowed(broker, ctx, Op.CLUSTER_ACTION)  # Kafka: CLUSTER_ACTION on the cluster
    if refused:
        for m in request.markers:
            for t in m.topics:
                for index in t.partition_indexes:
                    codes[(int(m.producer_id), str(t.name), int(index))] = (
                        ErrorCode.cluster_authorization_failed
                    )
    for m in () if refused else request.markers:
        for t in m.topics:
            for index in t.partition_indexes:
                where = (int(m.producer_id), str(t.name), int(index))
                part = broker.partition(t.name, int(index))
                try:
                    if part is None:
                        raise KafkaError(ErrorCode.unknown_topic_or_partition)
                    offset = append_marker_as_leader(
                        broker,
                        part,
                        int(m.producer_id),
                        int(m.producer_epoch),
                        int(m.coordinator_epoch),
                        bool(m.transaction_result),
                        ctx.received_ms,
                        int(get(m, "transaction_version", 0)),
                    )
                except KafkaError as exc:
                    codes[where] = exc.code
                    continue
                codes[where] = ErrorCode.none
                if not part.committed(offset):
                    waiting.append((part, part.leader_epoch, offset))
                    waiting_for.setdefault(part.key, []).append(where)

    def render() -> Any:
        markers = []
        for m in request.markers:
            topics = [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": i, "error_code": codes[(int(m.producer_id), str(t.name), int(i))]}
                        for i in t.partition_indexes
                    ],
                }
                for t in m.topics
            ]
            markers.append({"producer_id": m.producer_id, "topics": topics})
        return build(response_class(27, ctx.api_version), {"markers": markers})

    if not waiting:
        return Respond(render())

    def replicated(outcome: dict[tuple[str, int], ErrorCode]) -> None:
        for key, code in outcome.items():
            for where in waiting_for[key]:
                codes[where] = code
        ctx.respond(render())

    wait = MarkerWait(waiting, replicated, ctx.received_ms + MARKER_WRITE_TIMEOUT_MS)
    return Deferred(wait, wait.keys)
