"""One asyncio event loop serving one broker: connections in, effects out.

Each connection is an :class:`asyncio.Protocol` (callbacks, no per-request
task), since the broker answers synchronously in almost every case; the few
delayed answers come back through :meth:`BrokerShell.apply` when a timer or
another connection's request completes them. What a client may make the
broker hold is bounded: a connection is read one frame at a time and muted
while its request is in flight or its response unsent (the core says when it
may be read again, :class:`ResumeReading`), request bytes come from the
core's ``queued.max.request.bytes``, and :class:`~.guard.ConnectionGuard`
bounds connection counts and closes idle connections and slow requests.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from reference_impl import defects
from reference_impl.core import boundary
from reference_impl.core.broker import Broker
from reference_impl.log.api import FileRegion
from reference_impl.log.descriptors import POOL, PooledFile
from reference_impl.log.files import RegionReadError, read_region
from reference_impl.protocol.apis import API_KEYS, request_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import decode_response, encode_request
from reference_impl.protocol.frames import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, FrameSizeError
from reference_impl.protocol.sasl_client import SaslClientError, SaslStep, sasl_exchange

from .guard import ConnectionGuard
from .links import PLAIN_LINK, Links, LinkSecurity
from .listener import Listener, connection_slots, descriptor_limit
from .tls import HANDSHAKE_TIMEOUT_S, peer_dn

log = logging.getLogger("reference_impl.server")

PAUSE_READING_BYTES = 32 << 20
"""The old reader's write buffer bound (``defects.UNBOUNDED_BUFFERING``): reads paused above it."""
TLS_WRITE_BUFFER_BYTES = 64 << 10
TLS_COPY_CHUNK_BYTES = 256 << 10
"""What a TLS connection may hold unsent before reading pauses (see ``_Connection.connection_made``)."""
READ_CHUNK_BYTES = 64 << 10
"""The most one read of a client connection takes (a large frame arrives in several reads)."""
LEGACY_READ_BYTES = 256 << 10
"""asyncio's own read size, the old reader's."""
LISTEN_BACKLOG = 1024
LINK_SASL_AUTHENTICATE_VERSION = 2
"""SaslAuthenticate's version on this node's own links (its peers are reference brokers: 0..2)."""
UNBOUNDED_CONNECTIONS = 1 << 30
"""max.connections when neither configured nor bounded by a descriptor limit (RLIMIT_NOFILE unlimited)."""
INLINE_REGION_BYTES = 64 << 10
"""A response whose file regions add up to at most this is read and written at once, with its other
parts, in the loop turn that completed it: a follower's or a tailing consumer's answer (a few batches)
then leaves without a ``sendfile`` task, its wait for the write buffer to drain and the connection's
reads paused meanwhile (several loop turns each way; the acks=all round trip is two such answers).
Larger answers go out with ``sendfile`` (issue 22)."""
REFUSAL_LOG_INTERVAL_MS = 1_000
"""Refused connections are logged at most once a second (with a count), so a flood is one line a second."""
_SIZE = struct.Struct(">i")


def wall_clock_ms() -> int:
    """Kafka's clock: wall time in ms (record timestamps and retention are wall-clock based)."""
    return time.time_ns() // 1_000_000


async def send_region(
    loop: asyncio.AbstractEventLoop, transport: asyncio.Transport, region: FileRegion
) -> int:
    """``sendfile`` a fetch answer's file region from the log's bounded descriptor pool.

    The shared read-only descriptor stays pinned while the send is in flight.
    ``file_id`` is the inode the region was read from: the cleaner renames a
    new segment over the old name, and a region must not be served from the
    other file (OSError then, and the connection closes; the client refetches).
    """
    reader = POOL.reader(region.path, region.file_id)
    if transport.get_extra_info("ssl_object") is not None:  # TLS: the bytes must pass through Python
        return await _copy_region(transport, reader, region)
    with reader.pinned() as fd, os.fdopen(fd, "rb", closefd=False) as handle:
        return await loop.sendfile(transport, handle, region.position, region.length)


async def _copy_region(transport: asyncio.Transport, reader: PooledFile, region: FileRegion) -> int:
    """A file region written through a TLS transport (asyncio's sendfile fallback refuses those), a
    chunk at a time, waiting while more than TLS_WRITE_BUFFER_BYTES wait unsent."""
    sent = 0
    while sent < region.length and not transport.is_closing():
        with reader.pinned() as fd:
            chunk = os.pread(fd, min(TLS_COPY_CHUNK_BYTES, region.length - sent), region.position + sent)
        if not chunk:
            break  # the segment shrank: the caller closes the connection
        transport.write(chunk)
        sent += len(chunk)
        while transport.get_write_buffer_size() > TLS_WRITE_BUFFER_BYTES and not transport.is_closing():
            await asyncio.sleep(0.001)
    return sent


