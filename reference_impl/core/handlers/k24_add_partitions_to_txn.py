"""AddPartitionsToTxn: v0-3. Register partitions in a producer's open transaction.

Behaviour: partitions of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION
and the others OPERATION_NOT_ATTEMPTED (nothing is added); otherwise every
partition gets the coordinator's answer: INVALID_PRODUCER_ID_MAPPING,
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS.
Not implemented: v4+ (the broker-to-coordinator batched verification of
KIP-890, which this single coordinator does in-process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .access import TOPIC, TXN, Op, allowed
from .registry import Reply, Respond, handles
from .txn_common import TxnReply, fenced_code

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(24, 0, 3)
def handle_add_partitions_to_txn(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    wanted = [(t.name, int(p)) for t in request.v3_and_below_topics for p in t.partitions]
    missing = {key for key in wanted if not _exists(broker, key)}

    def render(codes: dict[tuple[str, int], ErrorCode]) -> Any:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), code in codes.items():
            by_topic.setdefault(topic, []).append({"partition_index": p, "partition_error_code": code})
        return build(
            response_class(24, ctx.api_version),
            {
                "throttle_time": 0,
                "results_by_topic_v3_and_below": [
                    {"name": name, "results_by_partition": parts} for name, parts in by_topic.items()
                ],
            },
        )

    txn_id = request.v3_and_below_transactional_id
    if not allowed(broker, ctx, Op.WRITE, TXN, txn_id):  # Kafka: WRITE on the transactional id
        return Respond(render(dict.fromkeys(wanted, ErrorCode.transactional_id_authorization_failed)))
    denied = {key for key in wanted if not allowed(broker, ctx, Op.WRITE, TOPIC, key[0])}
    if denied:  # Kafka: WRITE on each topic; the others are not attempted
        return Respond(
            render(
                {
                    key: ErrorCode.topic_authorization_failed
                    if key in denied
                    else ErrorCode.operation_not_attempted
                    for key in wanted
                }
            )
        )
    if missing:
        return Respond(
            render(
                {
                    key: ErrorCode.unknown_topic_or_partition
                    if key in missing
                    else ErrorCode.operation_not_attempted
                    for key in wanted
                }
            )
        )

    def each(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
        return dict.fromkeys(wanted, fenced_code(code, ctx.api_version, 2))

    reply = TxnReply(broker, ctx, lambda code: render(each(code)), ErrorCode.coordinator_not_available)
    return reply.run(
        lambda c: c.add_partitions(
            request.v3_and_below_transactional_id,
            int(request.v3_and_below_producer_id),
            int(request.v3_and_below_producer_epoch),
            wanted,
            ctx.received_ms,
            reply.answer,
        ),
        lambda code: code,
    )


def _exists(broker: HandlerHost, key: tuple[str, int]) -> bool:
    """The partition exists in the cluster's metadata (its leader may be another broker)."""
    topic = broker.image.topics.get(key[0])
    return topic is not None and key[1] in topic.partitions
