"""What the transaction handlers share: running a coordinator call and Kafka's error mapping."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from reference_impl.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from ..broker import Broker
    from ..txn.coordinator import TransactionCoordinator


def fenced_code(code: ErrorCode, version: int, first_fenced_version: int) -> ErrorCode:
    """KIP-588: PRODUCER_FENCED is new; older request versions get INVALID_PRODUCER_EPOCH instead."""
    if code is ErrorCode.producer_fenced and version < first_fenced_version:
        return ErrorCode.invalid_producer_epoch
    return code


def run(broker: Broker, call: Callable[[TransactionCoordinator], None]) -> ErrorCode:
    try:
        call(broker.txn_coordinator)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.none
