"""What the admin handlers call on every broker (a single broker is the only voter of its quorum).

The handlers call ``create_topic``, ``allocate_producer_id`` and, for the other
admin writes, ``writer()`` (the :class:`~.writer.RecordWriter` that decides them).
Those decisions belong to the active controller:

* on the node whose controller is active, ``writer()`` is its record writer
  (the same validation, records appended to the quorum);
* elsewhere, admin calls answer NOT_CONTROLLER (clients send admin requests
  to the controller Metadata names, and retry there), except topic creations
  a broker starts on its own (auto-creation, ``__consumer_offsets``,
  ``__transaction_state``), which are forwarded to the active controller as a
  CreateTopics request while the client is told LEADER_NOT_AVAILABLE and
  retries, as Kafka's auto-creation does;
* producer ids come from blocks the broker fetches with AllocateProducerIds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from reference_impl.core.internal_topics import INTERNAL_TOPIC_NAMES
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..raft.client import RaftClient
from . import messages as cm
from .quorum import QuorumController
from .writer import CreatedTopic, NewTopic, RecordWriter


class ControllerChannel(Protocol):
    """What the client needs of the broker's quorum membership: its controller (on a voter), who
    leads, producer-id blocks, and a way to send the active controller a request."""

    raft: RaftClient

    @property
    def controller(self) -> QuorumController | None: ...

    def allocate_producer_id(self) -> int | None: ...

    def next_correlation_id(self) -> int: ...

    def to_controller(self, body: Any, on_answer: Callable[[Any], None]) -> None: ...


_SELF_STARTED = INTERNAL_TOPIC_NAMES  # the coordinators create their topics on first use


class ClusterControllerClient:
    def __init__(self, quorum: ControllerChannel) -> None:
        self.quorum = quorum

    def writer(self) -> RecordWriter:
        """The active controller's writer, on its node; NOT_CONTROLLER elsewhere."""
        controller = self.quorum.controller
        if controller is None or controller.active is None:
            raise KafkaError(
                ErrorCode.not_controller,
                f"this broker is not the active controller ({self.quorum.raft.leader_id} is)",
            )
        return controller.active.writer

    def register_broker(self, node_id: int, host: str, port: int, rack: str | None, now_ms: int) -> None:
        """Registration is the lifecycle's (BrokerRegistration), not a direct write."""

    def allocate_producer_id(self, now_ms: int) -> int:
        pid = self.quorum.allocate_producer_id()
        if pid is None:
            raise KafkaError(ErrorCode.coordinator_load_in_progress, "waiting for a block of producer ids")
        return pid

    def create_topic(self, topic: NewTopic, *, validate_only: bool, now_ms: int) -> CreatedTopic:
        try:
            writer = self.writer()
        except KafkaError:
            counts = (topic.num_partitions, topic.replication_factor, topic.assignments)
            self_started = topic.name in _SELF_STARTED or counts == (-1, -1, None)
            if validate_only or not self_started:
                raise
            self._forward_creation(topic)
            being_created = f"topic {topic.name!r} is being created"
            raise KafkaError(ErrorCode.leader_not_available, being_created) from None
        return writer.create_topic(topic, validate_only=validate_only, now_ms=now_ms)

    def _forward_creation(self, topic: NewTopic) -> None:
        body = cm.CreateTopicsRequest(
            correlation_id=self.quorum.next_correlation_id(),
            name=topic.name,
            num_partitions=topic.num_partitions,
            replication_factor=topic.replication_factor,
            configs=tuple((k, v) for k, v in sorted(topic.configs.items()) if v is not None),
        )
        self.quorum.to_controller(body, lambda _answer: None)
