"""One asyncio event loop serving one broker: connections in, effects out.

Each connection is an :class:`asyncio.Protocol` (callbacks, no per-request
task), since the broker answers synchronously in almost every case; the few
delayed answers come back through :meth:`BrokerShell.apply` when a timer or
another connection's request completes them. A connection whose peer stops
reading gets its socket reads paused once its write buffer passes
``PAUSE_READING_BYTES``, as Kafka mutes a channel.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections import deque
from collections.abc import Callable

from reference_impl.core.boundary import (
    CloseConnection,
    ConnectionClosed,
    ConnectionOpened,
    Event,
    FrameReceived,
    RequestFailed,
    ResponseReceived,
    SendRequest,
    SendResponse,
    Step,
)
from reference_impl.core.broker import Broker
from reference_impl.log.api import FileRegion
from reference_impl.log.descriptors import POOL
from reference_impl.protocol.codec import decode_response, encode_request
from reference_impl.protocol.frames import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, FrameSizeError

from .listener import Listener, connection_slots, descriptor_limit

log = logging.getLogger("reference_impl.server")

PAUSE_READING_BYTES = 32 << 20


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
    with reader.pinned() as fd, os.fdopen(fd, "rb", closefd=False) as handle:
        return await loop.sendfile(transport, handle, region.position, region.length)


def wall_clock_ms() -> int:
    """Kafka's clock: wall time in ms (record timestamps and retention are wall-clock based)."""
    return time.time_ns() // 1_000_000


class _Connection(asyncio.Protocol):
    def __init__(self, shell: BrokerShell, connection_id: int, listener: str) -> None:
        self.shell = shell
        self.connection_id = connection_id
        self.listener = listener
        self.decoder = FrameDecoder(shell.max_frame_bytes)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.paused = False
        self.sending: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        transport.set_write_buffer_limits(high=PAUSE_READING_BYTES)
        self.shell.connections[self.connection_id] = self
        self.shell.feed(
            ConnectionOpened(
                connection_id=self.connection_id,
                client_host=str(peer[0]),
                client_port=int(peer[1]),
                listener=self.listener,
            )
        )

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except FrameSizeError as exc:
            log.warning("closing connection %d from %s: %s", self.connection_id, self.peer, exc)
            self.close()
            return
        for frame in frames:
            self.shell.feed(FrameReceived(connection_id=self.connection_id, frame=frame))
            if self.transport is None or self.transport.is_closing():
                return

    def pause_writing(self) -> None:
        if self.transport is not None and not self.paused:
            self.paused = True
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and self.paused:
            self.paused = False
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.shell.connections.pop(self.connection_id, None)
        self.transport = None
        for accepting in self.shell.listeners:
            accepting.connection_closed()
        self.shell.feed(ConnectionClosed(connection_id=self.connection_id))

    def write(self, parts: tuple[bytes | FileRegion, ...]) -> None:
        """Write one response; file regions go out with ``sendfile``, in order with everything else."""
        if self.transport is None or self.transport.is_closing():
            return
        if self.sending is None and all(isinstance(p, bytes) for p in parts):
            for part in parts:
                self.transport.write(part)  # type: ignore[arg-type]
            return
        task = asyncio.get_running_loop().create_task(self._send_in_order(self.sending, parts))
        self.sending = task
        task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        if self.sending is task:
            self.sending = None

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


