"""One request in flight through the broker's request pipeline, and the way its answer goes back.

Handlers, coordinators and the KRaft membership hold a :class:`RequestContext` to answer later
(``ctx.respond``); none of them needs the broker for that: the context carries the
:class:`ResponseSink` that took the request (the broker's pipeline), which encodes the answer and
releases the connection's next request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kio.static.protocol import ResponsePayload

from reference_impl.log.api import FileRegion
from reference_impl.protocol.codec import RequestHeader

if TYPE_CHECKING:
    from .handlers.registry import Splices
    from .purgatory import DelayedOperation


class ResponseSink(Protocol):
    def finish_request(
        self, ctx: RequestContext, body: ResponsePayload, splices: Splices | None = None
    ) -> None:
        """Encode ``body`` as ``ctx``'s response and send it in the connection's order."""


@dataclass
class RequestContext:
    """One request in flight: who sent it, what it is, and how to answer it."""

    sink: ResponseSink
    connection_id: int
    header: RequestHeader
    client_host: str
    received_ms: int
    listener: str = "PLAINTEXT"
    """The listener the request came in on (see :meth:`Broker.serves`)."""
    principal: str = "User:ANONYMOUS"
    """Who sent it (``KafkaPrincipal``): the SASL user, the TLS client's mapped name, or ANONYMOUS."""
    size_bytes: int = 0
    """The request's size on the wire, header included, size prefix not (Kafka's
    ``request.sizeInBytes``, what a produce quota counts)."""
    answered: bool = False
    response: tuple[bytes | FileRegion, ...] | None = None
    """The encoded response, held until every earlier request of the connection has its own sent."""
    delayed: DelayedOperation | None = None
    """The operation the answer waits for (cancelled if the connection closes first)."""
    thread_started_ns: int = 0
    thread_ns: int | None = None
    """The handler's time (the request-time quota's clock): from its call to its return, None before."""
    request_charged: bool = False
    """Charged to the request-time quota already, or exempt from it (core/request_quotas.py)."""
    on_answer: Callable[[RequestContext, ResponsePayload], ResponsePayload] | None = None
    """Charges the request-time quota when the answer goes (ThrottleTimeMs set, connection muted)."""

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""

    def respond(self, body: ResponsePayload, splices: Splices | None = None) -> None:
        """Send ``body`` as this request's response (once); lets the connection's next request run."""
        if self.answered:
            return
        self.answered = True
        if self.on_answer is not None:
            body = self.on_answer(self, body)
        self.sink.finish_request(self, body, splices)
