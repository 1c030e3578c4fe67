"""Produce: v3-13. Append one record batch per partition, assign offsets, acknowledge.

Behaviour: acks 0 (no response), 1 (after the leader's append), -1 (after
the ISR has it; with one replica, at once). Validation of the batch and every
record (:mod:`..validation`): CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
RECORD_LIST_TOO_LARGE, INVALID_TIMESTAMP, the failing records named in
``record_errors`` (KIP-467); UNKNOWN_TOPIC_OR_PARTITION for a
missing topic (v13: UNKNOWN_TOPIC_ID for a missing topic id);
INVALID_TOPIC_EXCEPTION for an internal topic (only its coordinator writes it);
NOT_LEADER_OR_FOLLOWER; with an authorizer (issue 18) TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
partition without WRITE on the transactional id, TOPIC_AUTHORIZATION_FAILED without WRITE on the
topic; NOT_ENOUGH_REPLICAS when acks=-1 and the ISR is
smaller than ``min.insync.replicas``; INVALID_REQUIRED_ACKS for other acks.
``log_append_time`` is the broker's time for LogAppendTime topics, else -1.
Version notes: v5+ log_start_offset; v8+ record_errors and error_message;
v10+ current_leader on NOT_LEADER_OR_FOLLOWER; v13 topics by id.
Idempotent batches are deduplicated and sequence-checked per producer; a transactional
batch must come from a producer whose open transaction added the partition (KIP-890
verification, where this broker is the transaction's coordinator): otherwise
INVALID_TXN_STATE before v11, TRANSACTION_ABORTABLE from v11, INVALID_PRODUCER_EPOCH for
another epoch, NOT_ENOUGH_REPLICAS (retriable) while the transaction is ending. From v12
(transaction version 2) the broker adds the partition to the open transaction itself.
A transaction coordinated by another broker is verified (or, from v12, added) there with
AddPartitionsToTxn v4 before the append (:mod:`.txn_verification`). Not implemented: an in-process
implicit add waiting for its state record to be replicated before the append, and verification of
acks=0 produces on another broker's transactions (appended unverified).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get, millis
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.records import BatchHeader

from ..internal_topics import refuses_client_writes
from ..partition import Partition
from ..purgatory import DelayedOperation
from ..quotas import PRODUCER_BYTE_RATE, user_of
from ..validation import RejectedRecords
from .access import TOPIC, TXN, Op, allowed
from .registry import Deferred, NoResponse, Reply, Respond, handles
from .txn_common import FIRST_ADD_PARTITION_PRODUCE, verification_code
from .txn_verification import Codes, verify_remotely

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

_LOG_START_ON_ERROR = frozenset({ErrorCode.invalid_record, ErrorCode.invalid_timestamp})
"""Validation failures Kafka answers with the partition's log start offset (ReplicaManager's
``processFailedRecord``); its size and CRC refusals carry -1."""


def _transaction_check(
    broker: HandlerHost, request: Any, key: tuple[str, int], version: int, now_ms: int
) -> Callable[[BatchHeader], None]:
    """KIP-890: a transactional batch must belong to a partition its transaction added (part 1,
    verification); from v12 (part 2, transaction version 2) the partition is added to the open
    transaction here instead. Codes as that version knows them (:func:`.txn_common.verification_code`)."""
    transactional_id = get(request, "transactional_id")

    def check(header: BatchHeader) -> None:
        if not header.is_transactional:
            return
        if transactional_id is None:
            raise KafkaError(ErrorCode.invalid_request, "transactional batch without a transactional id")
        try:
            broker.txn_coordinator.verify_partition(
                transactional_id,
                header.producer_id,
                header.producer_epoch,
                key,
                now_ms,
                add=version >= FIRST_ADD_PARTITION_PRODUCE,
            )
        except KafkaError as exc:
            code = verification_code(exc.code, version, FIRST_ADD_PARTITION_PRODUCE, produce=True)
            raise KafkaError(code, exc.message or code.name) from exc

    return check


@handles(0, 3, 13)
def handle_produce(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    remote = verify_remotely(broker, ctx, request, lambda codes: _produce(broker, ctx, request, codes))
    return remote if remote is not None else _produce(broker, ctx, request, {})


def _produce(broker: HandlerHost, ctx: RequestContext, request: Any, verified: Codes) -> Reply:
    """The produce, with ``verified`` the remote coordinator's answer for its transactional partitions."""
    acks = int(request.acks)
    now = ctx.received_ms
    topics = []
    waiting: list[tuple[dict[str, Any], Partition, int]] = []
    transactional_id = get(request, "transactional_id")
    txn_denied = transactional_id is not None and not allowed(broker, ctx, Op.WRITE, TXN, transactional_id)
    for topic_data in request.topic_data:
        name = get(topic_data, "name")
        topic_id = get(topic_data, "topic_id")
        missing = ErrorCode.unknown_topic_or_partition
        if name is None and topic_id is not None:
            found = broker.image.topic_by_id(topic_id)
            name = found.name if found else None
            if found is None:  # a known id with a partition it lacks is UNKNOWN_TOPIC_OR_PARTITION
                missing = ErrorCode.unknown_topic_id
        partitions = []
        write_denied = name is not None and not allowed(broker, ctx, Op.WRITE, TOPIC, name)
        for pdata in topic_data.partition_data:
            entry: dict[str, Any] = {
                "index": pdata.index,
                "base_offset": -1,
                "log_start_offset": -1,
                "log_append_time": None,
                "record_errors": [],
                "error_message": None,
            }
            part = broker.partition(name, pdata.index) if name is not None else None
            if txn_denied:  # Kafka answers the whole request so (KafkaApis.handleProduceRequest)
                entry["error_code"] = ErrorCode.transactional_id_authorization_failed
            elif write_denied:
                entry["error_code"] = ErrorCode.topic_authorization_failed
            elif acks not in (0, 1, -1):
                entry["error_code"] = ErrorCode.invalid_required_acks
            elif part is None:
                entry["error_code"] = missing
            elif part.offline is not None:  # its log directory failed (Kafka: KafkaStorageException)
                entry["error_code"] = ErrorCode.kafka_storage_error
            elif refuses_client_writes(part.topic):
                entry["error_code"] = ErrorCode.invalid_topic_exception
            elif verified.get(part.key, ErrorCode.none) is not ErrorCode.none:
                code = verified[part.key]
                entry["error_code"] = verification_code(
                    code, ctx.api_version, FIRST_ADD_PARTITION_PRODUCE, produce=True
                )
            else:
                try:
                    info = part.append_as_leader(
                        pdata.records,
                        acks,
                        now,
                        verify=_transaction_check(broker, request, part.key, ctx.api_version, now),
                        from_client=True,
                    )
                except KafkaError as exc:
                    entry["error_code"] = exc.code
                    entry["error_message"] = exc.message
                    if isinstance(exc, RejectedRecords):
                        entry["record_errors"] = [
                            {"batch_index": i, "batch_index_error_message": m} for i, m in exc.record_errors
                        ]
                    if exc.code in _LOG_START_ON_ERROR:
                        entry["log_start_offset"] = part.log.log_start_offset
                    if exc.code is ErrorCode.not_leader_or_follower:
                        entry["current_leader"] = {
                            "leader_id": part.leader_id,
                            "leader_epoch": part.leader_epoch,
                        }
                else:
                    entry.update(
                        error_code=ErrorCode.none,
                        base_offset=info.first_offset,
                        log_start_offset=part.log.log_start_offset,
                    )
                    if part.limits.log_append_time:
                        entry["log_append_time"] = now
                    broker.notify_partition_changed(part.key, now)
                    if acks == -1 and not part.committed(info.last_offset):
                        waiting.append((entry, part, info.last_offset))
            partitions.append(entry)
        topics.append(
            {"name": get(topic_data, "name"), "topic_id": topic_id, "partition_responses": partitions}
        )
    # KafkaApis.handleProduceRequest: the request's size counts towards producer_byte_rate; over the
    # quota the answer carries the throttle time and the connection is muted that long (KIP-219),
    # acks=0 included (it has no answer, its channel is muted all the same)
    throttle = broker.client_quotas.record(
        PRODUCER_BYTE_RATE, user_of(ctx.principal), ctx.client_id, ctx.size_bytes, now
    )
    broker.throttle(ctx.connection_id, throttle)
    if acks == 0:
        return NoResponse()
    body = {"responses": topics, "throttle_time": throttle}
    if waiting:
        op = DelayedProduce(ctx, body, waiting, now + millis(request.timeout))
        return Deferred(op, tuple(part.key for _e, part, _o in waiting))
    return Respond(build(response_class(0, ctx.api_version), body))


