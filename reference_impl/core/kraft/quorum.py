"""A broker's part in a multi-node cluster: its Raft replica, its controller, its registration.

With ``controller.quorum.voters`` set, a broker is a KRaft node: a voter
(combined broker+controller mode), an observer of the ``__cluster_metadata``
log (a broker only), or, with ``process.roles=controller``, a voter that is no
broker (it never registers, so no partition is placed on it). This object owns

* the :class:`RaftClient` on the broker's metadata log, and, on voters, the
  :class:`QuorumController` it feeds;
* the broker's metadata image, replayed from committed records (the broker
  opens, leads, follows and drops partitions from it, as in one-node mode);
* the broker lifecycle: register (BrokerRegistration), heartbeat with the
  metadata offset it has applied (BrokerHeartbeat), ask for a controlled
  shutdown, send AlterPartition, fetch producer-id blocks;
* the bridge between those dataclass messages and the Kafka wire: requests to
  peers go out through :meth:`Broker.send_request` on their own channels
  (``raft``, ``controller``) so a long-poll replica fetch never delays a vote;
  requests from peers arrive through the handlers and are answered when the
  quorum or the controller answers them (:class:`_AwaitAnswer`).

Nothing here does I/O: the stores come in as ports and time as ``now_ms`` (wall) and the
broker's ``mono_ms`` (monotonic). Raft runs on wall time, as Kafka's ``KafkaRaftClient`` on
``time.milliseconds()`` (``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java``); the
broker lifecycle (registration, heartbeats, their in-flight timeout) on the monotonic clock, as
Kafka's ``BrokerLifecycleManager`` schedules them on its event queue in ``time.nanoseconds()``
(``core/src/main/scala/kafka/server/BrokerLifecycleManager.scala``), and so does the controller's
session tracking (:mod:`..controller.quorum`).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import random
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kio.schema.errors import ErrorCode

from reference_impl import defects
from reference_impl.core.controller import messages as cm
from reference_impl.core.controller.quorum import ControllerConfig, QuorumController, not_controller_answer
from reference_impl.core.controller.records import (
    ControllerImage,
    decode_record,
    decode_snapshot,
    encode_snapshot,
)
from reference_impl.core.controller.registration import SUPPORTED_FEATURES
from reference_impl.core.metadata.image import BrokerInfo
from reference_impl.core.metadata.records import MetadataRecord
from reference_impl.core.raft.api import CommittedBatch, LeaderAndEpoch, RaftConfig
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import RAFT_MESSAGE_TYPES, Envelope
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore, QuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore, RaftLog, Snapshot, SnapshotStore
from reference_impl.log.api import PartitionLog

from ..boundary import CONTROLLER_CHANNEL
from ..host import PeerMessenger
from ..purgatory import DelayedOperation
from . import inbound, voter_admin, wire
from .dir_assignments import DirectoryAssigner, offline_dir_ids, online_dir_ids
from .peer_addresses import PeerAddresses, bootstrap_only
from .raft_errors import timeout_answer
from .roles import BROKER_ROLE, CONTROLLER_ROLE, node_roles

if TYPE_CHECKING:
    from ..configs.resolution import BrokerConfig
    from ..handlers.registry import Reply
    from ..metadata.image import MetadataImage
    from ..ports import LogStore
    from ..purgatory import Purgatory
    from ..request_context import RequestContext

log = logging.getLogger("reference_impl.kraft")

PRODUCER_ID_PREFETCH = 100
"""Ask for the next producer-id block when this few ids are left in the current one."""

PEER_CLIENT_PREFIX = "broker-"
"""Client id prefix of requests brokers send each other (the shell's ``broker-N``)."""

COMMIT_KEY = ("controller", "commit")
"""Purgatory key of answers waiting for the controller's records to commit."""
LINGER = "controller.quorum.append.linger.ms"
ADMIN_TIMEOUT_MS = 30_000
"""How long an admin answer waits for its records when the request names no timeout."""


def with_error(entity: Any, code: ErrorCode, message: str) -> Any:
    """``entity`` (a kio response) with every ``error_code`` that said NONE saying ``code``."""
    if not dataclasses.is_dataclass(entity) or isinstance(entity, type):
        return entity
    names = {f.name for f in dataclasses.fields(entity)}
    changes: dict[str, Any] = {}
    for name in names:
        value = getattr(entity, name)
        if name == "error_code":
            if value == ErrorCode.none:
                changes[name] = code
                if "error_message" in names:
                    changes["error_message"] = message
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            changes[name] = tuple(with_error(v, code, message) for v in value)
        elif dataclasses.is_dataclass(value):
            changes[name] = with_error(value, code, message)
    return dataclasses.replace(entity, **changes)


class _CommitBarrier(DelayedOperation):
    """An admin answer the active controller wrote records for, held until they are committed (as
    KRaft's controller answers): NOT_CONTROLLER if the controller stops being active first,
    REQUEST_TIMED_OUT at the request's timeout (a controller cut off in a minority)."""

    def __init__(
        self, quorum: ClusterQuorum, deadline_ms: int, ctx: RequestContext, body: Any, mark: tuple[Any, int]
    ) -> None:
        super().__init__(deadline_ms)
        self.quorum = quorum
        self.ctx = ctx
        self.body = body
        self.active, self.offset = mark
        self.error: ErrorCode | None = None

    def try_complete(self, now_ms: int) -> bool:
        controller = self.quorum.controller
        if controller is None or controller.active is not self.active:
            self.error = ErrorCode.not_controller
            return self.force_complete(now_ms)
        if self.quorum.raft.published_offset > self.offset:
            self.error = ErrorCode.none
            return self.force_complete(now_ms)
        return False

    def on_complete(self, now_ms: int) -> None:
        if self.error == ErrorCode.none:
            self.ctx.respond(self.body)
        elif self.error == ErrorCode.not_controller:
            self.ctx.respond(with_error(self.body, ErrorCode.not_controller, "The controller moved."))
        else:
            message = "The controller did not commit the change in time."
            self.ctx.respond(with_error(self.body, ErrorCode.request_timed_out, message))


@dataclass(frozen=True, slots=True)
class QuorumPorts:
    """What the shell hands a cluster-mode broker: the voters and the quorum's durable stores."""

    voters: Mapping[int, tuple[str, int]]
    state_store: QuorumStateStore
    snapshot_store: SnapshotStore
    bootstrap_records: tuple[MetadataRecord, ...] = ()
    """What ``kafka-storage format`` would write (``--add-scram``'s credentials): the first active
    controller of an empty metadata log writes them."""


def lone_voter_ports(
    node_id: int, address: tuple[str, int], bootstrap_records: tuple[MetadataRecord, ...] = ()
) -> QuorumPorts:
    """A single broker's quorum: itself the only voter, its quorum-state and snapshots in memory
    (the shell gives files, ``server/cli.py``). Kafka's combined node with itself alone in
    ``controller.quorum.voters``; it never sends on the voter address (:meth:`ClusterQuorum.to_controller`
    answers its own node in process)."""
    return QuorumPorts({node_id: address}, MemoryQuorumStateStore(), MemorySnapshotStore(), bootstrap_records)


class _AwaitAnswer(DelayedOperation):
    """A peer's request waiting for the quorum's or controller's answer (or its deadline)."""

    def __init__(
        self,
        deadline_ms: int,
        ctx: RequestContext,
        api_key: int,
        request: Any,
        addresses: Mapping[int, tuple[str, int]] | None = None,
    ) -> None:
        super().__init__(deadline_ms)
        self.ctx = ctx
        self.api_key = api_key
        self.request = request
        self.addresses = addresses
        self.answer: Any = None
        self.peers: PeerAddresses | None = None
        """Set on a Fetch: its answer names where the leader listens (NodeEndpoints, v16+)."""

    def deliver(self, answer: Any, now_ms: int) -> None:
        self.answer = answer
        self.force_complete(now_ms)

    def try_complete(self, now_ms: int) -> bool:
        return self.answer is not None and self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        answer = self.answer if self.answer is not None else timeout_answer(self.request)
        endpoints = (
            None if self.peers is None else self.peers.leader_endpoints(getattr(answer, "leader_id", -1))
        )
        self.ctx.respond(
            wire.response_to_wire(
                self.api_key, self.ctx.api_version, answer, self.request, self.addresses, endpoints
            )
        )


class _AdminAnswer(_AwaitAnswer):
    """An admin request handed to the active controller, answered in the client's version when the
    controller answers; a controller that cannot be reached is NOT_CONTROLLER (the client retries)."""

    def __init__(
        self, deadline_ms: int, ctx: RequestContext, body: Any, to_wire: Callable[[Any], Any]
    ) -> None:
        super().__init__(deadline_ms, ctx, -1, body)
        self.to_wire = to_wire

    def deliver(self, answer: Any, now_ms: int) -> None:
        super().deliver(answer if answer is not None else not_controller_answer(self.request), now_ms)

    def on_complete(self, now_ms: int) -> None:
        answer = self.answer
        if answer is None:  # the deadline passed first
            late = not_controller_answer(self.request)
            answer = dataclasses.replace(late, error_code=ErrorCode.request_timed_out)
        self.ctx.respond(self.to_wire(answer))


class MemberHost(PeerMessenger, Protocol):
    """What KRaft membership needs of the broker: its identity and addresses, configs and stores,
    requests to peers, and the metadata image it replaces as the metadata log is replayed."""

    image: MetadataImage

    @property
    def node_id(self) -> int: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def rng(self) -> random.Random: ...

    @property
    def store(self) -> LogStore: ...

    @property
    def purgatory(self) -> Purgatory: ...

    @property
    def advertised(self) -> tuple[str, int]: ...

    @property
    def rack(self) -> str | None: ...

    @property
    def mono_ms(self) -> int:
        """The broker's monotonic clock (the latest given)."""
        ...

    @property
    def wall_ms(self) -> int:
        """The wall time as last given, even when it stepped back: Raft's one clock."""
        ...

    def on_metadata_ready(self, now_ms: int) -> None:
        """The image is complete (caught up with the quorum): open the partitions."""

    def sync_partitions(self, now_ms: int) -> None: ...


class ClusterQuorum:
    def __init__(
        self, broker: MemberHost, ports: QuorumPorts, metadata_log: PartitionLog, now_ms: int
    ) -> None:
        config = broker.config
        self.broker = broker
        self.node_id = broker.node_id
        self.voters: Mapping[int, tuple[str, int]] = dict(ports.voters)
        """controller.quorum.voters (or the bootstrap servers, ids -2, -3, ...), then, once the
        replica exists, its current voters with their addresses (:class:`PeerAddresses`)."""
        self.roles = node_roles(config.get("process.roles") or "", self.node_id, self.voters)
        self.is_broker = BROKER_ROLE in self.roles
        """False on a controller-only node: no registration, heartbeats or producer-id blocks."""
        self.cluster_id = broker.image.cluster_id
        self.rng = random.Random(broker.rng.getrandbits(64))
        election = config.get_int("controller.quorum.election.timeout.ms")
        raft_config = RaftConfig(
            election_timeout_ms=election,
            fetch_timeout_ms=config.get_int("controller.quorum.fetch.timeout.ms"),
            request_timeout_ms=config.get_int("controller.quorum.request.timeout.ms"),
        )
        if LINGER in config.static:  # Kafka's append linger; unset, the replica's own 5 ms
            raft_config = dataclasses.replace(raft_config, append_flush_delay_ms=config.get_int(LINGER))
        raft_log = RaftLog(metadata_log, ports.snapshot_store, broker.store.read_chunk)
        kraft_version = 1 if bootstrap_only(self.voters) else config.get_int("reference.kraft.version")
        if kraft_version >= 1 and self.node_id in self.voters:
            voter_admin.format_initial(metadata_log, self.voters, self.cluster_id, config, now_ms)
        self.raft = RaftClient(
            self.node_id,
            sorted(self.voters),
            raft_log,
            ports.state_store,
            self.rng,
            now_ms,
            raft_config,
            kraft_version,
            voter_admin.directory_id(self.cluster_id, self.node_id),
        )
        names = config.get("controller.listener.names") or ""
        self.addresses = PeerAddresses(self.voters, self.raft, names.split(",")[0].strip())
        """Where each peer's controller listener is (static voters, the voter set, learnt leaders)."""
        self.voters = self.addresses
        self.controller: QuorumController | None = None
        if CONTROLLER_ROLE in self.roles:
            self.controller = QuorumController(
                self.node_id,
                self.raft,
                self.rng,
                ControllerConfig(
                    session_timeout_ms=config.get_int("broker.session.timeout.ms"),
                    unclean_leader_election=config.get_bool("unclean.leader.election.enable"),
                    default_partitions=config.get_int("num.partitions"),
                    default_replication_factor=config.get_int("default.replication.factor"),
                    auto_leader_rebalance=config.get_bool("auto.leader.rebalance.enable"),
                    leader_imbalance_check_interval_ms=1000
                    * config.get_int("leader.imbalance.check.interval.seconds"),
                    bootstrap_records=ports.bootstrap_records,
                ),
                self.cluster_id,
            )
        self.image = ControllerImage(cluster_id=self.cluster_id, controller_id=-1)
        self.raft.register(self)
        self.ready = False
        """The image has caught up with the committed log once (partitions may be opened from it)."""
        self._changed = False
        self._ids = itertools.count(1 << 32)
        self._answers: dict[int, Callable[[Any], None]] = {}
        self.broker_epoch = -1
        self.incarnation_id = str(uuid.UUID(int=(self.node_id & (2**64 - 1)) << 64 | now_ms & (2**64 - 1)))
        """This process's registrations (Kafka's incarnation id): unique per start, from no randomness."""
        self._registration_refused: ErrorCode | None = None
        self.fenced = True
        self.want_shut_down = False
        self.should_shut_down = False
        self._heartbeat_interval_ms = config.get_int("broker.heartbeat.interval.ms")
        self._request_timeout_ms = raft_config.request_timeout_ms * 4
        self._lifecycle_inflight: tuple[int, int] | None = None  # (correlation id, sent at, monotonic)
        self._next_heartbeat_ms = broker.mono_ms
        """When the next registration or heartbeat is due, on the monotonic clock."""
        self._dir_assigner = DirectoryAssigner(self._request_timeout_ms)
        self._producer_blocks: deque[list[int]] = deque()  # [next, limit) of each block
        self._producer_ids_asked = False
        self._now_ms = now_ms
        """The wall time of the last tick, as given (Raft's clock)."""
        self._snapshot_after_bytes = config.get_int("metadata.log.max.record.bytes.between.snapshots")
        self._bytes_since_snapshot = 0

    # -- RaftListener: the broker's metadata image -------------------------------------------------

    def handle_commit(self, batch: CommittedBatch) -> None:
        for offset, value in batch.records:
            self.image.apply(decode_record(value), offset)
            self._bytes_since_snapshot += len(value)
        self._changed = True

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.image = decode_snapshot(snapshot.data, self.cluster_id, snapshot.snapshot_id.offset)
        self._bytes_since_snapshot = 0
        self._changed = True
        log.info(
            "node %d: metadata image loaded from the snapshot ending at offset %d",
            self.node_id,
            snapshot.snapshot_id.offset,
        )

    def _maybe_snapshot(self) -> None:
        """Past ``metadata.log.max.record.bytes.between.snapshots`` of committed records, write the
        image as a snapshot at the published offset; the log then starts there (Kafka's
        SnapshotGenerator). Each node snapshots its own image, voter or not."""
        if self._bytes_since_snapshot < self._snapshot_after_bytes:
            return
        end = self.raft.published_offset  # the image holds exactly what lies below it
        if end <= 0:
            return
        self.raft.create_snapshot(end, encode_snapshot(self.image))
        self._bytes_since_snapshot = 0
        log.info("node %d: metadata snapshot at offset %d", self.node_id, end)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.image.controller_id = leader.leader_id
        log.info(
            "node %d: metadata quorum leader is %d (epoch %d)", self.node_id, leader.leader_id, leader.epoch
        )

    # -- driving -------------------------------------------------------------------------------

    def tick(self, now_ms: int, mono_ms: int | None = None) -> None:
        """Fire the quorum's (wall ``now_ms``) and the controller's and the lifecycle's (monotonic
        ``mono_ms``, by default the broker's) timers, route what they want sent."""
        self._now_ms = now_ms
        mono = self.broker.mono_ms if mono_ms is None else mono_ms
        for _ in range(8):  # answers may produce more answers (a local controller request)
            self.raft.poll(now_ms)
            if self.controller is not None:
                self.controller.poll(now_ms, mono)
            self._lifecycle(mono)
            if not self._route(now_ms):
                break
        self._apply_metadata(now_ms)
        self._maybe_snapshot()
        self.broker.purgatory.check_and_complete(COMMIT_KEY, now_ms)

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline on the monotonic clock (Raft's, in wall time, converted)."""
        raft = self.raft.next_deadline_ms()
        deadlines = [None if raft is None else raft - self._now_ms + self.broker.mono_ms]
        if self.controller is not None:
            deadlines.append(self.controller.next_deadline_ms())
        if not self.is_broker:
            pass
        elif self._lifecycle_inflight is None:
            deadlines.append(self._next_heartbeat_ms)
        else:
            deadlines.append(self._lifecycle_inflight[1] + self._request_timeout_ms)
        found = [d for d in deadlines if d is not None]
        return min(found) if found else None

    def _apply_metadata(self, now_ms: int) -> None:
        # A restarted replica learns its leader from quorum-state, without a leader change event.
        leader = self.raft.leader_id
        self.image.controller_id = leader if leader in self.voters else -1
        hw = self.raft.high_watermark
        if not self.ready and hw is not None and self.raft.published_offset >= hw:
            self.ready = True
            self.broker.image = self.image
            self.broker.on_metadata_ready(now_ms)
            self._changed = False
            return
        if self._changed and self.ready:
            self._changed = False
            self.broker.image = self.image
            self.broker.sync_partitions(now_ms)

    def _route(self, now_ms: int) -> bool:
        """Send what the replica and the controller produced; True if anything was routed."""
        out = list(self.raft.drain_outbound())
        if self.controller is not None:
            out += self.controller.drain_outbound()
        for envelope in out:
            body = envelope.body
            if _is_request(body):
                self._send_raft(envelope.destination_id, body)
            else:
                callback = self._answers.pop(body.correlation_id, None)
                if callback is not None:
                    callback(body)
        return bool(out)

    def _send_raft(self, node_id: int, body: Any) -> None:
        address = self.addresses.get(node_id)
        if address is None:
            return

        def done(response: Any, error: str | None) -> None:
            if response is None:
                return  # the replica's own request timeout retries
            self.addresses.learn(response)
            answer = wire.response_from_wire(body, response)
            self.raft.handle(
                Envelope(source_id=node_id, destination_id=self.node_id, body=answer), self._now_ms
            )

        request = wire.request_to_wire(body, self.cluster_id, self._own_endpoint())
        self.broker.send_request(node_id, request, done, address=address, channel="raft")

    def _own_endpoint(self) -> tuple[str, str, int] | None:
        """This node's controller listener (name, host, port), as a leader's notices carry it."""
        address = self.voters.get(self.node_id)
        names = self.broker.config.get("controller.listener.names") or ""
        if address is None:
            return None
        return names.split(",")[0].strip() or "CONTROLLER", address[0], address[1]

    # -- requests from peers -----------------------------------------------------------------------

    def serve(self, ctx: RequestContext, api_key: int, request: Any) -> Reply:
        """Answer a peer's quorum or controller request once the replica or the controller has."""
        from ..handlers.registry import Deferred  # the handlers package imports this module

        if not defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER):
            refused = inbound.request_error(api_key, request, self.cluster_id)
            if refused is not None:  # another cluster's, or not the metadata partition's
                return quorum_error(ctx, api_key, refused)
        parsed = wire.request_from_wire(api_key, request, next(self._ids))
        if parsed is None:  # a request naming no metadata partition
            return quorum_error(ctx, api_key, ErrorCode.unknown_topic_or_partition)
        source, body = parsed
        wait_ms = getattr(body, "max_wait_ms", 0) + self._request_timeout_ms
        op = _AwaitAnswer(ctx.received_ms + wait_ms, ctx, api_key, body, self.voters)
        if api_key == wire.FETCH:
            op.peers = self.addresses
        self._answers[body.correlation_id] = lambda answer: op.deliver(answer, self._now_ms)
        # Raft and the controller's appends see the one wall clock Raft's poll sees, as given (Kafka's
        # KafkaRaftClient reads time.milliseconds() for both): not the request's receipt time, which
        # the broker holds at the latest wall time seen, so that after a backward step a deadline set
        # here would lie ahead by the step (the leader's append flush, a follower's fetch timeout).
        wall_ms = self.broker.wall_ms
        if isinstance(body, RAFT_MESSAGE_TYPES):
            self.raft.handle(Envelope(source_id=source, destination_id=self.node_id, body=body), wall_ms)
        elif self.controller is not None:
            self.controller.handle_request(source, body, wall_ms, self.broker.mono_ms)
        else:
            self._answers.pop(body.correlation_id)
            op.answer = not_controller_answer(body)
        return Deferred(op, ())

    def serve_voter_change(self, ctx: RequestContext, api_key: int, request: Any) -> Reply:
        """AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter at this node's replica (voter_admin.py)."""
        leader = self.raft.leader_id
        host, port = self.addresses.get(leader) or ("", -1)
        names = self.broker.config.get("controller.listener.names") or ""
        listener = names.split(",")[0].strip() or None  # a lone voter may have none
        current = (leader, self.raft.epoch, host, port)
        reply = voter_admin.serve(
            self.raft, self.cluster_id, listener, ctx, api_key, request, (COMMIT_KEY,), current
        )
        self._route(ctx.received_ms)  # the followers' parked fetches carry the new VotersRecord
        return reply

    # -- requests to the active controller --------------------------------------------------------

    def controller_id(self) -> int:
        leader = self.raft.leader_id
        voters = sorted(self.voters)
        if leader in voters or not voters:
            return leader
        return voters[self.rng.randrange(len(voters))]

    def forward_target(self, ctx: RequestContext) -> int | None:
        """The active controller to forward a client's admin request to (KIP-590), or None when this
        node answers it: it is the controller (or the quorum's leader), no leader is known, or the
        request was forwarded already."""
        if ctx.client_id.startswith(PEER_CLIENT_PREFIX):
            return None
        if self.controller is not None and self.controller.is_active:
            return None
        leader = self.raft.leader_id
        if leader not in self.voters or leader == self.node_id:
            return None
        return leader

    def to_controller(self, body: Any, on_answer: Callable[[Any], None]) -> None:
        """Send a controller request to the active controller (this node's own, when it is)."""
        self._answers[body.correlation_id] = on_answer
        target = self.controller_id()
        if target == self.node_id and self.controller is not None:
            self.controller.handle_request(self.node_id, body, self._now_ms, self.broker.mono_ms)
            return

        def done(response: Any, error: str | None) -> None:
            callback = self._answers.pop(body.correlation_id, None)
            if callback is not None:
                callback(None if response is None else wire.response_from_wire(body, response))

        address = self.addresses.get(target)
        if address is None:  # no controller known yet: the caller asks again
            done(None, "no controller known")
            return
        request = wire.request_to_wire(body, self.cluster_id)
        self.broker.send_request(target, request, done, address=address, channel=CONTROLLER_CHANNEL)

    def next_correlation_id(self) -> int:
        return next(self._ids)

    # -- admin requests clients send to the controller ----------------------------------------------

    def write_mark(self) -> tuple[Any, int] | None:
        """(this node's active controller, its last written offset), or None when it is not active."""
        controller = self.controller
        if controller is None or controller.active is None:
            return None
        return controller.active, controller.active.last_written_offset

    def hold_until_committed(
        self, ctx: RequestContext, reply: Reply, mark: tuple[Any, int] | None, timeout_ms: int
    ) -> Reply:
        """An admin handler's answer, held until the records it wrote (if any) are committed."""
        from ..handlers.registry import Deferred, Respond

        after = self.write_mark()
        if mark is None or after is None or after[1] <= mark[1] or not isinstance(reply, Respond):
            return reply
        timeout = timeout_ms if timeout_ms > 0 else ADMIN_TIMEOUT_MS
        op = _CommitBarrier(self, ctx.received_ms + timeout, ctx, reply.body, after)
        return Deferred(op, (COMMIT_KEY,))

    def submit_admin(
        self, ctx: RequestContext, body: Any, to_wire: Callable[[Any], Any], timeout_ms: int
    ) -> Reply:
        """ElectLeaders and the reassignment APIs: decided by the active controller (this node's, or
        forwarded to it as KRaft brokers forward, KIP-590), answered once its records are committed.
        A forwarded request is answered by that controller's own handler; if it is not active after
        all, its NOT_CONTROLLER reaches the client, which retries."""
        from ..handlers.registry import Deferred, Respond

        controller = self.controller
        active_here = controller is not None and controller.is_active
        if not active_here and ctx.client_id.startswith(PEER_CLIENT_PREFIX):
            return Respond(to_wire(not_controller_answer(body)))  # forwarded once, never twice
        op = _AdminAnswer(
            ctx.received_ms + (timeout_ms if timeout_ms > 0 else ADMIN_TIMEOUT_MS), ctx, body, to_wire
        )
        self.to_controller(body, lambda answer: op.deliver(answer, self._now_ms))
        return Deferred(op, ())

    # -- the broker lifecycle -------------------------------------------------------------------

    def begin_controlled_shutdown(self, now_ms: int) -> None:
        """SIGTERM: ask the controller to move this broker's leaderships away (heartbeats say so)."""
        self.want_shut_down = True
        self._next_heartbeat_ms = self.broker.mono_ms
        if self.broker_epoch < 0:
            self.should_shut_down = True

    def resign(self, now_ms: int) -> None:
        """The last step of a clean stop: a leading voter hands the quorum over (EndQuorumEpoch)."""
        self.raft.resign(now_ms)
        self._route(now_ms)

    def heartbeat_now(self, mono_ms: int) -> None:
        """Heartbeat at once (a log directory failed: Kafka's ``propagateDirectoryFailure``); ``mono_ms``
        is the monotonic clock the heartbeat schedule runs on."""
        self._next_heartbeat_ms = min(self._next_heartbeat_ms, mono_ms)

    def _lifecycle(self, mono_ms: int) -> None:
        """Register or heartbeat when due by ``mono_ms`` (the monotonic clock), giving up on an
        unanswered one after the request timeout."""
        if not self.is_broker:
            return
        if self.ready:
            self._dir_assigner.maybe_send(  # its scan interval and in-flight timeout: monotonic too
                mono_ms, self.image, self.broker.store, self.node_id, self.broker_epoch,
                self.next_correlation_id, self.to_controller,
            )  # fmt: skip
        inflight = self._lifecycle_inflight
        if inflight is not None and mono_ms - inflight[1] >= self._request_timeout_ms:
            self._answers.pop(inflight[0], None)
            self._lifecycle_inflight = inflight = None
        if inflight is not None or mono_ms < self._next_heartbeat_ms:
            return
        correlation = next(self._ids)
        body: Any
        if self.broker_epoch < 0:
            host, port = self.broker.advertised
            body = cm.BrokerRegistrationRequest(
                correlation_id=correlation,
                broker_id=self.node_id,
                host=host,
                port=port,
                rack=self.broker.rack,
                incarnation_id=self.incarnation_id,
                log_dirs=online_dir_ids(self.broker.store) or None,
                features=SUPPORTED_FEATURES,
            )
        else:
            body = cm.BrokerHeartbeatRequest(
                correlation_id=correlation,
                broker_id=self.node_id,
                broker_epoch=self.broker_epoch,
                current_metadata_offset=self.raft.published_offset,
                want_shut_down=self.want_shut_down,
                offline_log_dirs=offline_dir_ids(self.broker.store),
            )
        self._lifecycle_inflight = (correlation, mono_ms)
        self.to_controller(body, self._lifecycle_answer)

    def _lifecycle_answer(self, body: Any) -> None:
        now_ms = self.broker.mono_ms  # the lifecycle's clock
        self._lifecycle_inflight = None
        if body is None or body.error_code == ErrorCode.not_controller:
            self._next_heartbeat_ms = now_ms + 50
            return
        if isinstance(body, cm.BrokerRegistrationResponse):
            if body.error_code == ErrorCode.none:
                self.broker_epoch = body.broker_epoch
                log.info("broker %d registered: broker epoch %d", self.node_id, self.broker_epoch)
                self._next_heartbeat_ms = now_ms
                return
            if body.error_code != self._registration_refused:  # one line per reason, not per retry
                log.info("broker %d: registration refused: %s; retrying", self.node_id, body.error_code.name)
            self._registration_refused = body.error_code
            self._next_heartbeat_ms = now_ms + max(1, self._heartbeat_interval_ms // 10)
            return
        if body.error_code in (ErrorCode.stale_broker_epoch, ErrorCode.broker_id_not_registered):
            self.broker_epoch = -1
            self._next_heartbeat_ms = now_ms
            return
        if body.error_code != ErrorCode.none:
            self._next_heartbeat_ms = now_ms + 100
            return
        if self.fenced != body.is_fenced:
            log.info("broker %d is %s", self.node_id, "fenced" if body.is_fenced else "unfenced")
        self.fenced = body.is_fenced
        if body.should_shut_down and not self.should_shut_down:
            log.info("broker %d: the controller moved every leadership away; shutting down", self.node_id)
        self.should_shut_down = self.should_shut_down or body.should_shut_down
        interval = self._heartbeat_interval_ms
        soon = self.fenced or self.want_shut_down
        self._next_heartbeat_ms = now_ms + (max(1, interval // 10) if soon else interval)
        if not self.fenced:
            self._maybe_ask_producer_ids()

    # -- producer ids ---------------------------------------------------------------------------

    def allocate_producer_id(self) -> int | None:
        """The next id of this broker's blocks; None while the first (or next) block is on its way."""
        while self._producer_blocks and self._producer_blocks[0][0] >= self._producer_blocks[0][1]:
            self._producer_blocks.popleft()
        left = sum(limit - start for start, limit in self._producer_blocks)
        if left <= PRODUCER_ID_PREFETCH:
            self._maybe_ask_producer_ids()
        if not self._producer_blocks:
            return None
        block = self._producer_blocks[0]
        block[0] += 1
        return block[0] - 1

    @property
    def has_producer_ids(self) -> bool:
        """A block of producer ids is at hand (the first comes after the first unfencing)."""
        return any(start < limit for start, limit in self._producer_blocks)

    def _maybe_ask_producer_ids(self) -> None:
        if self._producer_ids_asked or self.broker_epoch < 0:
            return
        if sum(limit - start for start, limit in self._producer_blocks) > PRODUCER_ID_PREFETCH:
            return
        self._producer_ids_asked = True
        body = cm.AllocateProducerIdsRequest(
            correlation_id=next(self._ids), broker_id=self.node_id, broker_epoch=self.broker_epoch
        )

        def answer(response: Any) -> None:
            self._producer_ids_asked = False
            if response is not None and response.error_code == ErrorCode.none:
                start = response.producer_id_start
                self._producer_blocks.append([start, start + response.producer_id_len])

        self.to_controller(body, answer)

    def live_brokers(self) -> list[BrokerInfo]:
        return [b for b in self.image.brokers.values() if not b.fenced]


def _is_request(body: Any) -> bool:
    return type(body).__name__.endswith("Request")


def quorum_error(ctx: RequestContext, api_key: int, code: ErrorCode) -> Reply:
    """A top-level error answer to a quorum or controller API (one-node mode, malformed requests)."""
    from reference_impl.protocol.apis import response_class
    from reference_impl.protocol.build import build

    from ..handlers.registry import Respond

    empty = {  # every field these answers have without a default, at its "nothing here" value
        "topics": [],
        "responses": [],
        "session_id": 0,
        "is_caught_up": False,
        "is_fenced": True,
        "should_shut_down": False,
        "producer_id_start": -1,
        "producer_id_len": 0,
        "broker_epoch": -1,
    }
    answer = {**empty, "error_code": code, "throttle_time": 0}
    return Respond(build(response_class(api_key, ctx.api_version), answer))
