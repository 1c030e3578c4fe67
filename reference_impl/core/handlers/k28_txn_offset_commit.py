"""TxnOffsetCommit: v0-5. Offsets committed as part of a producer's transaction (KIP-98, KIP-447).

Behaviour: the offsets are written to the group's ``__consumer_offsets``
partition as a transactional batch of the producer and become visible to
OffsetFetch only when the transaction's COMMIT marker reaches that partition
(an ABORT discards them). The group's partition must have been added to the
transaction with AddOffsetsToTxn (KIP-890 verification): otherwise
INVALID_TXN_STATE (v4: TRANSACTION_ABORTABLE); a fenced or unknown producer gets
INVALID_PRODUCER_EPOCH / INVALID_PRODUCER_ID_MAPPING. From v5 (transaction version 2) the
broker adds the group's partition to the open transaction itself, so AddOffsetsToTxn is not
needed (``AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation``).
Group checks as Kafka's (v3+ carries generation, member id and instance id, KIP-447):
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID; NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE; UNKNOWN_TOPIC_OR_PARTITION per partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..group.coordinator import OffsetCommitItem
from ..group.offsets import TopicPartition
from ..group.reply import PendingReply
from ..internal_topics import CONSUMER_OFFSETS, partition_for
from .access import GROUP, TOPIC, TXN, Op, allowed
from .registry import Reply, Respond, handles
from .txn_common import FIRST_ADD_PARTITION_TXN_OFFSET_COMMIT, verification_code

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(28, 0, 5)
def handle_txn_offset_commit(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    cls = response_class(28, ctx.api_version)
    items = [
        OffsetCommitItem(
            t.name,
            int(p.partition_index),
            int(p.committed_offset),
            int(get(p, "committed_leader_epoch", -1)),
            p.committed_metadata,
        )
        for t in request.topics
        for p in t.partitions
    ]

    def render(codes: dict[TopicPartition, ErrorCode]) -> ResponsePayload:
        return build(
            cls,
            {
                "throttle_time": 0,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {
                                "partition_index": p.partition_index,
                                "error_code": codes.get((t.name, int(p.partition_index)), ErrorCode.none),
                            }
                            for p in t.partitions
                        ],
                    }
                    for t in request.topics
                ],
            },
        )

    if not allowed(broker, ctx, Op.WRITE, TXN, request.transactional_id):  # Kafka: WRITE on the id,
        return Respond(
            render({(i.topic, i.partition): ErrorCode.transactional_id_authorization_failed for i in items})
        )
    if not allowed(broker, ctx, Op.READ, GROUP, request.group_id):  # READ on the group,
        return Respond(render({(i.topic, i.partition): ErrorCode.group_authorization_failed for i in items}))
    denied = {i.topic for i in items if not allowed(broker, ctx, Op.READ, TOPIC, i.topic)}  # READ on topics
    if denied:
        return Respond(
            render(
                {
                    (i.topic, i.partition): ErrorCode.topic_authorization_failed
                    for i in items
                    if i.topic in denied
                }
            )
        )
    offsets_partition = (
        CONSUMER_OFFSETS.name,
        partition_for(request.group_id, CONSUMER_OFFSETS.partitions(broker)),
    )
    try:
        broker.txn_coordinator.verify_partition(
            request.transactional_id,
            int(request.producer_id),
            int(request.producer_epoch),
            offsets_partition,
            ctx.received_ms,
            add=ctx.api_version >= FIRST_ADD_PARTITION_TXN_OFFSET_COMMIT,
        )
    except KafkaError as exc:
        code = verification_code(
            exc.code, ctx.api_version, FIRST_ADD_PARTITION_TXN_OFFSET_COMMIT, produce=False
        )
        return Respond(render({(i.topic, i.partition): code for i in items}))
    coordinator = broker.group_coordinator
    timeout = {(i.topic, i.partition): ErrorCode.coordinator_not_available for i in items}
    pending = PendingReply(
        coordinator, ctx, render, broker.config.get_int("offsets.commit.timeout.ms"), timeout
    )
    with coordinator.operation(ctx.received_ms):
        coordinator.commit_transactional_offsets(
            request.group_id,
            int(request.producer_id),
            int(request.producer_epoch),
            int(get(request, "generation_id", -1)),
            get(request, "member_id", "") or "",
            get(request, "group_instance_id"),
            items,
            pending.answer,
            ctx.received_ms,
        )
    return pending.deferred()