def monotonic_ms() -> int:
    """The broker's monotonic clock (Kafka's ``System.nanoTime``): the core's timers (delayed
    operations, heartbeats, sessions, throttles) and the connection guard's idle and slow-request
    deadlines must not jump with the wall clock."""
    return time.monotonic_ns() // 1_000_000


class _Connection(asyncio.BufferedProtocol):
    """A client connection, read one frame at a time, as the core allows.

    Each read takes at most the rest of the size prefix or of the frame being
    read (never a byte of the next frame), so what a client pipelines stays in
    the kernel's buffers, where TCP pushes back on the client. The frame's body
    is read only once :meth:`Broker.reserve_frame` has granted its size; after
    a whole frame is handed to the core the connection is not read again until
    the core says ``ResumeReading`` and the response written so far has left
    (Kafka: a channel stays muted until its response is sent). One read per
    connection per loop turn, at most one frame: no connection takes more than
    a bounded share of a turn, however much it has sent.
    """

    def __init__(self, shell: BrokerShell, connection_id: int, listener: str) -> None:
        self.shell = shell
        self.connection_id = connection_id
        self.listener = listener
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.sending: asyncio.Task[None] | None = None
        self.unbounded = shell.unbounded
        self.decoder = FrameDecoder(shell.max_frame_bytes)  # the old reader's (seeded defect only)
        self._chunk = bytearray(LEGACY_READ_BYTES if self.unbounded else READ_CHUNK_BYTES)
        self._prefix = bytearray()
        self._size = -1
        """The size of the frame being read; -1 while its size prefix is read."""
        self._body = bytearray()
        self.muted = False
        """A frame was handed to the core, which has not yet said ResumeReading."""
        self.awaiting_memory = False
        """The core refused the frame's reservation; its ResumeReading grants it."""
        self.write_blocked = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        # Paused as soon as anything waits unsent; over TLS once TLS_WRITE_BUFFER_BYTES wait: asyncio's TLS
        # transport counts its own handshake leftovers (TLS 1.3 session tickets) and re-checks the bound
        # only when the application writes, so a lower one would pause a connection that never wrote.
        tls = transport.get_extra_info("ssl_object") is not None
        high = PAUSE_READING_BYTES if self.unbounded else TLS_WRITE_BUFFER_BYTES if tls else 0
        transport.set_write_buffer_limits(high=high)
        self.shell.connections[self.connection_id] = self
        self.shell.feed(
            boundary.ConnectionOpened(
                connection_id=self.connection_id,
                client_host=str(peer[0]),
                client_port=int(peer[1]),
                listener=self.listener,
                peer_certificate_dn=peer_dn(transport.get_extra_info("peercert")),
            )
        )

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.unbounded:
            return memoryview(self._chunk)
        if self._size < 0:
            want = 4 - len(self._prefix)
        else:
            want = min(self._size - len(self._body), READ_CHUNK_BYTES)
        return memoryview(self._chunk)[: max(1, want)]

    def buffer_updated(self, nbytes: int) -> None:
        if self.unbounded:
            self._read_everything(nbytes)
            return
        if self.transport is None or self.transport.is_closing():
            # A closed connection's bytes are dropped: asyncio's TLS protocol keeps handing over what it
            # had decrypted after close(), which once overran the 4-byte size prefix (struct.error, "Fatal
            # error on SSL protocol" in the log; the SASL fuzz phase's oversized frames found it).
            return
        now = monotonic_ms()
        guard = self.shell.guard
        guard.active(self.connection_id, now)
        data = memoryview(self._chunk)[:nbytes]
        if self._size >= 0:
            self._body += data
        else:
            if not self._prefix:
                guard.receiving(self.connection_id, now)
                self.shell.watch()
            self._prefix += data
            if len(self._prefix) < 4:
                return
            (size,) = _SIZE.unpack(self._prefix)
            limit = self.shell.broker.frame_limit(self.connection_id, self.shell.max_frame_bytes)
            if size < 0 or size > limit:  # smaller until a SASL connection has authenticated
                self._refuse_frame(FrameSizeError(size, limit))
                return
            self._size = size
            if not self.shell.broker.reserve_frame(self.connection_id, size):
                self.awaiting_memory = True
                guard.received(self.connection_id)  # the wait is the broker's, not the client's
                self._update_reading()
                return
        if len(self._body) == self._size:
            self._deliver()

    def _deliver(self) -> None:
        frame = bytes(self._body)
        self._body = bytearray()
        self._prefix = bytearray()
        self._size = -1
        self.shell.guard.received(self.connection_id)
        self.muted = True
        self.shell.feed(boundary.FrameReceived(connection_id=self.connection_id, frame=frame))
        self._update_reading()

    def resume(self) -> None:
        """The core's ResumeReading: the frame's reservation is granted, or the connection unmuted."""
        if self.unbounded:
            return
        if self.awaiting_memory:
            self.awaiting_memory = False
            self.shell.guard.receiving(self.connection_id, monotonic_ms())
            self.shell.watch()
            if self._size == 0:  # an empty frame has no body to wait for
                asyncio.get_running_loop().call_soon(self._deliver)
                return
        else:
            self.muted = False
        self._update_reading()

    def _update_reading(self) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self.unbounded:
            want = not self.write_blocked
        else:
            want = not (self.muted or self.awaiting_memory or self.write_blocked or self.sending is not None)
        if want != transport.is_reading():
            if want:
                transport.resume_reading()
            else:
                transport.pause_reading()

    def _refuse_frame(self, exc: FrameSizeError) -> None:
        log.warning("closing connection %d from %s: %s", self.connection_id, self.peer, exc)
        self.close()

    def _read_everything(self, nbytes: int) -> None:
        """The old reader (``defects.UNBOUNDED_BUFFERING``): every frame received is handed over at
        once, whatever waits ahead of it, and nothing else bounds a connection."""
        try:
            frames = self.decoder.feed(memoryview(self._chunk)[:nbytes])
        except FrameSizeError as exc:
            self._refuse_frame(exc)
            return
        for frame in frames:
            self.shell.feed(boundary.FrameReceived(connection_id=self.connection_id, frame=frame))
            if self.transport is None or self.transport.is_closing():
                return

    def pause_writing(self) -> None:
        self.write_blocked = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.write_blocked = False
        self.shell.guard.active(self.connection_id, monotonic_ms())
        self._update_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.shell.connections.pop(self.connection_id, None)
        self.shell.guard.close(self.connection_id)
        for accepting in self.shell.listeners:
            accepting.connection_closed()
        self.shell.feed(boundary.ConnectionClosed(connection_id=self.connection_id))

    def write(self, parts: tuple[bytes | FileRegion, ...]) -> None:
        """Write one response; file regions go out with ``sendfile``, in order with everything else."""
        if self.transport is None or self.transport.is_closing():
            return
        self.shell.guard.active(self.connection_id, monotonic_ms())
        if self.sending is None:
            inline = _inline(parts)
            if inline is None:
                self.close()  # a region's segment went away: the frame cannot be whole (the client refetches)
                return
            parts = inline
        if self.sending is None and all(isinstance(p, bytes) for p in parts):
            # one write, one send(2): each write on an idle transport is a system call of its own
            self.transport.write(parts[0] if len(parts) == 1 else b"".join(parts))  # type: ignore[arg-type]
            return
        task = asyncio.get_running_loop().create_task(self._send_in_order(self.sending, parts))
        self.sending = task
        task.add_done_callback(self._sent)
        self._update_reading()

    def _sent(self, task: asyncio.Task[None]) -> None:
        if self.sending is task:
            self.sending = None
            self.shell.guard.active(self.connection_id, monotonic_ms())
            self._update_reading()  # asyncio's sendfile pauses and resumes reading by itself

    async def _send_in_order(
        self, previous: asyncio.Task[None] | None, parts: tuple[bytes | FileRegion, ...]
    ) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        loop = asyncio.get_running_loop()
        for part in parts:
            transport = self.transport
            if transport is None or transport.is_closing():
                return
            if isinstance(part, bytes):
                transport.write(part)
                continue
            try:
                sent = await send_region(loop, transport, part)
            except (OSError, RuntimeError) as exc:
                sent, reason = -1, str(exc)
            else:
                reason = f"sent {sent} of {part.length} bytes (the segment shrank)"
            if sent != part.length:
                log.warning(
                    "closing connection %d from %s: file region of %s: %s",
                    self.connection_id,
                    self.peer,
                    part.path,
                    reason,
                )  # the frame is short: the peer cannot parse on
                self.close()
                return

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _inline(parts: tuple[bytes | FileRegion, ...]) -> tuple[bytes | FileRegion, ...] | None:
    """``parts`` with their file regions read, when they add up to at most INLINE_REGION_BYTES (else
    as they are, for ``sendfile``); None when a region can no longer be read whole."""
    regions = [p for p in parts if isinstance(p, FileRegion)]
    if not regions or sum(r.length for r in regions) > INLINE_REGION_BYTES:
        return parts
    try:
        return tuple(p if isinstance(p, bytes) else read_region(p) for p in parts)
    except (RegionReadError, OSError) as exc:
        log.warning("dropping a response: %s", exc)
        return None