class DelayedProduce(DelayedOperation):
    """An acks=all produce waiting until the ISR has every batch (Kafka's DelayedProduce).

    Completes when each waiting partition's high watermark passes its batch;
    a partition whose leader moved answers NOT_LEADER_OR_FOLLOWER, one whose ISR
    fell below ``min.insync.replicas`` NOT_ENOUGH_REPLICAS_AFTER_APPEND, and at
    the deadline the rest answer REQUEST_TIMED_OUT. The batches stay appended
    either way: the producer's retry is deduplicated if it is idempotent.
    """

    def __init__(
        self,
        ctx: RequestContext,
        body: dict[str, Any],
        waiting: list[tuple[dict[str, Any], Partition, int]],
        deadline_ms: int,
    ) -> None:
        super().__init__(deadline_ms)
        self.ctx = ctx
        self.body = body
        self.waiting = waiting

    def try_complete(self, now_ms: int) -> bool:
        for _entry, part, last_offset in self.waiting:
            if (
                part.is_leader
                and not part.committed(last_offset)
                and len(part.effective_isr) >= (part.min_insync_replicas)
            ):
                return False
        return self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        for entry, part, last_offset in self.waiting:
            if not part.is_leader:
                entry["error_code"] = ErrorCode.not_leader_or_follower
            elif part.committed(last_offset):
                continue
            elif len(part.effective_isr) < part.min_insync_replicas:
                entry["error_code"] = ErrorCode.not_enough_replicas_after_append
            else:
                entry["error_code"] = ErrorCode.request_timed_out
        self.ctx.respond(build(response_class(0, self.ctx.api_version), self.body))
