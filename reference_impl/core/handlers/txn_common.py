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
