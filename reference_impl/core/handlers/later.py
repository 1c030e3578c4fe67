"""A request answered later, once its owner calls :meth:`LaterReply.answer`.

The handler creates the reply, hands ``answer`` to whatever decides (the group
coordinator, the transaction coordinator once its state write is committed),
and returns :meth:`LaterReply.deferred`; the connection's later requests wait
behind it. If the answer never comes, the deadline answers ``on_timeout``.
Subclasses say how an answer wakes the purgatory (:meth:`LaterReply.wake`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from ..purgatory import DelayedOperation
from .registry import Deferred

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

_ids = itertools.count(1)


class LaterReply(DelayedOperation):
    def __init__(
        self,
        ctx: RequestContext,
        render: Callable[[Any], ResponsePayload],
        deadline_ms: int,
        on_timeout: Any,
        kind: str,
        broker: HandlerHost | None = None,
    ) -> None:
        super().__init__(deadline_ms)
        self.broker = broker
        """Given, the broker's purgatory completes the reply as soon as it is answered (an answer
        given before the handler returns completes the request at once)."""
        self.ctx = ctx
        self.render = render
        self.on_timeout = on_timeout
        self.key = (kind, next(_ids))
        self.value: Any = None
        self.answered = False

    def answer(self, value: Any) -> None:
        """The answer's value (what ``render`` turns into the response); later calls are ignored."""
        if self.answered:
            return
        self.answered = True
        self.value = value
        self.wake()

    def wake(self) -> None:
        """Let the purgatory complete this reply (now, or when its owner's operation is over)."""
        if self.broker is None:
            raise NotImplementedError("a reply without a broker says how it is woken")
        self.broker.purgatory.check_and_complete(self.key, self.broker.now_ms)

    def deferred(self) -> Deferred:
        return Deferred(self, (self.key,))

    def try_complete(self, now_ms: int) -> bool:
        return self.answered and self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        self.ctx.respond(self.render(self.value if self.answered else self.on_timeout))
