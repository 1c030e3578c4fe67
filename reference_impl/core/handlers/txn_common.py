"""What the transaction handlers share: a coordinator call answered later, Kafka's error mapping."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from .later import LaterReply
from .registry import Reply

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from ..txn.coordinator import TransactionCoordinator
    from .host import HandlerHost


def fenced_code(code: ErrorCode, version: int, first_fenced_version: int) -> ErrorCode:
    """KIP-588: PRODUCER_FENCED is new; older request versions get INVALID_PRODUCER_EPOCH instead."""
    if code is ErrorCode.producer_fenced and version < first_fenced_version:
        return ErrorCode.invalid_producer_epoch
    return code


REPLY_TIMEOUT_MS = 30_000
"""How long a transaction request waits for its state write to be committed before the client is
told COORDINATOR_NOT_AVAILABLE (retriable; Kafka's coordinator appends with request.timeout.ms)."""


class TxnReply(LaterReply):
    """A transaction request answered once the coordinator's state write is committed (acks=all).

    An answer given before the handler returns completes the request at once (one broker, one
    replica)."""

    def __init__(
        self,
        broker: HandlerHost,
        ctx: RequestContext,
        render: Callable[[Any], ResponsePayload],
        on_timeout: Any,
    ) -> None:
        deadline_ms = ctx.received_ms + REPLY_TIMEOUT_MS
        super().__init__(ctx, render, deadline_ms, on_timeout, "txn-reply", broker)
        self.broker: HandlerHost = broker

    def run(
        self, call: Callable[[TransactionCoordinator], None], refused: Callable[[ErrorCode], Any]
    ) -> Reply:
        """Call the coordinator; a KafkaError raised before anything was written answers at once."""
        try:
            call(self.broker.txn_coordinator)
        except KafkaError as exc:
            self.answer(refused(exc.code))
        return self.deferred()


def error_code_only(api_key: int, ctx: RequestContext) -> Callable[[ErrorCode], ResponsePayload]:
    """Render a response whose body is just an error code (AddOffsetsToTxn, EndTxn), with
    PRODUCER_FENCED as INVALID_PRODUCER_EPOCH before v2."""

    def render(code: ErrorCode) -> ResponsePayload:
        return build(
            response_class(api_key, ctx.api_version),
            {"throttle_time": 0, "error_code": fenced_code(code, ctx.api_version, 2)},
        )

    return render


FIRST_ADD_PARTITION_PRODUCE = 12
"""Produce v12+ is a transaction version 2 client: the leader adds the partition to the transaction
(Kafka's ``AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation``,
core/src/main/scala/kafka/server/AddPartitionsToTxnManager.scala: above 11 ``addPartition``, above 10
``genericErrorSupported``, else ``defaultError``)."""
FIRST_ADD_PARTITION_TXN_OFFSET_COMMIT = 5
"""TxnOffsetCommit v5+ likewise (``txnOffsetCommitRequestVersionToTransactionSupportedOperation``: above
4 ``addPartition``, above 3 ``genericErrorSupported``)."""

_RETRIABLE_AS_NOT_ENOUGH_REPLICAS = frozenset(
    {
        ErrorCode.concurrent_transactions,
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
    }
)


def verification_code(code: ErrorCode, version: int, first_add_version: int, *, produce: bool) -> ErrorCode:
    """A verification's coordinator code as the writing request's version knows it: PRODUCER_FENCED
    is INVALID_PRODUCER_EPOCH (``AddPartitionsToTxnManager``'s response handling), TRANSACTION_ABORTABLE
    is INVALID_TXN_STATE for clients older than the generic-error version (the version just below
    ``first_add_version``), and for Produce the coordinator's retriable codes become NOT_ENOUGH_REPLICAS
    so that the producer retries (``ReplicaManager.appendRecords``'s translation,
    core/src/main/scala/kafka/server/ReplicaManager.scala)."""
    if code is ErrorCode.producer_fenced:
        return ErrorCode.invalid_producer_epoch
    if code is ErrorCode.transaction_abortable and version < first_add_version - 1:
        return ErrorCode.invalid_txn_state
    if produce and code in _RETRIABLE_AS_NOT_ENOUGH_REPLICAS:
        return ErrorCode.not_enough_replicas
    return code
