"""What the broker's handlers and coordinators ask of the controller, whichever kind it is.

The :class:`~.broker_client.ClusterControllerClient` in front of the active quorum controller (on
a single broker, its own: the only voter of its quorum).
"""

from __future__ import annotations

from typing import Protocol

from .writer import CreatedTopic, NewTopic, RecordWriter


class AdminController(Protocol):
    def create_topic(self, topic: NewTopic, *, validate_only: bool, now_ms: int) -> CreatedTopic:
        """Create ``topic`` (or only check it); a cluster member forwards a creation it started itself."""

    def allocate_producer_id(self, now_ms: int) -> int: ...

    def writer(self) -> RecordWriter:
        """Who decides the other admin writes (deletes, partitions, configs) on this node."""
