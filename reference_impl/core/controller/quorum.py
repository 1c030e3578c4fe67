"""The controller state machine on the quorum (KRaft's ``QuorumController``).

Every controller replica replays committed metadata records into its
:class:`ControllerImage`. The one whose Raft replica leads becomes *active*
once it has replayed everything up to its epoch's start: it copies the
committed image into a working image, turns requests into records, appends
them to the quorum and applies them to the working image at once (so the
next request sees them, as KRaft's timeline structures do), and answers
each request only when its records are committed. If it loses leadership,
the working image is dropped with the answers still waiting (they get
NOT_CONTROLLER); the records may or may not commit, which the broker
learns from the metadata it replays.

Validation is reused, not copied: :class:`_QuorumWriter` is the one-node
controller's :class:`~.writer.RecordWriter` (topic creation, AlterPartition's
epoch checks) whose ``commit`` appends to the quorum and applies to the
working image.

Brokers: a registration writes a fenced ``RegisterBrokerRecord`` whose
offset is the broker epoch; a heartbeat from a broker whose metadata has
caught up to its registration unfences it; a broker silent for
``session_timeout_ms`` is fenced, leaves every ISR and loses its
leaderships; a heartbeat with ``want_shut_down`` moves its leaderships away
first and is told ``should_shut_down`` once it leads nothing.

Two clocks come in: wall time ``now_ms`` (the records' Raft appends) and a monotonic ``mono_ms``
(by default the wall time) that broker sessions and the leader-imbalance check run on. Kafka
tracks a broker's last contact in ``time.nanoseconds()``
(``metadata/src/main/java/org/apache/kafka/controller/BrokerHeartbeatManager.java``,
``lastContactNs``, ``sessionTimeoutNs``) and schedules the periodic imbalance check on its event
queue in nanoseconds (``QuorumController``), so a step of the wall clock fences no broker.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from reference_impl import defects
from reference_impl.core.metadata import features
from reference_impl.core.metadata.records import MetadataRecord, ProducerIdsRecord, RegisterBrokerRecord
from reference_impl.core.raft.api import CommittedBatch, LeaderAndEpoch
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import Envelope
from reference_impl.core.raft.raft_log import Snapshot
from reference_impl.protocol.errors import KafkaError

from . import leadership, membership
from .elections import (
    changes_electing_leaderless,
    changes_removing_broker,
    directory_assignments,
    leaderships,
)
from .messages import (
    AdminRequest,
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from .records import (
    BrokerRegistrationChangeRecord,
    ControllerImage,
    ControllerRecord,
    decode_record,
    decode_snapshot,
    encode_record,
    encode_snapshot,
)
from .registration import feature_error, record_owner, registration_error
from .writer import PRODUCER_ID_BLOCK, NewTopic, RecordWriter


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    session_timeout_ms: int = 9_000
    """Kafka's ``broker.session.timeout.ms``."""
    unclean_leader_election: bool = False
    """Kafka's ``unclean.leader.election.enable`` default (a topic config overrides it)."""
    default_partitions: int = 1
    default_replication_factor: int = 1
    snapshot_every_records: int | None = None
    """Snapshot the committed image every so many metadata-log offsets (None: never)."""
    auto_leader_rebalance: bool = True
    """Kafka's ``auto.leader.rebalance.enable``: preferred replicas take their leaderships back."""
    leader_imbalance_check_interval_ms: int = 300_000
    """Kafka's ``leader.imbalance.check.interval.seconds``, in milliseconds."""
    bootstrap_records: tuple[MetadataRecord, ...] = ()
    """Written by the first controller to become active on an empty metadata log (Kafka's bootstrap
    metadata, ``kafka-storage format --add-scram``)."""


class _QuorumWriter(RecordWriter):
    """The shared decisions, with writes going to the quorum (and the working image)."""

    def __init__(
        self,
        image: ControllerImage,
        node_id: int,
        rng: random.Random,
        write: Callable[[Sequence[ControllerRecord], int], None],
    ) -> None:
        super().__init__(image, node_id, rng)
        self.working_image = image
        self._write = write

    def commit(self, records: Sequence[MetadataRecord], now_ms: int) -> None:
        if records:
            self._write(records, now_ms)

    def live_brokers(self) -> set[int]:
        return self.working_image.live_brokers()


