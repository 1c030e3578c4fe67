"""ListTransactions: v0-2. Transactional ids known to this coordinator, filtered (KIP-664, KIP-994, KIP-1152).

Filters: states (unknown state names are echoed in ``unknown_state_filters``),
producer ids, v1+ a minimum duration of the open transaction, v2+ a regular
expression over the transactional id, compiled with RE2 as Kafka's RE2/J
(INVALID_REGULAR_EXPRESSION if RE2 refuses it; matching cannot backtrack).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode

from ..client_patterns import InvalidPattern, compile_client_pattern
from ..txn.state import TxnState
from .access import TXN, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

_KNOWN = {s.label for s in TxnState}


@handles(66, 0, 2)
def handle_list_transactions(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    states = set(request.state_filters)
    pids = {int(p) for p in request.producer_id_filters}
    duration = int(get(request, "duration_filter", -1))
    pattern_text = get(request, "transactional_id_pattern")
    body: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "unknown_state_filters": sorted(states - _KNOWN),
        "transaction_states": [],
    }
    try:
        pattern = compile_client_pattern(pattern_text) if pattern_text else None
    except InvalidPattern:
        body["error_code"] = ErrorCode.invalid_regular_expression
        return Respond(build(response_class(66, ctx.api_version), body))
    for meta in sorted(broker.txn_coordinator.txns.values(), key=lambda m: m.transactional_id):
        if states and meta.state.label not in states:
            continue
        if pids and meta.producer_id not in pids:
            continue
        if duration >= 0 and (
            meta.state is not TxnState.ONGOING or ctx.received_ms - meta.start_ms < duration
        ):
            continue
        if pattern is not None and not pattern.fullmatch(meta.transactional_id):
            continue
        if not allowed(broker, ctx, Op.DESCRIBE, TXN, meta.transactional_id):  # Kafka lists the described
            continue
        body["transaction_states"].append(
            {
                "transactional_id": meta.transactional_id,
                "producer_id": meta.producer_id,
                "transaction_state": meta.state.label,
            }
        )
    return Respond(build(response_class(66, ctx.api_version), body))
