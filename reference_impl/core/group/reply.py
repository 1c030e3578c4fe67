"""A group request answered later: a parked JoinGroup, a SyncGroup waiting for the leader, a write in flight.

The handler hands :meth:`PendingReply.answer` to the coordinator and returns
:meth:`PendingReply.deferred`; the connection's later requests wait behind it,
as Kafka mutes a connection while its request is parked. The coordinator
delivers answers only when its current operation is over (see
:meth:`..coordinator.GroupCoordinator.operation`), so a request that was
queued behind this one never runs in the middle of a state change.

The deadline is a safety net: the coordinator's own timers always answer
first (rebalance timeout, session expiry, write timeout).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from ..handlers.registry import Deferred
from ..purgatory import DelayedOperation

if TYPE_CHECKING:
    from ..broker import RequestContext
    from .coordinator import GroupCoordinator

SAFETY_MARGIN_MS = 30_000
_ids = itertools.count(1)


class PendingReply(DelayedOperation):
    def __init__(
        self,
        coordinator: GroupCoordinator,
        ctx: RequestContext,
        render: Callable[[Any], ResponsePayload],
        wait_ms: int,
        on_timeout: Any,
    ) -> None:
        super().__init__(ctx.received_ms + wait_ms + SAFETY_MARGIN_MS)
        self.coordinator = coordinator
        self.ctx = ctx
        self.render = render
        self.on_timeout = on_timeout
        self.key = ("group-reply", next(_ids))
        self.value: Any = None
        self.answered = False

    def answer(self, value: Any) -> None:
        if self.answered:
            return
        self.answered = True
        self.value = value
        self.coordinator.deliver(self.key)

    def deferred(self) -> Deferred:
        return Deferred(self, (self.key,))

    def try_complete(self, now_ms: int) -> bool:
        return self.answered and self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        self.ctx.respond(self.render(self.value if self.answered else self.on_timeout))