class _PeerConnection(asyncio.Protocol):
    """This broker's connection to a peer: requests out, responses matched in order."""

    def __init__(self, shell: BrokerShell, node_id: int) -> None:
        self.shell = shell
        self.node_id = node_id
        self.decoder = FrameDecoder(shell.max_frame_bytes)
        self.transport: asyncio.Transport | None = None
        self.pending: list[bytes] = []
        self.in_flight: deque[tuple[int, int, int]] = deque()  # (request id, api key, api version)
        self.closed = False

    def send(self, request_id: int, api_key: int, api_version: int, frame: bytes) -> None:
        self.in_flight.append((request_id, api_key, api_version))
        if self.transport is None:
            self.pending.append(frame)
        else:
            self.transport.write(frame)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        for frame in self.pending:
            transport.write(frame)
        self.pending.clear()

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except FrameSizeError as exc:
            log.warning("peer %d sent an oversized frame: %s", self.node_id, exc)
            self.close()
            return
        for frame in frames:
            if not self.in_flight:
                log.warning(
                    "peer %d answered a request we did not send; dropping the connection", self.node_id
                )
                self.close()
                return
            request_id, api_key, api_version = self.in_flight.popleft()
            try:
                _corr, body = decode_response(api_key, api_version, frame)
            except Exception as exc:  # a peer's garbage must not take this broker down
                self.shell.feed(RequestFailed(request_id=request_id, reason=f"undecodable response: {exc}"))
                continue
            self.shell.feed(ResponseReceived(request_id=request_id, body=body))

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
            self.shell.feed(RequestFailed(request_id=request_id, reason=reason))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        else:
            self.fail("closed")


class BrokerShell:
    """Owns the broker, its listening socket and its wake-up timer."""

    def __init__(
        self,
        broker: Broker,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.broker = broker
        self.clock = clock
        self.max_frame_bytes = max_frame_bytes
        self.connections: dict[int, _Connection] = {}
        self._ids = itertools.count(1)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at_ms: int | None = None
        self.listeners: list[Listener] = []
        self.peers: dict[tuple[int, str, int, str], _PeerConnection] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def listen(self, host: str, port: int, listener: str = "PLAINTEXT") -> tuple[str, int]:
        """Open the socket of one named listener (every connection it accepts carries the name).

        Every listener shares one bound on connections: what the descriptor limit leaves after the
        log files' pool."""
        slots = connection_slots(descriptor_limit(), POOL.capacity)
        accepting = Listener(
            lambda: _Connection(self, next(self._ids), listener), lambda: len(self.connections), slots
        )
        address = accepting.start(host, port, backlog=1024)
        self.listeners.append(accepting)
        self.apply(self.broker.tick(self.clock()))
        return address

    def feed(self, event: Event) -> None:
        self.apply(self.broker.step(event, self.clock()))

    def apply(self, step: Step) -> None:
        for effect in step.effects:
            if isinstance(effect, SendRequest):
                self._send_request(effect)
                continue
            conn = self.connections.get(effect.connection_id)
            if conn is None:
                continue
            if isinstance(effect, SendResponse):
                conn.write(effect.parts)
            elif isinstance(effect, CloseConnection):
                conn.close()
        self._schedule(step.next_wakeup_ms)

    def _send_request(self, effect: SendRequest) -> None:
        key = (effect.node_id, effect.host, effect.port, effect.channel)
        peer = self.peers.get(key)
        if peer is None:
            peer = self.peers[key] = _PeerConnection(self, effect.node_id)
            task = asyncio.get_running_loop().create_task(self._connect(peer, effect.host, effect.port))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        body = effect.body
        frame = encode_request(body, effect.request_id, f"broker-{self.broker.node_id}")
        peer.send(effect.request_id, int(body.__api_key__), int(body.__version__), frame)

    async def _connect(self, peer: _PeerConnection, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.create_connection(lambda: peer, host, port), timeout=10)
        except (TimeoutError, OSError) as exc:
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
        delay = max(0.0, (at_ms - self.clock()) / 1000)
        self._timer_at_ms = at_ms
        self._timer = asyncio.get_running_loop().call_later(delay, self._wake)

    def _wake(self) -> None:
        self._timer = None
        self._timer_at_ms = None
        self.apply(self.broker.tick(self.clock()))

    async def close(self) -> None:
        for accepting in self.listeners:
            accepting.close()
        for conn in list(self.connections.values()):
            conn.close()
        for peer in list(self.peers.values()):
            peer.close()
        if self._timer is not None:
            self._timer.cancel()
        self.broker.shutdown(self.clock())
        POOL.release_idle()
