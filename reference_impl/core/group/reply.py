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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from ..handlers.later import LaterReply

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .coordinator import GroupCoordinator

SAFETY_MARGIN_MS = 30_000


class PendingReply(LaterReply):
    def __init__(
        self,
        coordinator: GroupCoordinator,
        ctx: RequestContext,
        render: Callable[[Any], ResponsePayload],
        wait_ms: int,
        on_timeout: Any,
    ) -> None:
        super().__init__(ctx, render, ctx.received_ms + wait_ms + SAFETY_MARGIN_MS, on_timeout, "group-reply")
        self.coordinator = coordinator

    def wake(self) -> None:
        self.coordinator.deliver(self.key)
