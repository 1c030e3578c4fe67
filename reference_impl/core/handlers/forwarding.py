"""Requests a broker hands to the active controller and relays the answer of (KIP-590).

In a KRaft cluster clients may send topic and config administration, and DescribeQuorum, to any
broker: a broker whose node is not the active controller forwards the request, unchanged, to the
controller over its controller connection and answers the client with what the controller
answered. The peer's client id marks a forwarded request, so a node that is not the controller
after all answers it itself (NOT_CONTROLLER, which reaches the client) instead of forwarding it
again. When the controller cannot be reached in time, the client gets this node's own answer
(computed only then), which is what it would have got without forwarding.

This is how Metadata can name any live broker as the controller, as Kafka does, and how a cluster
whose controllers are separate nodes (``process.roles=controller``) is administered through its
brokers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.static.protocol import RequestPayload, ResponsePayload

from ..boundary import FORWARDING_CHANNEL
from .later import LaterReply
from .registry import Reply

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

FORWARD_MARGIN_MS = 5_000
"""How much longer than the request's own timeout a forwarded request waits for the controller's
answer before this node answers it itself (the controller answers a timeout first)."""


def forward(
    broker: HandlerHost,
    ctx: RequestContext,
    request: RequestPayload,
    target: int,
    address: tuple[str, int],
    own_answer: Callable[[], ResponsePayload],
    timeout_ms: int,
) -> Reply | None:
    """Send ``request`` to node ``target`` and answer the client with its response (or, if it fails
    or no answer comes within ``timeout_ms`` plus a margin, with ``own_answer()``). None when
    nothing could be sent."""

    def render(response: Any) -> ResponsePayload:
        return response if response is not None else own_answer()

    deadline_ms = ctx.received_ms + timeout_ms + FORWARD_MARGIN_MS
    reply = LaterReply(ctx, render, deadline_ms, None, "forwarded", broker)

    def relay(response: ResponsePayload | None, error: str | None) -> None:
        reply.answer(response)

    if not broker.send_request(target, request, relay, address=address, channel=FORWARDING_CHANNEL):
        return None
    return reply.deferred()
