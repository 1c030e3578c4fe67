"""What the admin handlers call on a cluster-mode broker, in place of the one-node controller.

The handlers were written against :class:`LocalController` (create, delete,
configure topics; producer ids). In a cluster those decisions belong to the
active controller:

* on the node whose controller is active, the call goes to its record writer
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

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from reference_impl.core.internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE
from reference_impl.core.metadata.local_controller import CreatedTopic, LocalController
from reference_impl.core.raft.controller import messages as cm
from reference_impl.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from .quorum import ClusterQuorum

_SELF_STARTED = (CONSUMER_OFFSETS.name, TRANSACTION_STATE.name)


class ClusterControllerClient:
    def __init__(self, quorum: ClusterQuorum) -> None:
        self.quorum = quorum

    def _writer(self) -> LocalController:
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

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: Mapping[int, Sequence[int]] | None,
        configs: Mapping[str, str | None],
        *,
        default_partitions: int,
        default_replication: int,
        validate_only: bool,
        now_ms: int,
    ) -> CreatedTopic:
        try:
            writer = self._writer()
        except KafkaError:
            self_started = name in _SELF_STARTED or (num_partitions, replication_factor, assignments) == (
                -1,
                -1,
                None,
            )
            if validate_only or not self_started:
                raise
            self._forward_creation(name, num_partitions, replication_factor, configs)
            raise KafkaError(ErrorCode.leader_not_available, f"topic {name!r} is being created") from None
        return writer.create_topic(
            name,
            num_partitions,
            replication_factor,
            assignments,
            configs,
            default_partitions=default_partitions,
            default_replication=default_replication,
            validate_only=validate_only,
            now_ms=now_ms,
        )

    def _forward_creation(
        self, name: str, num_partitions: int, replication_factor: int, configs: Mapping[str, str | None]
    ) -> None:
        body = cm.CreateTopicsRequest(
            correlation_id=self.quorum.next_correlation_id(),
            name=name,
            num_partitions=num_partitions,
            replication_factor=replication_factor,
            configs=tuple((k, v) for k, v in sorted(configs.items()) if v is not None),
        )
        self.quorum.to_controller(body, lambda _answer: None)

    def delete_topic(self, name: str, now_ms: int) -> uuid.UUID:
        return self._writer().delete_topic(name, now_ms)

    def create_partitions(
        self,
        name: str,
        count: int,
        assignments: Sequence[Sequence[int]] | None,
        *,
        validate_only: bool,
        now_ms: int,
    ) -> None:
        self._writer().create_partitions(name, count, assignments, validate_only=validate_only, now_ms=now_ms)

    def set_configs(
        self,
        resource_type: int,
        resource_name: str,
        changes: Mapping[str, str | None],
        *,
        validate_only: bool,
        now_ms: int,
    ) -> None:
        self._writer().set_configs(
            resource_type, resource_name, changes, validate_only=validate_only, now_ms=now_ms
        )