@dataclass
class _Active:
    """What exists only while this replica is the active controller."""

    epoch: int
    image: ControllerImage
    writer: _QuorumWriter
    last_heartbeat_ms: dict[int, int]
    """Broker id -> when it was last heard from, on the monotonic clock (Kafka's ``lastContactNs``)."""
    pending: list[tuple[int, Envelope]] = field(default_factory=list)
    """(last offset written for the request, its answer): sent once that offset is committed."""
    last_written_offset: int = -1
    next_balance_ms: int = 0
    """When the next automatic leader rebalance check is due, on the monotonic clock."""
    incarnations: dict[int, str] = field(default_factory=dict)
    """Broker id -> the incarnation (process) registered under it, as Kafka's heartbeat manager
    knows it while active."""
    directory_owners: dict[str, int] = field(default_factory=dict)
    """Log directory id -> the broker registered with it (registration.py)."""


class QuorumController:
    def __init__(
        self,
        node_id: int,
        raft: RaftClient,
        rng: random.Random,
        config: ControllerConfig | None = None,
        cluster_id: str = "kafka-harness",
    ) -> None:
        self.node_id = node_id
        self.raft = raft
        self.rng = rng
        self.config = config or ControllerConfig()
        self.cluster_id = cluster_id
        self.image = ControllerImage(cluster_id=cluster_id, controller_id=-1)
        self.active: _Active | None = None
        self._claim_epoch: int | None = None
        self._outbound: list[Envelope] = []
        self._last_snapshot_offset = 0
        self._mono_ms = -(1 << 62)
        """The monotonic clock, the latest given (sessions and the imbalance check run on it)."""
        raft.register(self)

    # -- RaftListener --------------------------------------------------------------------------

    def handle_commit(self, batch: CommittedBatch) -> None:
        for offset, value in batch.records:
            self.image.apply(decode_record(value), offset)
        active = self.active
        if active is not None:
            ready = [p for p in active.pending if p[0] <= batch.last_offset]
            if ready:
                active.pending = [p for p in active.pending if p[0] > batch.last_offset]
                self._outbound.extend(envelope for _offset, envelope in ready)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.image = decode_snapshot(snapshot.data, self.cluster_id, snapshot.snapshot_id.offset)
        self._last_snapshot_offset = snapshot.snapshot_id.offset

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.image.controller_id = leader.leader_id
        if leader.leader_id == self.node_id:
            self._claim_epoch = leader.epoch
        else:
            self._claim_epoch = None
            self._renounce()

    # -- activation ----------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self.active is not None

    def _maybe_activate(self, now_ms: int) -> None:
        """Active once everything before this epoch's first record is replayed (KRaft's claim)."""
        if self._claim_epoch is None or self.active is not None or not self.raft.is_leader:
            return
        hw = self.raft.high_watermark
        if hw is None or self.raft.published_offset < hw or self.raft.epoch != self._claim_epoch:
            return
        working = self.image.copy()
        writer = _QuorumWriter(working, self.node_id, self.rng, self._write)
        heartbeats = {b: self._mono_ms for b in working.brokers}
        self.active = _Active(self._claim_epoch, working, writer, heartbeats)
        self.active.next_balance_ms = self._mono_ms + self.config.leader_imbalance_check_interval_ms
        self._claim_epoch = None
        if self.image.offset < 0 and self._last_snapshot_offset == 0:
            self._write([*features.bootstrap_records(), *self.config.bootstrap_records], now_ms)

    def _renounce(self) -> None:
        active, self.active = self.active, None
        if active is None:
            return
        for _offset, envelope in active.pending:
            body = envelope.body
            self._outbound.append(
                Envelope(
                    source_id=envelope.source_id,
                    destination_id=envelope.destination_id,
                    body=not_controller_answer(body),
                )
            )

    def _write(self, records: Sequence[ControllerRecord], now_ms: int) -> None:
        if not records:
            return
        active = self.active
        assert active is not None
        last = self.raft.append([encode_record(r) for r in records], now_ms)
        first = last - len(records) + 1
        for i, record in enumerate(records):
            active.image.apply(record, first + i)
        active.last_written_offset = last

    # -- the entry points ----------------------------------------------------------------------

    def _tick_mono(self, now_ms: int, mono_ms: int | None) -> int:
        self._mono_ms = max(self._mono_ms, now_ms if mono_ms is None else mono_ms)
        return self._mono_ms

    def handle_request(self, source: int, body: Any, now_ms: int, mono_ms: int | None = None) -> None:
        """Answer ``body`` from broker ``source`` at wall time ``now_ms``, monotonic ``mono_ms``."""
        self._tick_mono(now_ms, mono_ms)
        active = self.active
        if active is None:
            self._reply(source, not_controller_answer(body))
            return
        before = active.last_written_offset
        match body:
            case BrokerRegistrationRequest():
                answer: Any = self._register(active, body, now_ms)
            case BrokerHeartbeatRequest():
                answer = self._heartbeat(active, body, now_ms)
            case CreateTopicsRequest():
                answer = self._create_topic(active, body, now_ms)
            case AlterPartitionRequest():
                answer = self._alter_partition(active, body, now_ms)
            case AllocateProducerIdsRequest():
                answer = self._allocate_producer_ids(active, body, now_ms)
            case AssignReplicasToDirsRequest():
                answer = self._assign_replicas_to_dirs(active, body, now_ms)
            case (
                ElectLeadersRequest()
                | AlterPartitionReassignmentsRequest()
                | ListPartitionReassignmentsRequest()
            ):
                answer = self._admin(active, body, now_ms)
            case UnregisterBrokerRequest():
                answer = self._unregister(active, body, now_ms)
            case _:
                raise TypeError(f"not a controller request: {type(body).__name__}")
        if active.last_written_offset > before:
            self._progress_reassignments(active, now_ms)
        envelope = Envelope(source_id=self.node_id, destination_id=source, body=answer)
        if active.last_written_offset > before:
            active.pending.append((active.last_written_offset, envelope))
        else:
            self._outbound.append(envelope)

    def poll(self, now_ms: int, mono_ms: int | None = None) -> None:
        """Fence brokers whose session expired by ``mono_ms`` (monotonic; default ``now_ms``)."""
        mono = self._tick_mono(now_ms, mono_ms)
        self._maybe_activate(now_ms)
        active = self.active
        if active is not None:
            for broker_id, last in sorted(active.last_heartbeat_ms.items()):
                info = active.image.brokers.get(broker_id)
                if info is None or info.fenced:
                    continue
                if mono - last >= self.config.session_timeout_ms:
                    self._fence(active, broker_id, now_ms)
            if self.config.auto_leader_rebalance and mono >= active.next_balance_ms:
                active.next_balance_ms = mono + self.config.leader_imbalance_check_interval_ms
                self._write(leadership.preferred_elections(active.image, active.image.live_brokers()), now_ms)
        self._maybe_snapshot()

    def next_deadline_ms(self) -> int | None:
        """The next session expiry or imbalance check, on the monotonic clock."""
        active = self.active
        if active is None:
            return None
        deadlines = [
            last + self.config.session_timeout_ms
            for broker_id, last in active.last_heartbeat_ms.items()
            if broker_id in active.image.brokers and not active.image.brokers[broker_id].fenced
        ]
        if self.config.auto_leader_rebalance:
            deadlines.append(active.next_balance_ms)
        return min(deadlines) if deadlines else None

    def drain_outbound(self) -> list[Envelope]:
        out, self._outbound = self._outbound, []
        return out

    def _maybe_snapshot(self) -> None:
        every = self.config.snapshot_every_records
        published = self.raft.published_offset
        if every is not None and published - self._last_snapshot_offset >= every:
            self.raft.create_snapshot(published, encode_snapshot(self.image))
            self._last_snapshot_offset = published

    def _reply(self, destination: int, body: Any) -> None:
        self._outbound.append(Envelope(source_id=self.node_id, destination_id=destination, body=body))

    # -- brokers -------------------------------------------------------------------------------

    def _register(self, active: _Active, request: BrokerRegistrationRequest, now_ms: int) -> Any:
        """Kafka's ``ClusterControlManager.registerBroker``: another incarnation may not take the id
        of a broker whose session is valid (unfenced, heard from within the session timeout):
        DUPLICATE_BROKER_REGISTRATION, so a stranger cannot re-point a live broker's partitions."""
        image = active.image
        info = image.brokers.get(request.broker_id)
        heard = active.last_heartbeat_ms.get(request.broker_id)
        live = info is not None and not info.fenced and heard is not None
        known = active.incarnations.get(request.broker_id)
        if (
            live
            and heard is not None
            and self._mono_ms - heard < self.config.session_timeout_ms
            and known is not None
            and known != request.incarnation_id
            and not defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER)
        ):
            return BrokerRegistrationResponse(
                correlation_id=request.correlation_id,
                error_code=ErrorCode.duplicate_broker_registration,
                broker_epoch=-1,
            )
        finalized, _ = features.effective_levels(image.finalized_features, image.features_epoch)
        refused = registration_error(
            request.broker_id, request.is_migrating_zk_broker, request.log_dirs, active.directory_owners
        ) or feature_error(request.features, finalized)
        if refused is not None:
            return BrokerRegistrationResponse(
                correlation_id=request.correlation_id, error_code=refused, broker_epoch=-1
            )
        record_owner(active.directory_owners, request.broker_id, request.log_dirs)
        active.incarnations[request.broker_id] = request.incarnation_id
        records: list[ControllerRecord] = []
        if request.broker_id in image.brokers and not image.brokers[request.broker_id].fenced:
            # A new incarnation: its old leaderships and ISR places go first (it may have lost data).
            records += changes_removing_broker(
                image, request.broker_id, image.live_brokers(), self.config.unclean_leader_election
            )
        records.append(
            RegisterBrokerRecord(
                broker_id=request.broker_id,
                host=request.host,
                port=request.port,
                rack=request.rack,
                fenced=True,
            )
        )
        self._write(records, now_ms)
        active.last_heartbeat_ms[request.broker_id] = self._mono_ms
        return BrokerRegistrationResponse(
            correlation_id=request.correlation_id,
            error_code=ErrorCode.none,
            broker_epoch=image.broker_epochs[request.broker_id],
        )

    def _heartbeat(self, active: _Active, request: BrokerHeartbeatRequest, now_ms: int) -> Any:
        image = active.image

        def answer(error: ErrorCode, caught_up: bool = False, should_shut_down: bool = False) -> Any:
            info = image.brokers.get(request.broker_id)
            return BrokerHeartbeatResponse(
                correlation_id=request.correlation_id,
                error_code=error,
                is_caught_up=caught_up,
                is_fenced=True if info is None else info.fenced,
                should_shut_down=should_shut_down,
            )

        broker_id = request.broker_id
        if broker_id not in image.brokers:
            return answer(ErrorCode.broker_id_not_registered)
        epoch = image.broker_epochs.get(broker_id)
        if request.broker_epoch != epoch:
            return answer(ErrorCode.stale_broker_epoch)
        active.last_heartbeat_ms[broker_id] = self._mono_ms
        caught_up = request.current_metadata_offset > epoch
        if request.offline_log_dirs:
            self._write(
                changes_removing_broker(
                    image,
                    broker_id,
                    image.live_brokers(),
                    self.config.unclean_leader_election,
                    only=lambda info: info.directory_of(broker_id) in request.offline_log_dirs,
                ),
                now_ms,
            )
        if request.want_shut_down:
            return answer(ErrorCode.none, caught_up, self._controlled_shutdown(active, broker_id, now_ms))
        info = image.brokers[broker_id]
        if request.want_fence and not info.fenced:
            self._fence(active, broker_id, now_ms)
        elif info.fenced and caught_up and not request.want_fence and broker_id not in image.shutting_down:
            self._write(
                [BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch, fenced=False)],
                now_ms,
            )
            changes = changes_electing_leaderless(
                image, image.live_brokers(), self.config.unclean_leader_election
            )
            if changes:
                self._write(changes, now_ms)
        return answer(ErrorCode.none, caught_up)

    def _assign_replicas_to_dirs(
        self, active: _Active, request: AssignReplicasToDirsRequest, now_ms: int
    ) -> Any:
        """Record which log directory holds each of the broker's replicas (KIP-858; Kafka's
        ``ReplicationControlManager.handleAssignReplicasToDirs``): one PartitionChangeRecord with
        the partition's ``directories`` per changed assignment."""
        records, results = directory_assignments(active.image, request)
        self._write(records, now_ms)
        if isinstance(results, ErrorCode):
            return AssignReplicasToDirsResponse(correlation_id=request.correlation_id, error_code=results)
        return AssignReplicasToDirsResponse(
            correlation_id=request.correlation_id, error_code=ErrorCode.none, results=results
        )

    def _fence(self, active: _Active, broker_id: int, now_ms: int) -> None:
        image = active.image
        records: list[ControllerRecord] = [
            BrokerRegistrationChangeRecord(
                broker_id=broker_id, broker_epoch=image.broker_epochs[broker_id], fenced=True
            )
        ]
        records += changes_removing_broker(
            image, broker_id, image.live_brokers(), self.config.unclean_leader_election
        )
        self._write(records, now_ms)

    def _controlled_shutdown(self, active: _Active, broker_id: int, now_ms: int) -> bool:
        """Move leaderships off ``broker_id``; True once it leads nothing (then it is fenced)."""
        image = active.image
        epoch = image.broker_epochs[broker_id]
        if broker_id not in image.shutting_down:
            records: list[ControllerRecord] = [
                BrokerRegistrationChangeRecord(
                    broker_id=broker_id, broker_epoch=epoch, in_controlled_shutdown=True
                )
            ]
            live = image.live_brokers() - {broker_id}
            records += changes_removing_broker(image, broker_id, live, self.config.unclean_leader_election)
            self._write(records, now_ms)
        if leaderships(image, broker_id):
            return False
        if not image.brokers[broker_id].fenced:
            self._write(
                [BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch, fenced=True)], now_ms
            )
        return True

    def _unregister(self, active: _Active, request: UnregisterBrokerRequest, now_ms: int) -> Any:
        """Kafka's ``QuorumController.unregisterBroker`` (:mod:`.membership` decides); its
        heartbeat manager forgets the broker, so a stopped one is not fenced again later."""
        image = active.image
        broker_id = request.broker_id
        live = image.live_brokers() - {broker_id}
        epoch = image.broker_epochs.get(broker_id, -1)
        records, answer = membership.unregister_broker(
            image, request, live, epoch, self.config.unclean_leader_election
        )
        self._write(records, now_ms)
        if records:
            active.last_heartbeat_ms.pop(broker_id, None)
            active.incarnations.pop(broker_id, None)
        return answer

    def _allocate_producer_ids(
        self, active: _Active, request: AllocateProducerIdsRequest, now_ms: int
    ) -> Any:
        """A block of producer ids, recorded before it is handed out so none is ever given twice."""
        image = active.image
        if image.broker_epochs.get(request.broker_id) != request.broker_epoch:
            return AllocateProducerIdsResponse(
                correlation_id=request.correlation_id,
                error_code=ErrorCode.stale_broker_epoch,
                producer_id_start=-1,
                producer_id_len=0,
            )
        start = image.next_producer_id
        self._write(
            [ProducerIdsRecord(broker_id=request.broker_id, next_producer_id=start + PRODUCER_ID_BLOCK)],
            now_ms,
        )
        return AllocateProducerIdsResponse(
            correlation_id=request.correlation_id,
            error_code=ErrorCode.none,
            producer_id_start=start,
            producer_id_len=PRODUCER_ID_BLOCK,
        )

    # -- elections and reassignments ---------------------------------------------------------

    def _admin(self, active: _Active, request: AdminRequest, now_ms: int) -> Any:
        """ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments: answered once
        their records are committed (:mod:`.leadership` decides)."""
        records, answer = leadership.decide(active.image, request, active.image.live_brokers())
        self._write(records, now_ms)
        return answer

    def _progress_reassignments(self, active: _Active, now_ms: int) -> None:
        """After any write: complete the reassignments whose added replicas all joined the ISR."""
        if leadership.any_reassigning(active.image):
            self._write(leadership.reassignment_progress(active.image, active.image.live_brokers()), now_ms)

    # -- topics and ISR changes ----------------------------------------------------------------

    def _create_topic(self, active: _Active, request: CreateTopicsRequest, now_ms: int) -> Any:
        try:
            topic = NewTopic(
                request.name,
                request.num_partitions,
                request.replication_factor,
                configs=dict(request.configs),
                default_partitions=self.config.default_partitions,
                default_replication=self.config.default_replication_factor,
            )
            created = active.writer.create_topic(topic, validate_only=False, now_ms=now_ms)
        except KafkaError as exc:
            return CreateTopicsResponse(
                correlation_id=request.correlation_id,
                error_code=exc.code,
                error_message=exc.message,
                topic_id=None,
            )
        return CreateTopicsResponse(
            correlation_id=request.correlation_id,
            error_code=ErrorCode.none,
            error_message=None,
            topic_id=str(created.topic_id),
        )

    def _alter_partition(self, active: _Active, request: AlterPartitionRequest, now_ms: int) -> Any:
        image = active.image
        try:
            topic_id = uuid.UUID(request.topic_id)
        except ValueError:
            topic_id = None

        def answer(error: ErrorCode) -> AlterPartitionResponse:
            topic = image.topic_by_id(topic_id) if topic_id is not None else None
            info = topic.partitions.get(request.partition) if topic is not None else None
            return AlterPartitionResponse(
                correlation_id=request.correlation_id,
                error_code=error,
                leader_id=-1 if info is None else info.leader,
                leader_epoch=-1 if info is None else info.leader_epoch,
                partition_epoch=-1 if info is None else info.partition_epoch,
                isr=() if info is None or error != ErrorCode.none else info.isr,
            )

        if topic_id is None or image.topic_by_id(topic_id) is None:
            return answer(ErrorCode.unknown_topic_id)
        if image.broker_epochs.get(request.broker_id) != request.broker_epoch:
            return answer(ErrorCode.stale_broker_epoch)
        live = image.live_brokers()
        if any(r not in live for r in request.new_isr if r != request.broker_id):
            return answer(ErrorCode.ineligible_replica)
        try:
            active.writer.alter_partition(
                topic_id,
                request.partition,
                request.broker_id,
                request.leader_epoch,
                request.partition_epoch,
                request.new_isr,
                now_ms,
            )
        except KafkaError as exc:
            return answer(exc.code)
        return answer(ErrorCode.none)


