"""A controller process as one sans-IO node: its Raft replica and its controller state machine.

``step(message_or_none, now_ms)`` routes a Raft message to the replica and
a controller request to the state machine, fires both sets of timers, and
returns everything either wants sent and the earlier of their deadlines:
the same interface every simulated node has, and the one the asyncio shell
will drive.
"""

from __future__ import annotations

import random

from reference_impl.core.raft.api import CommittedRecords, RaftStep
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import RAFT_MESSAGE_TYPES, Envelope

from .quorum import ControllerConfig, QuorumController


class ControllerNode:
    """A controller over its Raft replica, built by the caller (the simulator's node factory builds
    the replica as it builds a broker node's, from the node's disk)."""

    def __init__(
        self, raft: RaftClient, rng: random.Random, controller_config: ControllerConfig | None = None
    ) -> None:
        self.node_id = raft.node_id
        self.raft = raft
        self.controller = QuorumController(raft.node_id, raft, rng, controller_config)
        self._committed = CommittedRecords()
        self.raft.register(self._committed)

    def step(self, message: Envelope | None, now_ms: int) -> RaftStep:
        if message is not None:
            if isinstance(message.body, RAFT_MESSAGE_TYPES):
                self.raft.handle(message, now_ms)
            else:
                self.controller.handle_request(message.source_id, message.body, now_ms)
        self.raft.poll(now_ms)
        self.controller.poll(now_ms)
        outbound = self.raft.drain_outbound() + tuple(self.controller.drain_outbound())
        deadlines = [
            d for d in (self.raft.next_deadline_ms(), self.controller.next_deadline_ms()) if d is not None
        ]
        return RaftStep(outbound, min(deadlines) if deadlines else None)

    def begin_shutdown(self, now_ms: int) -> None:
        """SIGTERM on a controller: if it leads, resign at once (EndQuorumEpoch names the most
        caught-up voter first), so a successor takes over without waiting for a timeout."""
        self.raft.resign(now_ms)

    @property
    def committed(self) -> list[tuple[int, bytes]]:
        """Every committed record this incarnation replayed (the simulator's invariants read it)."""
        return self._committed.records
