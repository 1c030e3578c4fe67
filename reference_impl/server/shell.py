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
from collections.abc import Callable

from reference_impl.core.boundary import (
    CloseConnection,
    ConnectionClosed,
    ConnectionOpened,
    Event,
    FrameReceived,
    SendResponse,
    Step,
)
from reference_impl.core.broker import Broker
from reference_impl.log.api import FileRegion
from reference_impl.protocol.frames import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, FrameSizeError

log = logging.getLogger("reference_impl.server")

PAUSE_READING_BYTES = 32 << 20


def wall_clock_ms() -> int:
    """Kafka's clock: wall time in ms (record timestamps and retention are wall-clock based)."""
    return time.time_ns() // 1_000_000


class _Connection(asyncio.Protocol):
    def __init__(self, shell: BrokerShell, connection_id: int) -> None:
        self.shell = shell
        self.connection_id = connection_id
        self.decoder = FrameDecoder(shell.max_frame_bytes)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        transport.set_write_buffer_limits(high=PAUSE_READING_BYTES)
        self.shell.connections[self.connection_id] = self
        self.shell.feed(
            ConnectionOpened(
                connection_id=self.connection_id, client_host=str(peer[0]), client_port=int(peer[1])
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
        self.shell.feed(ConnectionClosed(connection_id=self.connection_id))

    def write(self, parts: tuple[bytes | FileRegion, ...]) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        for part in parts:
            if isinstance(part, FileRegion):
                with open(part.path, "rb") as f:
                    part = os.pread(f.fileno(), part.length, part.position)
            self.transport.write(part)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


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
        self._server: asyncio.Server | None = None

    async def listen(self, host: str, port: int) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self, next(self._ids)), host, port, reuse_address=True, backlog=1024
        )
        sock = self._server.sockets[0].getsockname()
        self.apply(self.broker.tick(self.clock()))
        return str(sock[0]), int(sock[1])

    def feed(self, event: Event) -> None:
        self.apply(self.broker.step(event, self.clock()))

    def apply(self, step: Step) -> None:
        for effect in step.effects:
            conn = self.connections.get(effect.connection_id)
            if conn is None:
                continue
            if isinstance(effect, SendResponse):
                conn.write(effect.parts)
            elif isinstance(effect, CloseConnection):
                conn.close()
        self._schedule(step.next_wakeup_ms)

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
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections.values()):
            conn.close()
        if self._timer is not None:
            self._timer.cancel()
        self.broker.shutdown(self.clock())
