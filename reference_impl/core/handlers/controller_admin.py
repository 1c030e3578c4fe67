"""What ElectLeaders and the reassignment APIs share: clients send them to the controller.

The node whose controller is active (a single broker: the only voter of its own quorum) hands
the request to it and answers when the controller does (after the records are committed); any
other node answers NOT_CONTROLLER and the client retries at the controller Metadata names, as
Kafka's admin clients do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from ..controller import messages as cm
from .registry import Reply

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


def submit(
    broker: HandlerHost,
    ctx: RequestContext,
    body: cm.AdminRequest,
    to_wire: Callable[[Any], Any],
    timeout_ms: int,
) -> Reply:
    body = dataclasses.replace(body, correlation_id=broker.quorum.next_correlation_id())
    return broker.quorum.submit_admin(ctx, body, to_wire, timeout_ms)


def by_topic(
    results: tuple[cm.PartitionResult, ...],
    asked: tuple[tuple[str, int], ...] | None,
    error: ErrorCode,
    partition_key: str,
) -> list[dict[str, Any]]:
    """Per-partition results grouped by topic (in first-seen order); a top-level error with no
    results (NOT_CONTROLLER, a timeout) is repeated for every partition asked about."""
    if error != ErrorCode.none and not results and asked:
        results = tuple((t, p, error, None) for t, p in asked)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for topic, partition, code, message in results:
        grouped.setdefault(topic, []).append(
            {partition_key: partition, "error_code": code, "error_message": message}
        )
    return [{"topic": t, "name": t, "partitions": ps, "partition_result": ps} for t, ps in grouped.items()]
