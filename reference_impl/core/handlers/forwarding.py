"""Requests a broker hands to the active controller and relays the answer of (KIP-590).

In a KRaft cluster clients may send topic and config administration, and DescribeQuorum, to any
broker: a broker whose node is not the active controller forwards the request, unchanged, to the
controller over its controller connection and answers the client with what the controller
answered. The peer's client id marks a forwarded request, so a node that is not the controller
after all answers it itself (NOT_CONTROLLER) instead of forwarding it again. A NOT_CONTROLLER
answer is not relayed while the request has time left: the request is sent again, after a short
back-off, to the node then known as the controller, as Kafka's brokers do
(``core/src/main/scala/kafka/server/NodeToControllerChannelManager.scala``, ``handleResponse``
puts the request back at the head of its queue on NOT_CONTROLLER). Without it a client met the
controller's move: a DeleteAcls forwarded while the quorum elected a new leader was answered
NOT_CONTROLLER and its records were lost with the old leader's uncommitted tail, which a Kafka
client, whose broker retries, does not see. When the controller cannot be reached in time, the
client gets this node's own answer (computed only then), which is what it would have got without
forwarding.

This is how Metadata can name any live broker as the controller, as Kafka does, and how a cluster
whose controllers are separate nodes (``process.roles=controller``) is administered through its
brokers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload, ResponsePayload

from ..boundary import FORWARDING_CHANNEL
from ..purgatory import DelayedOperation
from .later import LaterReply
from .registry import Reply

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

FORWARD_MARGIN_MS = 5_000
"""How much longer than the request's own timeout a forwarded request waits for the controller's
answer before this node answers it itself (the controller answers a timeout first)."""


RETRY_BACKOFF_MS = 100
"""How long a request answered NOT_CONTROLLER waits before it is sent again (the quorum learns its
new leader within an election timeout; Kafka's channel waits for the next controller address)."""
MAX_SENDS = 50
"""At most so many sends of one forwarded request (with the back-off, five seconds of retries)."""

Target = tuple[int, tuple[str, int]]
"""A node id and the address its controller listener answers on."""


def says_not_controller(entity: Any, depth: int = 0) -> bool:
    """Whether any ``error_code`` in a decoded response is NOT_CONTROLLER (a walk over its fields;
    responses nest a few levels at most)."""
    if depth > 8 or not dataclasses.is_dataclass(entity) or isinstance(entity, type):
        return False
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if field.name == "error_code" and value == ErrorCode.not_controller:
            return True
        if isinstance(value, tuple):
            if any(says_not_controller(item, depth + 1) for item in value):
                return True
        elif dataclasses.is_dataclass(value) and says_not_controller(value, depth + 1):
            return True
    return False


class _Backoff(DelayedOperation):
    """Runs ``then`` once its deadline passes (nothing completes it earlier)."""

    def __init__(self, deadline_ms: int, then: Callable[[], None]) -> None:
        super().__init__(deadline_ms)
        self.then = then

    def try_complete(self, now_ms: int) -> bool:
        return False

    def on_complete(self, now_ms: int) -> None:
        self.then()


def forward(
    broker: HandlerHost,
    ctx: RequestContext,
    request: RequestPayload,
    target: int,
    address: tuple[str, int],
    own_answer: Callable[[], ResponsePayload],
    timeout_ms: int,
    retarget: Callable[[], Target | None] | None = None,
) -> Reply | None:
    """Send ``request`` to node ``target`` and answer the client with its response (or, if it fails
    or no answer comes within ``timeout_ms`` plus a margin, with ``own_answer()``). A NOT_CONTROLLER
    answer is sent again, to ``retarget()``, while the request's own timeout allows (the last such
    answer is relayed when it does not, or when no other controller is known). None when nothing
    could be sent."""

    def render(response: Any) -> ResponsePayload:
        return response if response is not None else own_answer()

    deadline_ms = ctx.received_ms + timeout_ms + FORWARD_MARGIN_MS
    retry_until_ms = ctx.received_ms + timeout_ms
    reply = LaterReply(ctx, render, deadline_ms, None, "forwarded", broker)
    sends = 1

    def send_again(last: ResponsePayload) -> None:
        nonlocal sends
        if reply.answered or reply.completed:
            return
        to = retarget() if retarget is not None else None
        sent = to is not None and broker.send_request(
            to[0], request, relay, address=to[1], channel=FORWARDING_CHANNEL
        )
        if not sent:
            reply.answer(last)
            return
        sends += 1

    def relay(response: ResponsePayload | None, error: str | None) -> None:
        if (
            response is not None
            and retarget is not None
            and sends < MAX_SENDS
            and broker.now_ms + RETRY_BACKOFF_MS < retry_until_ms
            and says_not_controller(response)
        ):
            backoff = _Backoff(broker.now_ms + RETRY_BACKOFF_MS, lambda: send_again(response))
            broker.purgatory.try_complete_else_watch(backoff, (), broker.now_ms)
            return
        reply.answer(response)

    if not broker.send_request(target, request, relay, address=address, channel=FORWARDING_CHANNEL):
        return None
    return reply.deferred()