def not_controller_answer(body: Any) -> Any:
    """The NOT_CONTROLLER answer to any controller request."""
    correlation = getattr(body, "correlation_id", 0)
    error = ErrorCode.not_controller
    match body:
        case BrokerRegistrationRequest():
            return BrokerRegistrationResponse(correlation_id=correlation, error_code=error, broker_epoch=-1)
        case BrokerHeartbeatRequest():
            return BrokerHeartbeatResponse(
                correlation_id=correlation,
                error_code=error,
                is_caught_up=False,
                is_fenced=True,
                should_shut_down=False,
            )
        case CreateTopicsRequest():
            return CreateTopicsResponse(
                correlation_id=correlation, error_code=error, error_message=None, topic_id=None
            )
        case AlterPartitionRequest():
            return AlterPartitionResponse(
                correlation_id=correlation,
                error_code=error,
                leader_id=-1,
                leader_epoch=-1,
                partition_epoch=-1,
                isr=(),
            )
        case AllocateProducerIdsRequest():
            return AllocateProducerIdsResponse(
                correlation_id=correlation, error_code=error, producer_id_start=-1, producer_id_len=0
            )
        case AssignReplicasToDirsRequest():
            return AssignReplicasToDirsResponse(correlation_id=correlation, error_code=error)
        case ElectLeadersRequest():
            return ElectLeadersResponse(correlation_id=correlation, error_code=error, results=())
        case AlterPartitionReassignmentsRequest():
            return AlterPartitionReassignmentsResponse(
                correlation_id=correlation, error_code=error, results=()
            )
        case ListPartitionReassignmentsRequest():
            return ListPartitionReassignmentsResponse(
                correlation_id=correlation, error_code=error, ongoing=()
            )
        case UnregisterBrokerRequest():
            return UnregisterBrokerResponse(correlation_id=correlation, error_code=error)
        case (
            BrokerRegistrationResponse()
            | BrokerHeartbeatResponse()
            | CreateTopicsResponse()
            | AlterPartitionResponse()
            | AllocateProducerIdsResponse()
            | AssignReplicasToDirsResponse()
            | ElectLeadersResponse()
            | AlterPartitionReassignmentsResponse()
            | ListPartitionReassignmentsResponse()
            | UnregisterBrokerResponse()
        ):
            return type(body)(**{**{f: getattr(body, f) for f in body.__slots__}, "error_code": error})
        case _:
            raise TypeError(f"not a controller request: {type(body).__name__}")
