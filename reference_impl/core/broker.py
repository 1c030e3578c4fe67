"""The broker: connections in, responses out, everything in between as a state machine.

One call, :meth:`Broker.step`, takes an event (a connection opened, a request
frame arrived, a connection closed) and the current time, and returns a
:class:`Step`: the responses to send, connections to close, and when to call
:meth:`Broker.tick` next. Requests of one connection are handled one at a
time in arrival order, as Kafka's network layer mutes a connection while its
request is in flight; a request that waits (a long-poll fetch) holds its
connection's later requests back until it completes. The core also decides
when the shell may read a connection again (``ResumeReading``) and how many
request bytes may be held (:mod:`.read_gate`), so a client that pipelines
behind a waiting request cannot make the broker buffer what it sends.

This module is the request pipeline; the partition replicas are the replica manager's
(:mod:`.replica_manager`), and every subsystem sees the broker through a host protocol of its own
(:mod:`.host`), so nothing in the core imports this module.
"""

from __future__ import annotations

import itertools
import logging
import random
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.static.protocol import RequestPayload, ResponsePayload

from reference_impl import defects
from reference_impl.protocol.apis import API_VERSIONS_KEY, UnknownApiError, api_name
from reference_impl.protocol.build import build, millis
from reference_impl.protocol.codec import (
    MalformedRequestError,
    decode_request_body,
    decode_request_header,
    encode_response,
    encode_response_spliced,
    peek_header,
)
from reference_impl.protocol.errors import ErrorCode
from reference_impl.timer.wheel import TimingWheel

from .boundary import (
    DATA_CHANNEL,
    CloseConnection,
    ConnectionClosed,
    ConnectionOpened,
    Effect,
    Event,
    FrameReceived,
    RequestFailed,
    ResponseReceived,
    ResumeReading,
    SendRequest,
    SendResponse,
    Step,
)
from .cleaning import CleanerSchedule
from .configs.model import parse_peer_addresses
from .configs.resolution import BrokerConfig
from .controller.broker_client import ClusterControllerClient
from .controller.records import ControllerImage
from .fetch_sessions import FetchSessionCache
from .group.coordinator import GroupCoordinator
from .handlers import HANDLERS, Deferred, NoResponse, Respond
from .handlers.access import admin_write_authorized
from .handlers.forwarding import forward
from .handlers.registry import Handler, Reply, Splices
from .host import ResponseCallback
from .kraft.quorum import ADMIN_TIMEOUT_MS, ClusterQuorum, QuorumPorts, lone_voter_ports
from .kraft.roles import CONTROLLER_LISTENER_APIS, CONTROLLER_ONLY_APIS
from .listeners import parse_names
from .metadata.image import MetadataImage
from .metadata.records import METADATA_TOPIC, METADATA_TOPIC_ID, SCRAM_MECHANISM_TYPES, MetadataRecord
from .mutants import ANSWER_BEFORE_CAUGHT_UP, MUTANT_CONFIG
from .partition import Partition
from .ports import LogStore, TopicPartition
from .purgatory import Purgatory
from .quota_managers import QuotaManagers
from .read_gate import ReadGate
from .replica_manager import ReplicaManager
from .replication.fetcher import ReplicaFetcher
from .request_context import RequestContext
from .security import Authenticator
from .security.acls import authorizer_from_config
from .security.mechanisms import ScramCredential
from .telemetry import ClientTelemetry
from .txn.coordinator import TransactionCoordinator

log = logging.getLogger("reference_impl.broker")

PRODUCE_KEY = 0
PIPELINED_PRODUCES = 32
"""Produce requests of one connection that may wait for their replicas at once (see
``Broker._may_process``); more stay unread, as the connection's other requests do."""
ADMIN_WRITES = frozenset({19, 20, 30, 31, 33, 37, 44, 49, 51, 57, 80, 81})
"""CreateTopics, DeleteTopics, CreateAcls, DeleteAcls, AlterConfigs, CreatePartitions,
IncrementalAlterConfigs, AlterClientQuotas, AlterUserScramCredentials, UpdateFeatures: in a cluster
their answer waits until the active controller's records are committed."""
HW_CHECKPOINT_INTERVAL_MS = 5_000