class _PeerConnection(asyncio.Protocol):
    """This broker's connection to a peer: requests out, responses matched in order.

    On a SASL link the connection first authenticates (SaslHandshake, SaslAuthenticate: the shared
    client side, :func:`~reference_impl.protocol.sasl_client.sasl_exchange`, as the node's own
    user); the requests sent meanwhile wait, and go out, in order, once it has. A refusal fails
    them and closes the connection (the next request opens a new one)."""

    def __init__(self, shell: BrokerShell, node_id: int, security: LinkSecurity = PLAIN_LINK) -> None:
        self.shell = shell
        self.node_id = node_id
        self.security = security
        self.decoder = FrameDecoder(shell.max_frame_bytes)
        self.transport: asyncio.Transport | None = None
        self.pending: list[bytes] = []
        self.in_flight: deque[tuple[int, int, int]] = deque()  # (request id, api key, api version)
        self.closed = False
        self._sasl: Generator[SaslStep, Any, None] | None = None
        self._sasl_step: tuple[int, int] | None = None  # (api key, version) of the exchange's request
        self.address = "?"

    def send(self, request_id: int, api_key: int, api_version: int, frame: bytes) -> None:
        self.in_flight.append((request_id, api_key, api_version))
        if self.transport is None or self._sasl is not None:
            self.pending.append(frame)
        else:
            self.transport.write(frame)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        link = self.security.link
        if link.sasl:
            self._sasl = sasl_exchange(
                link.mechanism or "", link.username or "", link.password or "", self.address,
                LINK_SASL_AUTHENTICATE_VERSION,
            )
            self._advance(None)
            return
        self._flush()

    def _flush(self) -> None:
        assert self.transport is not None
        for frame in self.pending:
            self.transport.write(frame)
        self.pending.clear()

    def _advance(self, answer: object) -> None:
        """Send the SASL exchange's next request, or, once it is done, the requests that waited."""
        assert self._sasl is not None and self.transport is not None
        try:
            api, version, fields = self._sasl.send(answer)
        except StopIteration:
            self._sasl = self._sasl_step = None
            log.info("link to node %d (%s) authenticated as %s", self.node_id, self.address,
                     self.security.link.username)
            self._flush()
            return
        except SaslClientError as exc:
            log.warning("link to node %d: %s", self.node_id, exc)
            self._sasl = None
            self.fail(f"authentication to node {self.node_id} failed: {exc}")
            self.transport.close()
            return
        key = API_KEYS[api]
        self._sasl_step = (key, version)
        self.transport.write(encode_request(build(request_class(key, version), fields), -1,
                                            f"broker-{self.shell.broker.node_id}"))

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except FrameSizeError as exc:
            log.warning("peer %d sent an oversized frame: %s", self.node_id, exc)
            self.close()
            return
        for frame in frames:
            if self._sasl is not None:
                assert self._sasl_step is not None
                try:
                    _corr, answer = decode_response(*self._sasl_step, frame)
                except Exception as exc:  # a peer's garbage must not take this broker down
                    log.warning("link to node %d: undecodable SASL answer: %s", self.node_id, exc)
                    self.close()
                    return
                self._advance(answer)
                continue
            if self.closed:
                return
            if not self.in_flight:
                log.warning(
                    "peer %d answered a request we did not send; dropping the connection", self.node_id
                )
                self.close()
                return
            request_id, api_key, api_version = self.in_flight.popleft()
            self.shell.feed(boundary.answer(request_id, api_key, api_version, frame))

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(f"connection to broker {self.node_id} lost: {exc or 'closed'}")

    def fail(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.transport = None
        self.shell.forget_peer(self)
        while self.in_flight:
            request_id, _key, _version = self.in_flight.popleft()
            self.shell.feed(boundary.RequestFailed(request_id=request_id, reason=reason))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        else:
            self.fail("closed")


class BrokerShell:
    """Owns the broker, its listening socket and its wake-up timer.

    The core is given both clocks at every call: ``clock`` (wall time: timestamps, retention,
    Raft) and ``monotonic`` (its timers); the wake-up it asks for is on the monotonic clock, which
    asyncio's timers run on too, so a step of the wall clock neither fires nor holds it."""

    def __init__(
        self,
        broker: Broker,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        monotonic: Callable[[], int] = monotonic_ms,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        links: Links | None = None,
    ) -> None:
        self.broker = broker
        broker.send_now = self.carry_out
        self.links = links or Links()
        self.clock = clock
        self.monotonic = monotonic
        self.max_frame_bytes = max_frame_bytes
        self.unbounded = defects.enabled(defects.UNBOUNDED_BUFFERING)
        self.guard = _guard_for(broker)
        self._guard_timer: asyncio.TimerHandle | None = None
        self._guard_at_ms: int | None = None
        self._refusals = 0
        self._refusal_logged_ms = -REFUSAL_LOG_INTERVAL_MS
        self.connections: dict[int, _Connection] = {}
        self._ids = itertools.count(1)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at_ms: int | None = None
        self.listeners: list[Listener] = []
        self.peers: dict[tuple[int, str, int, str], _PeerConnection] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def listen(
        self, host: str, port: int, listener: str = "PLAINTEXT", ssl_context: ssl.SSLContext | None = None
    ) -> tuple[str, int]:
        """Open the socket of one named listener (every connection it accepts carries the name).

        Every listener shares one bound on open connections, what the descriptor limit leaves after
        the log files' pool (:func:`~.listener.connection_slots`): at it, accepting pauses until a
        connection closes, as Kafka's acceptor waits for a slot. Below it, :meth:`_admit` refuses
        what ``max.connections``/``max.connections.per.ip`` do not allow.
        """
        slots = None if self.unbounded else connection_slots(descriptor_limit(), POOL.capacity)
        accepting = Listener(
            lambda sock, address: self._admit(sock, address, listener),
            lambda: len(self.connections),
            slots,
            ssl_context,
            self._abandoned,
        )
        address = accepting.start(host, port, backlog=LISTEN_BACKLOG)
        self.listeners.append(accepting)
        self.tick()
        return address

    def _admit(
        self, sock: socket.socket, address: tuple[str, int], listener: str
    ) -> asyncio.BaseProtocol | None:
        """The protocol for a connection just accepted on ``listener``, or None to close it at once
        (over ``max.connections`` or ``max.connections.per.ip``, logged at most once a second)."""
        connection_id = next(self._ids)
        if not self.unbounded:
            refusal = self.guard.open(connection_id, str(address[0]), monotonic_ms())
            if refusal is not None:
                self.refused(f"{address[0]}:{address[1]}", refusal)
                return None
            self.watch()
        return _Connection(self, connection_id, listener)

    def _abandoned(self, protocol: asyncio.BaseProtocol) -> None:
        """An admitted connection whose TLS handshake failed: its guard slot is freed."""
        if isinstance(protocol, _Connection):
            self.guard.close(protocol.connection_id)
            for accepting in self.listeners:
                accepting.connection_closed()

    def feed(self, event: boundary.Event) -> None:
        self.apply(self.broker.step(event, self.clock(), self.monotonic()))

    def tick(self) -> None:
        """Run the core's timers due now, and carry out what they produce."""
        self.apply(self.broker.tick(self.clock(), self.monotonic()))

    def apply(self, step: boundary.Step) -> None:
        for effect in step.effects:
            self.carry_out(effect)
        self._schedule(step.next_wakeup_ms)

    def carry_out(self, effect: boundary.Effect) -> None:
        """One effect of the core's. Also the core's ``send_now``: a write never calls back into the
        core (asyncio reports a lost connection on a later turn of the loop)."""
        if isinstance(effect, boundary.SendRequest):
            self._send_request(effect)
            return
        conn = self.connections.get(effect.connection_id)
        if conn is None:
            return
        if isinstance(effect, boundary.SendResponse):
            conn.write(effect.parts)
        elif isinstance(effect, boundary.ResumeReading):
            conn.resume()
        elif isinstance(effect, boundary.CloseConnection):
            conn.close()

    def watch(self) -> None:
        """Arm the guard's timer for its next deadline, unless one at least as early is armed."""
        at = self.guard.next_deadline_ms()
        if at is None or (self._guard_at_ms is not None and self._guard_at_ms <= at):
            return
        if self._guard_timer is not None:
            self._guard_timer.cancel()
        self._guard_at_ms = at
        delay = max(0.0, (at - monotonic_ms()) / 1000)
        self._guard_timer = asyncio.get_running_loop().call_later(delay, self._expire)

    def _expire(self) -> None:
        self._guard_timer = None
        self._guard_at_ms = None
        for connection_id, reason in self.guard.expired(monotonic_ms()):
            conn = self.connections.get(connection_id)
            if conn is not None:
                log.warning("closing connection %d from %s: %s", connection_id, conn.peer, reason)
                conn.close()
        self.watch()

    def refused(self, peer: str, reason: str) -> None:
        """A connection closed as it was accepted: one log line a second at most, with the count."""
        self._refusals += 1
        now = monotonic_ms()
        if now - self._refusal_logged_ms >= REFUSAL_LOG_INTERVAL_MS:
            log.warning(
                "refusing connections (%s): %d refused since the last such line, the latest from %s",
                reason,
                self._refusals,
                peer,
            )
            self._refusals = 0
            self._refusal_logged_ms = now

    def _send_request(self, effect: boundary.SendRequest) -> None:
        key = (effect.node_id, effect.host, effect.port, effect.channel)
        peer = self.peers.get(key)
        if peer is None:
            security = self.links.for_channel(effect.channel)
            peer = self.peers[key] = _PeerConnection(self, effect.node_id, security)
            task = asyncio.get_running_loop().create_task(self._connect(peer, effect.host, effect.port))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        body = effect.body
        frame = encode_request(body, effect.request_id, f"broker-{self.broker.node_id}")
        peer.send(effect.request_id, int(body.__api_key__), int(body.__version__), frame)

    async def _connect(self, peer: _PeerConnection, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        peer.address = f"{host}:{port}"
        context = peer.security.context
        tls: dict[str, Any] = (
            {"ssl": context, "server_hostname": host, "ssl_handshake_timeout": HANDSHAKE_TIMEOUT_S}
            if context is not None
            else {}
        )
        try:
            await asyncio.wait_for(loop.create_connection(lambda: peer, host, port, **tls), timeout=10)
        except (TimeoutError, OSError, ssl.SSLError) as exc:
            peer.fail(f"cannot connect to broker {peer.node_id} at {host}:{port}: {exc}")

    def forget_peer(self, peer: _PeerConnection) -> None:
        for key, known in list(self.peers.items()):
            if known is peer:
                del self.peers[key]

    def _schedule(self, at_ms: int | None) -> None:
        if at_ms is None or (
            self._timer_at_ms is not None and self._timer_at_ms <= at_ms and self._timer is not None
        ):
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, (at_ms - self.monotonic()) / 1000)
        self._timer_at_ms = at_ms
        self._timer = asyncio.get_running_loop().call_later(delay, self._wake)

    def _wake(self) -> None:
        self._timer = None
        self._timer_at_ms = None
        self.tick()

    async def close(self) -> None:
        for accepting in self.listeners:
            accepting.close()
        for conn in list(self.connections.values()):
            conn.close()
        for peer in list(self.peers.values()):
            peer.close()
        if self._timer is not None:
            self._timer.cancel()
        if self._guard_timer is not None:
            self._guard_timer.cancel()
        self.broker.shutdown(self.clock())
        POOL.release_idle()


def _guard_for(broker: Broker) -> ConnectionGuard:
    """The guard from the broker's configs; max.connections and max.connections.per.ip, when unset,
    are the connection slots this process's RLIMIT_NOFILE leaves after the log files
    (:func:`~.listener.connection_slots`; no bound when the limit is unlimited)."""
    config = broker.config
    configured = config.get("max.connections")
    slots = connection_slots(descriptor_limit(), POOL.capacity)
    max_connections = int(configured) if configured is not None else (slots or UNBOUNDED_CONNECTIONS)
    per_ip = config.get("max.connections.per.ip")
    return ConnectionGuard(
        max_connections=max_connections,
        max_per_ip=int(per_ip) if per_ip is not None else max_connections,
        idle_ms=config.get_int("connections.max.idle.ms"),
        receive_timeout_ms=config.get_int("reference.request.receive.timeout.ms"),
    )
