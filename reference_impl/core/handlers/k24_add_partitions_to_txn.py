"""AddPartitionsToTxn: v0-5. Register partitions in a producer's open transaction.

Behaviour: partitions of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION
and the others OPERATION_NOT_ATTEMPTED (nothing is added); otherwise every
partition gets the coordinator's answer: INVALID_PRODUCER_ID_MAPPING,
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS.
v4+ (KIP-890) is the brokers' batched form: several transactions per request, CLUSTER_ACTION
required (else the top-level CLUSTER_AUTHORIZATION_FAILED), each transaction either
``verify_only`` (is every partition in the open transaction: NONE or TRANSACTION_ABORTABLE,
Kafka's ``handleVerifyPartitionsInTransaction``) or added as transaction version 2
(``TransactionVersion.transactionVersionForAddPartitionsToTxn``: above v3). v5 is v4's layout
(its answers may carry TRANSACTION_ABORTABLE to the producer, KIP-1050). Brokers of this
reference send it (v4) when they lead a partition of a transaction another broker coordinates
(:mod:`.txn_verification`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from .access import TOPIC, TXN, Op, allowed, cluster_allowed
from .registry import Reply, Respond, handles
from .txn_common import TxnReply, fenced_code

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(24, 0, 5)
def handle_add_partitions_to_txn(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if ctx.api_version >= FIRST_BATCHED_VERSION:
        return _batched(broker, ctx, request)
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


FIRST_BATCHED_VERSION = 4

Codes = dict[tuple[str, int], ErrorCode]


def _batched(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    """v4+: each transaction of the request answered on its own; the reply waits for all."""
    transactions = [
        (
            str(t.transactional_id),
            int(t.producer_id),
            int(t.producer_epoch),
            bool(t.verify_only),
            [(str(topic.name), int(p)) for topic in t.topics for p in topic.partitions],
        )
        for t in request.transactions
    ]
    results: dict[str, Codes] = {}

    def render(top: ErrorCode) -> Any:
        return build(
            response_class(24, ctx.api_version),
            {
                "throttle_time": 0,
                "error_code": top,
                "results_by_transaction": [
                    {
                        "transactional_id": tid,
                        "topic_results": [
                            {
                                "name": name,
                                "results_by_partition": [
                                    {
                                        "partition_index": p,
                                        "partition_error_code": results.get(tid, {}).get(
                                            (name, p), ErrorCode.coordinator_not_available
                                        ),
                                    }
                                    for (t, p) in keys
                                    if t == name
                                ],
                            }
                            for name in dict.fromkeys(t for t, _p in keys)
                        ],
                    }
                    for tid, _pid, _epoch, _verify, keys in transactions
                    if top is ErrorCode.none
                ],
            },
        )

    if not cluster_allowed(broker, ctx, Op.CLUSTER_ACTION):  # Kafka: v4+ comes from brokers only
        return Respond(render(ErrorCode.cluster_authorization_failed))
    reply = TxnReply(broker, ctx, render, ErrorCode.none)
    pending = {tid for tid, *_rest in transactions}

    def settle(tid: str, codes: Codes) -> None:
        results[tid] = codes
        pending.discard(tid)
        if not pending:
            reply.answer(ErrorCode.none)

    for tid, pid, epoch, verify_only, keys in transactions:
        refused = _refusal(broker, ctx, tid, keys)
        if refused is not None:
            settle(tid, refused)
            continue
        coordinator = broker.txn_coordinator
        if verify_only:
            settle(tid, coordinator.verify_partitions(tid, pid, epoch, keys))
            continue
        try:
            coordinator.add_partitions(
                tid, pid, epoch, keys, ctx.received_ms, _settler(settle, tid, keys), client_version=2
            )
        except KafkaError as exc:
            settle(tid, dict.fromkeys(keys, exc.code))
    if not transactions:  # nothing asked: answered at once
        reply.answer(ErrorCode.none)
    return reply.deferred()


def _settler(
    settle: Callable[[str, Codes], None], tid: str, keys: list[tuple[str, int]]
) -> Callable[[ErrorCode], None]:
    def answer(code: ErrorCode) -> None:
        settle(tid, dict.fromkeys(keys, code))

    return answer


def _refusal(broker: HandlerHost, ctx: RequestContext, tid: str, keys: list[tuple[str, int]]) -> Codes | None:
    """The per-transaction refusals before the coordinator: WRITE on the id and on each topic, then
    partitions that do not exist (the others OPERATION_NOT_ATTEMPTED), as in versions 0-3."""
    if not allowed(broker, ctx, Op.WRITE, TXN, tid):
        return dict.fromkeys(keys, ErrorCode.transactional_id_authorization_failed)
    denied = {key for key in keys if not allowed(broker, ctx, Op.WRITE, TOPIC, key[0])}
    missing = {key for key in keys if not _exists(broker, key)}
    bad, code = (
        (denied, ErrorCode.topic_authorization_failed)
        if denied
        else (missing, ErrorCode.unknown_topic_or_partition)
    )
    if not bad:
        return None
    return {key: code if key in bad else ErrorCode.operation_not_attempted for key in keys}


def _exists(broker: HandlerHost, key: tuple[str, int]) -> bool:
    """The partition exists in the cluster's metadata (its leader may be another broker)."""
    topic = broker.image.topics.get(key[0])
    return topic is not None and key[1] in topic.partitions