@dataclass
class _Connection:
    connection_id: int
    client_host: str
    client_port: int
    listener: str
    outstanding: deque[RequestContext] = field(default_factory=deque)
    """Requests taken from ``waiting`` whose responses are not sent yet, in arrival order."""
    waiting: deque[bytes] = field(default_factory=deque)
    closed: bool = False
    draining: bool = False
    muted: bool = False
    """A frame was read and the shell has not been told it may read the next one (ResumeReading)."""
    throttled_until_ms: int = 0
    """KIP-219: a client over its quota is answered at once and then neither read nor served
    until this time (Kafka mutes the channel, ``ThrottledChannel``)."""


class Broker:
    """A broker: alone, the only voter of its own KRaft quorum (a combined broker+controller whose
    controller requests are answered in process); given ``quorum``, a member of a cluster whose
    metadata comes from that controller quorum (:mod:`.kraft`). One controller path either way."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        store: LogStore,
        advertised_host: str,
        advertised_port: int,
        cluster_id: str,
        now_ms: int,
        mono_ms: int | None = None,
        rng: random.Random | None = None,
        rack: str | None = None,
        quorum: QuorumPorts | None = None,
        bootstrap_records: Sequence[MetadataRecord] = (),
    ) -> None:
        """``quorum`` makes this broker a member of a cluster run by a controller quorum; by default
        it is the only voter of its own (memory stores; the shell gives file stores,
        ``server/cli.py``). ``bootstrap_records`` (``--add-scram``'s SCRAM credentials) are written
        when that lone voter's metadata log is empty, as ``kafka-storage format`` writes them once;
        a cluster's come in ``quorum``.

        Time comes in on two clocks (:meth:`step`, :meth:`tick`): ``now_ms`` is wall time (Kafka's
        ``Time.milliseconds()``, ``System.currentTimeMillis``), ``mono_ms`` a monotonic clock
        (Kafka's ``Time.nanoseconds()``/``hiResClockMs()``, ``System.nanoTime``); without it the
        monotonic clock is the wall clock (the in-process tests); a caller that gives ``mono_ms`` to
        the steps gives it here too (its timers start on it)."""
        self.config = config
        self.node_id = config.node_id
        self.now_ms = now_ms
        """Wall time, never back: the latest wall time seen (record timestamps, retention, ISR lag,
        transaction timeouts, as Kafka reads ``time.milliseconds()`` for them)."""
        self.mono_ms = now_ms if mono_ms is None else mono_ms
        """The monotonic clock: what Kafka times on ``System.nanoTime`` (delayed operations, broker
        heartbeats and sessions, quota throttles, periodic tasks) times on this."""
        self._wall_ms = now_ms
        """The wall time last given, as given (Raft and the replica fetcher's backoff read it)."""
        self.store = store
        self.rng = rng or random.Random(config.node_id)
        self.advertised = (advertised_host, advertised_port)
        self.rack = rack
        self.open_to_clients = False
        self.halt_reason: str | None = None
        """Set when the broker must stop at once: the log directory holding the metadata log, or every
        log directory, failed (Kafka halts then); the shell exits 1."""
        """A broker handles requests on its (not controller) listeners from its first unfencing on
        (:meth:`_maybe_open_to_clients`), a single broker too (its own controller unfences it at
        once); a controller only needs no such wait."""
        self._answers_before_caught_up = config.get(MUTANT_CONFIG) == ANSWER_BEFORE_CAUGHT_UP
        """The seeded mode that undoes that wait (:data:`.mutants.ANSWER_BEFORE_CAUGHT_UP`)."""
        if quorum is None:  # a single broker: the only voter of its own quorum (issue 24)
            quorum = lone_voter_ports(self.node_id, self.advertised, tuple(bootstrap_records))
        self.image: MetadataImage = ControllerImage(cluster_id=cluster_id, controller_id=-1)
        metadata_log = store.open_log(METADATA_TOPIC, 0, METADATA_TOPIC_ID, {}, now_ms)
        replayed = metadata_log.log_end_offset
        self.quorum: ClusterQuorum = ClusterQuorum(self, quorum, metadata_log, now_ms)
        self.controller = ClusterControllerClient(self.quorum)
        self.purgatory = Purgatory(TimingWheel(start_ms=self.mono_ms), lambda: self.mono_ms)
        self.replica_manager = ReplicaManager(self, self.node_id, config, store, self.purgatory)
        self.fetch_sessions = FetchSessionCache(
            max_slots=config.get_int("max.incremental.fetch.session.cache.slots"), rng=self.rng
        )
        self._connections: dict[int, _Connection] = {}
        self.read_gate = ReadGate(
            config.get_int("queued.max.request.bytes"), config.get_int("queued.max.requests")
        )
        self._pending_requests: dict[int, ResponseCallback] = {}
        self._request_ids = itertools.count(1)
        self._peer_overrides = parse_peer_addresses(config.get("inter.broker.addresses") or "")
        self.controller_listeners = frozenset(parse_names(config.get("controller.listener.names") or ""))
        self.listener_addresses: dict[str, tuple[str, int]] = {}
        """This node's advertised address per listener (the shell sets it): a client is told the address
        of the listener it came in on, as Kafka's ``MetadataCache.getAliveBrokerNodes(listenerName)``."""
        self.authenticator = Authenticator(
            config.static, config.get_int("sasl.server.max.receive.size"), scram=self.scram_credential
        )
        self.authorizer = authorizer_from_config(config.static)
        self.telemetry = ClientTelemetry()
        """``StandardAuthorizer`` when ``authorizer.class.name`` names it (issue 18); None: no ACLs."""
        self.client_quotas = QuotaManagers(lambda: self.image)
        self._throttled: set[int] = set()
        """Connections muted by a quota's throttle (see :meth:`throttle`)."""
        self._outbox: list[Effect] = []
        self.send_now: Callable[[SendRequest | SendResponse], None] | None = None
        """Set by a shell that writes a response or a request as the step makes it, while nothing
        is queued before it (so the order is the outbox's): a follower's data no longer waits for
        the rest of a produce's step, nor its next fetch for the tick (issue 22). None: every effect
        comes with the step's answer, as the simulator and the tests take them."""
        self._maintenance_interval_ms = min(
            config.get_int("log.retention.check.interval.ms"),
            config.get_int("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            HW_CHECKPOINT_INTERVAL_MS,
            max(1, config.get_int("replica.lag.time.max.ms") // 2),
        )
        self.txn_coordinator = TransactionCoordinator(self)
        self.group_coordinator = GroupCoordinator(self)  # group coordinator: created before the first sync
        self.fetcher = ReplicaFetcher(self)
        self.cleaner = CleanerSchedule(config, self.mono_ms)  # compaction: the store cleans, this asks when
        self._next_maintenance_ms = self.mono_ms + self._maintenance_interval_ms
        self.group_coordinator.start(now_ms)  # group coordinator: replay the led __consumer_offsets shards
        log.info(
            "broker %d ready: cluster %s, metadata log ends at %d, %d partitions",
            self.node_id,
            cluster_id,
            replayed,
            len(self.partitions),
        )

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        """The user's SCRAM credential as the metadata image holds it (Kafka's ``ScramImage``)."""
        record = self.image.scram.get((SCRAM_MECHANISM_TYPES.get(mechanism, 0), user))
        if record is None:
            return None
        return ScramCredential(record.salt, record.stored_key, record.server_key, record.iterations)

    def on_metadata_ready(self, now_ms: int) -> None:
        """The image is complete (replayed, or caught up with the quorum): open the partitions.

        Each partition gets its checkpointed HW as it is opened, before it takes a role (see
        :meth:`sync_partitions`), so a leader with no follower to wait for makes its log end the
        HW at once and a replicated leader moves it as its followers fetch: nothing acknowledged
        waits for a new write to become readable after a restart."""
        self.sync_partitions(now_ms)
        if defects.enabled(defects.LATE_HIGH_WATERMARK):  # the old order: restored after the roles
            for key, hw in self.store.high_watermarks().items():
                if key in self.partitions:
                    self.partitions[key].restore_high_watermark(hw)
        self.txn_coordinator.load()

    # -- the sans-IO entry points ----------------------------------------------------------------

    def step(self, event: Event, now_ms: int, mono_ms: int | None = None) -> Step:
        """Handle ``event`` at wall time ``now_ms`` and monotonic time ``mono_ms`` (default: the wall
        time); the answer's ``next_wakeup_ms`` is on the monotonic clock."""
        self._clocks(now_ms, mono_ms)
        match event:
            case ConnectionOpened(connection_id=cid, client_host=host, client_port=port, listener=name):
                self._connections[cid] = _Connection(cid, host, port, name)
                refused = self.authenticator.opened(cid, name, event.peer_certificate_dn)
                if refused is not None:
                    self._close(self._connections[cid], refused)
            case FrameReceived(connection_id=cid, frame=frame):
                conn = self._connections.get(cid)
                if conn is not None and not conn.closed:
                    conn.muted = True
                    self.read_gate.arrived(cid, len(frame))
                    conn.waiting.append(frame)
                    self._release(conn, now_ms)
            case ConnectionClosed(connection_id=cid):
                self.read_gate.forget(cid)
                self.authenticator.closed(cid)
                conn = self._connections.pop(cid, None)
                if conn is not None:
                    conn.closed = True
                    self.purgatory.cancel_all([c.delayed for c in conn.outstanding if c.delayed is not None])
            case ResponseReceived(request_id=rid, body=body):
                callback = self._pending_requests.pop(rid, None)
                if callback is not None:
                    callback(body, None)
            case RequestFailed(request_id=rid, reason=reason):
                callback = self._pending_requests.pop(rid, None)
                if callback is not None:
                    callback(None, reason)
        return self.tick(now_ms, mono_ms)

    # -- requests to peers -------------------------------------------------------------------------

    def peer_address(self, node_id: int) -> tuple[str, int] | None:
        """Where to reach broker ``node_id``: an ``inter.broker.addresses`` override, else its registration.

        The override lets a proxy sit on every broker-to-broker link, one per
        direction and pair, without the peers advertising different addresses.
        """
        override = self._peer_overrides.get(node_id)
        if override is not None:
            return override
        info = self.image.brokers.get(node_id)
        return (info.host, info.port) if info is not None else None

    def send_request(
        self,
        node_id: int,
        body: RequestPayload,
        on_done: ResponseCallback,
        *,
        address: tuple[str, int] | None = None,
        channel: str = DATA_CHANNEL,
    ) -> bool:
        """Ask ``node_id`` (at ``address``, by default its broker address); ``on_done(response, None)``
        or ``on_done(None, reason)`` follows. False if the node's address is unknown (nothing is sent)."""
        address = address or self.peer_address(node_id)
        if address is None:
            return False
        request_id = next(self._request_ids)
        self._pending_requests[request_id] = on_done
        self._emit(
            SendRequest(
                request_id=request_id,
                node_id=node_id,
                host=address[0],
                port=address[1],
                body=body,
                channel=channel,
            )
        )
        return True

    def _emit(self, effect: SendRequest | SendResponse) -> None:
        if self.send_now is not None and not self._outbox:
            self.send_now(effect)
        else:
            self._outbox.append(effect)

    def _clocks(self, now_ms: int, mono_ms: int | None) -> None:
        self._wall_ms = now_ms
        self.now_ms = max(self.now_ms, now_ms)
        self.mono_ms = max(self.mono_ms, now_ms if mono_ms is None else mono_ms)

    def tick(self, now_ms: int, mono_ms: int | None = None) -> Step:
        """Expire delayed operations and run periodic maintenance due by ``mono_ms`` (monotonic; by
        default the wall time ``now_ms``). The answer's ``next_wakeup_ms`` is on the monotonic clock:
        the deadlines kept in wall time (Raft's, the replica fetcher's backoff) are converted.

        What Kafka schedules on ``KafkaScheduler`` (retention checks, ISR expiration, the transaction
        abort check: a ``ScheduledThreadPoolExecutor``, ``System.nanoTime``;
        ``server-common/src/main/java/org/apache/kafka/server/util/KafkaScheduler.java``) and the
        cleaner's backoff run on the monotonic clock; the work itself compares wall times."""
        self._clocks(now_ms, mono_ms)
        mono = self.mono_ms
        self.purgatory.advance(self.now_ms, mono)
        self.quorum.tick(now_ms, mono)
        self._maybe_open_to_clients(now_ms)
        self.fetcher.maybe_fetch(now_ms)
        if mono >= self._next_maintenance_ms:
            self._maintain(now_ms)
        self.cleaner.maybe_clean(self.partitions, self.store, now_ms, mono)
        if self.replica_manager.check_log_dirs(now_ms):
            self.halt_reason = self.replica_manager.fatal_log_dir_failure()
            self.quorum.heartbeat_now(mono)  # Kafka's BrokerLifecycleManager.propagateDirectoryFailure
        if self._throttled:
            self._end_throttles(now_ms)
        for granted in self.read_gate.grant_waiting():
            self._outbox.append(ResumeReading(connection_id=granted))
        effects = tuple(self._outbox)
        self._outbox.clear()
        deadlines = [
            d
            for d in (
                self.purgatory.next_deadline_ms(),
                self._next_maintenance_ms,
                self.wall_to_mono(self.fetcher.next_deadline_ms()),
                self.cleaner.next_deadline_ms(),
                self.quorum.next_deadline_ms(),
                self._next_throttle_end_ms() if self._throttled else None,
            )
            if d is not None
        ]
        return Step(effects, min(deadlines) if deadlines else None)

    @property
    def wall_ms(self) -> int:
        """The wall time as last given, even when it stepped back (``now_ms`` holds the latest)."""
        return self._wall_ms

    def wall_to_mono(self, wall_deadline_ms: int | None) -> int | None:
        """A deadline in wall time (as last given) as the same distance ahead on the monotonic clock."""
        if wall_deadline_ms is None:
            return None
        return wall_deadline_ms - self._wall_ms + self.mono_ms

    def shutdown(self, now_ms: int) -> None:
        """Clean stop: checkpoint high watermarks, flush and close every log."""
        self.store.checkpoint(self.high_watermarks())
        self.store.close()
        log.info("broker %d stopped cleanly", self.node_id)

    # -- partitions -------------------------------------------------------------------------------

    @property
    def partitions(self) -> dict[TopicPartition, Partition]:
        """The partition replicas this broker holds (the replica manager's)."""
        return self.replica_manager.partitions

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return self.replica_manager.high_watermarks()

    def followed_by_leader(self) -> dict[int, list[Partition]]:
        return self.replica_manager.followed_by_leader()

    def partition(self, topic: str, index: int) -> Partition | None:
        return self.replica_manager.partition(topic, index)

    def sync_partitions(self, now_ms: int) -> None:
        """Make the open partitions match the image (:meth:`ReplicaManager.sync`)."""
        self.replica_manager.sync(now_ms)

    def on_partitions_changed(self, now_ms: int) -> None:
        self.group_coordinator.on_partitions_changed(now_ms)  # load or unload __consumer_offsets shards
        self.txn_coordinator.load()  # replay or forget moved __transaction_state shards

    def after_follower_fetch(
        self, part: Partition, now_ms: int, fetched_by: int, high_watermark_moved: bool = True
    ) -> None:
        """A follower fetched: the HW may have moved (wake acks=all produces), the ISR may grow."""
        self.replica_manager.after_follower_fetch(part, now_ms, fetched_by, high_watermark_moved)

    def notify_partition_changed(self, key: TopicPartition, now_ms: int) -> None:
        """New data or a new high watermark: wake delayed operations watching the partition."""
        self.replica_manager.notify_changed(key, now_ms)

    # -- connections and requests ------------------------------------------------------------------

    def _process(self, conn: _Connection, frame: bytes, now_ms: int) -> None:
        try:
            # SASL before anything else
            screened = self.authenticator.screen(conn.connection_id, frame, now_ms, self.mono_ms)
        except Exception:  # a bug in the authenticator must not take the broker down
            log.error("authenticating connection %d failed:\n%s", conn.connection_id, traceback.format_exc())
            self._close(conn, "internal error during authentication")
            return
        if screened is not None:
            if screened.response is not None:
                self._send(conn, screened.response)
            if screened.close is not None:
                self._close(conn, screened.close)
            return
        try:
            api_key, api_version, correlation_id = peek_header(frame)
        except MalformedRequestError as exc:
            self._close(conn, f"malformed request: {exc}")
            return
        handler = HANDLERS.get(api_key)
        if handler is None:
            self._close(conn, f"unknown api key {api_key} (correlation id {correlation_id})")
            return
        if not self.serves(api_key, conn.listener):
            self._close(conn, f"{handler.name} v{api_version} is not enabled on listener {conn.listener}")
            return
        if not handler.supports(api_version):
            if api_key == API_VERSIONS_KEY:
                self._send(
                    conn,
                    encode_response(API_VERSIONS_KEY, 0, correlation_id, self._unsupported_api_versions()),
                )
                log.info(
                    "connection %d asked for ApiVersions v%d: answered UNSUPPORTED_VERSION with v0",
                    conn.connection_id,
                    api_version,
                )
            else:
                self._close(
                    conn,
                    f"{handler.name} v{api_version} is not supported "
                    f"(v{handler.min_version}-{handler.max_version})",
                )
            return
        try:
            header, offset = decode_request_header(frame)
            body = decode_request_body(header, frame, offset)
        except (MalformedRequestError, UnknownApiError) as exc:
            self._close(
                conn,
                f"malformed {api_name(api_key)} v{api_version} request: {exc} "
                f"(first bytes: {frame[:64].hex()})",
            )
            return
        ctx = RequestContext(
            self,
            conn.connection_id,
            header,
            conn.client_host,
            now_ms,
            conn.listener,
            self.authenticator.principal(conn.connection_id),
            size_bytes=len(frame),
        )
        conn.outstanding.append(ctx)
        mark = self.quorum.write_mark() if api_key in ADMIN_WRITES else None
        try:
            forwarded = self._forward_admin(ctx, handler, body) if api_key in ADMIN_WRITES else None
            reply = self.client_quotas.request.run(handler.fn, self, ctx, body, forwarded)
            if forwarded is None and mark is not None:  # answered once committed
                timeout = millis(getattr(body, "timeout", None))
                reply = self.quorum.hold_until_committed(ctx, reply, mark, timeout)
        except Exception:  # a bug in a handler must not take the broker down
            log.error(
                "%s v%d from connection %d failed:\n%s",
                handler.name,
                api_version,
                conn.connection_id,
                traceback.format_exc(),
            )
            self._close(conn, f"internal error handling {handler.name}")
            return
        if isinstance(reply, Respond):
            ctx.respond(reply.body, reply.splices)
        elif isinstance(reply, NoResponse):
            ctx.answered = True
            ctx.response = ()
            self._flush(conn)
        elif isinstance(reply, Deferred):
            ctx.delayed = reply.op
            self.purgatory.try_complete_else_watch(reply.op, reply.keys, now_ms)

    def finish_request(
        self, ctx: RequestContext, body: ResponsePayload, splices: Splices | None = None
    ) -> None:
        conn = self._connections.get(ctx.connection_id)
        if conn is None or conn.closed:
            return
        head = ctx.header
        try:
            if splices:
                parts = encode_response_spliced(
                    head.api_key, head.api_version, head.correlation_id, body, splices
                )
                ctx.response = tuple(parts)
            else:
                ctx.response = (encode_response(head.api_key, head.api_version, head.correlation_id, body),)
        except Exception:  # a handler's answer the schema cannot carry: a bug, never the broker's end
            log.error(
                "%s v%d answer to connection %d cannot be encoded:\n%s",
                api_name(head.api_key),
                head.api_version,
                conn.connection_id,
                traceback.format_exc(),
            )
            self._close(conn, f"internal error encoding the {api_name(head.api_key)} answer")
            return
        ctx.delayed = None
        self._flush(conn)
        self._release(conn, self.now_ms)

    def _flush(self, conn: _Connection) -> None:
        """Send the responses that are ready, in the order their requests came (Kafka's guarantee)."""
        while conn.outstanding and conn.outstanding[0].response is not None:
            parts = conn.outstanding.popleft().response
            if parts:
                self._emit(SendResponse(connection_id=conn.connection_id, parts=parts))

    def throttle(self, connection_id: int, throttle_ms: int) -> None:
        """Mute ``connection_id`` for ``throttle_ms`` from now (KIP-219, a quota's throttle): its
        answer still goes at once; nothing more of it is read or handled until then. The end is on the
        monotonic clock, as Kafka's ``ThrottledChannel.endTimeNanos``
        (``server/src/main/java/org/apache/kafka/server/quota/ThrottledChannel.java``)."""
        conn = self._connections.get(connection_id)
        if conn is not None and throttle_ms > 0:
            conn.throttled_until_ms = max(conn.throttled_until_ms, self.mono_ms + throttle_ms)
            self._throttled.add(connection_id)

    def _end_throttles(self, now_ms: int) -> None:
        for cid in list(self._throttled):
            conn = self._connections.get(cid)
            if conn is None or conn.closed:
                self._throttled.discard(cid)
            elif conn.throttled_until_ms <= self.mono_ms:
                self._throttled.discard(cid)
                conn.throttled_until_ms = 0
                self._release(conn, now_ms)

    def _next_throttle_end_ms(self) -> int | None:
        ends = [self._connections[c].throttled_until_ms for c in self._throttled if c in self._connections]
        return min(ends) if ends else None

    def controller_for_clients(self) -> int:
        """The controller id Metadata and DescribeCluster give clients: the active controller when it
        is a live broker; otherwise (separate controllers, which clients cannot reach) the live broker
        with the lowest id, the same on every broker, which forwards what clients send the controller
        (Kafka names a live broker too)."""
        controller = self.image.controller_id
        if controller < 0:
            return controller
        live = sorted(b.node_id for b in self.image.brokers.values() if not b.fenced)
        if controller in live:
            return controller
        return live[0] if live else -1

    def serves(self, api_key: int, listener: str) -> bool:
        """Whether ``listener`` serves the API, as Kafka's ``ApiVersionManager.isApiEnabled``: a
        controller listener (``controller.listener.names``) the controller's APIs, any other listener
        the broker's, never the quorum's and registration's (a controller-only node has no other)."""
        if defects.enabled(defects.QUORUM_ON_CLIENT_LISTENER):  # the old bug: one listener serves all
            return self.quorum.is_broker or api_key in CONTROLLER_LISTENER_APIS
        if self.is_controller_listener(listener):
            return api_key in CONTROLLER_LISTENER_APIS
        is_broker = self.quorum.is_broker
        return is_broker and api_key not in CONTROLLER_ONLY_APIS

    def is_controller_listener(self, listener: str) -> bool:
        return listener in self.controller_listeners

    def _forward_admin(self, ctx: RequestContext, handler: Handler, body: RequestPayload) -> Reply | None:
        """Hand a client's admin write to the active controller when it is another node (KIP-590);
        None when this node answers it. Should the controller not answer, the client gets this node's
        own answer (NOT_CONTROLLER), as before forwarding."""
        if handler.api_key in (80, 81) and self.is_controller_listener(ctx.listener):
            return None  # ControllerApis asks its own Raft replica (NOT_LEADER_OR_FOLLOWER), as Kafka
        target = self.quorum.forward_target(ctx)
        if target is None:
            return None
        if not admin_write_authorized(self, ctx, handler.api_key, body):  # answered here (ACLs, issue 18)
            return None

        def own_answer() -> ResponsePayload:
            reply = handler.fn(self, ctx, body)
            assert isinstance(reply, Respond), f"{handler.name} answers at once on a node not the controller"
            return reply.body

        quorum = self.quorum

        def retarget() -> tuple[int, tuple[str, int]] | None:
            """The controller now, if another node (this one answers NOT_CONTROLLER itself)."""
            now_target = quorum.forward_target(ctx)
            return None if now_target is None else (now_target, quorum.voters[now_target])

        timeout = millis(getattr(body, "timeout", None)) or ADMIN_TIMEOUT_MS
        return forward(self, ctx, body, target, self.quorum.voters[target], own_answer, timeout, retarget)

    def _release(self, conn: _Connection, now_ms: int) -> None:
        """Run the connection's waiting requests that may run now (see :meth:`_may_process`), then
        let the shell read the connection again if it may (:meth:`_readable`)."""
        if conn.draining:
            return  # an outer call is already working through the queue: no recursion
        conn.draining = True
        try:
            while conn.waiting and not conn.closed and self._may_process(conn) and self._open_to(conn):
                frame = conn.waiting.popleft()
                self.read_gate.handled(conn.connection_id, len(frame))
                self._process(conn, frame, self.now_ms)
        finally:
            conn.draining = False
        if conn.muted and not conn.closed and self._readable(conn):
            conn.muted = False
            self._outbox.append(ResumeReading(connection_id=conn.connection_id))

    def frame_limit(self, connection_id: int, limit: int) -> int:
        """The largest frame ``connection_id`` may send now: ``limit``, or ``sasl.server.max.receive.size``
        while it has not authenticated (a bigger one closes it)."""
        return self.authenticator.frame_limit(connection_id, limit)

    def endpoint_for(self, node_id: int, host: str, port: int, listener: str) -> tuple[str, int]:
        """Where a client on ``listener`` reaches ``node_id`` (registered at ``host:port``): this node's
        own address on that listener when known (other nodes register one address so far)."""
        if node_id == self.node_id:
            return self.listener_addresses.get(listener, (host, port))
        return host, port

    def reserve_frame(self, connection_id: int, size: int) -> bool:
        """Whether the shell may read the body of the next frame of ``connection_id`` (``size`` bytes,
        from its size prefix) now. False while the connection is muted (its request is in flight) or
        while ``queued.max.request.bytes`` / ``queued.max.requests`` are spent; the shell then reads
        nothing more from it until a ``ResumeReading`` names it (the reservation is then held)."""
        conn = self._connections.get(connection_id)
        if conn is None or conn.closed:
            return False
        if conn.muted and not defects.enabled(defects.UNBOUNDED_BUFFERING):
            return False
        return self.read_gate.reserve(connection_id, size)

    def _open_to(self, conn: _Connection) -> bool:
        """Whether requests on ``conn`` may be handled yet: a controller listener's always; any other
        listener's once this broker has caught up with the cluster's metadata (see
        :meth:`_maybe_open_to_clients`). Until then they wait unread, the connection muted."""
        quorum = self.quorum
        if self.open_to_clients or not quorum.is_broker or self._answers_before_caught_up:
            return True
        return self.is_controller_listener(conn.listener)

    def _maybe_open_to_clients(self, now_ms: int) -> None:
        """Handle client requests from the first time the controller unfences this broker on.

        Kafka's ``BrokerServer.startup`` enables request processing on the broker's listeners only
        after the controller has acknowledged the broker as caught up with the metadata log and the
        first metadata image is published (``core/src/main/scala/kafka/server/BrokerServer.scala``).
        A restarted broker that answered at once would answer from its stale image: a clean-clone
        CI run caught one telling a consumer that an existing topic did not exist (Metadata
        UNKNOWN_TOPIC_OR_PARTITION, Fetch UNKNOWN_TOPIC_ID) in the seconds before its registration
        went through, and librdkafka then waited for its next periodic metadata refresh: nothing
        was read for 30 s. Once open, a broker stays open (fenced later, it still answers, as Kafka)."""
        quorum = self.quorum
        if self.open_to_clients or quorum.fenced:
            return
        self.open_to_clients = True
        log.info("broker %d caught up with the metadata log: handling client requests", self.node_id)
        for conn in list(self._connections.values()):
            if conn.waiting and not conn.closed:
                self._release(conn, now_ms)

    def _readable(self, conn: _Connection) -> bool:
        """Kafka unmutes a channel once the response to its request is sent (``SocketServer.scala``,
        ``ChannelMuteEvent.RESPONSE_SENT``; ``KafkaChannel.java`` mute states): nothing of the
        connection is read while a request waits, except the pipelined Produce requests
        :meth:`_may_process` lets through. At most one frame then waits unhandled per connection."""
        if defects.enabled(defects.UNBOUNDED_BUFFERING):
            return True  # the old reader: every frame is read at once and queued in ``waiting``
        if conn.throttled_until_ms > self.mono_ms:
            return False
        if conn.waiting:
            return False
        if not conn.outstanding:
            return True
        return len(conn.outstanding) < PIPELINED_PRODUCES and all(
            c.header.api_key == PRODUCE_KEY for c in conn.outstanding
        )

    def _may_process(self, conn: _Connection) -> bool:
        """One request per connection at a time, as Kafka mutes a connection until it has answered;
        except that Produce requests behind Produce requests waiting for their replicas are appended
        at once, up to PIPELINED_PRODUCES, their answers still sent in order. Kafka's own round trip
        to the followers is well under a millisecond; this broker's is a few, and a client that
        pipelines small acks=all batches (librdkafka without idempotence sends one every linger.ms)
        would otherwise queue behind one replication round per request. Appends stay in arrival
        order, so sequence numbers, duplicates and epochs are judged exactly as without it. Nothing
        runs while a quota's throttle mutes the connection (:meth:`throttle`)."""
        if conn.throttled_until_ms > self.mono_ms:
            return False
        if not conn.outstanding:
            return True
        if len(conn.outstanding) >= PIPELINED_PRODUCES:
            return False
        if any(c.header.api_key != PRODUCE_KEY for c in conn.outstanding):
            return False
        try:
            return peek_header(conn.waiting[0])[0] == PRODUCE_KEY
        except MalformedRequestError:
            return False  # refused once the requests before it are answered

    def _send(self, conn: _Connection, frame: bytes) -> None:
        self._outbox.append(SendResponse(connection_id=conn.connection_id, parts=(frame,)))

    def _close(self, conn: _Connection, reason: str) -> None:
        log.warning("closing connection %d from %s: %s", conn.connection_id, conn.client_host, reason)
        conn.closed = True
        conn.waiting.clear()
        self._outbox.append(CloseConnection(connection_id=conn.connection_id, reason=reason))

    def _unsupported_api_versions(self) -> ApiVersionsResponseV0:
        own = HANDLERS[API_VERSIONS_KEY]
        return build(
            ApiVersionsResponseV0,
            {
                "error_code": ErrorCode.unsupported_version,
                "api_keys": [
                    {
                        "api_key": API_VERSIONS_KEY,
                        "min_version": own.min_version,
                        "max_version": own.max_version,
                    }
                ],
            },
        )

    # -- maintenance -----------------------------------------------------------------------------

    def _maintain(self, now_ms: int) -> None:
        self.replica_manager.check_isr(now_ms)
        self.txn_coordinator.expire_timed_out(now_ms)
        self.group_coordinator.maintain(now_ms)  # group coordinator: offsets retention
        self.store.maintain(now_ms, self.high_watermarks())
        self.store.checkpoint(self.high_watermarks())
        self._next_maintenance_ms = self.mono_ms + self._maintenance_interval_ms
