"""One proxied connection: two directions (upstream, downstream), each a pump through its toxics.

Why the split into a reader and a writer stage: latency must delay each chunk from the moment it
arrived, not queue delays behind one another, so the reader stamps chunks and the writer waits
until each chunk's due time (keeping order). With no toxics the reader writes straight through,
which keeps the proxy's own cost far below a millisecond.

Toxics that act on the connection as a whole (``timeout``, ``reset_peer``, ``limit_data``) close
it from timers or byte counts; toxicity is drawn once per toxic and connection, as Toxiproxy does.

``reset_peer`` follows Toxiproxy's ``toxics/reset_peer.go`` (Shopify/toxiproxy): the toxic waits for
data on its stream; the first chunk that arrives is swallowed (never forwarded), and ``timeout`` ms
later the connection is closed with SO_LINGER 0 (a TCP RST to both peers); nothing more passes on
that stream meanwhile, and the reset comes even if the toxic is removed in between (its ``Pipe``
sleeps without watching for interruption). A connection on which nothing is sent is never reset.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import time
from collections.abc import Callable

from .toxics import Toxic

CHUNK = 64 * 1024
QUEUE_LIMIT = 256  # chunks held by the writer stage before the reader stops reading (backpressure)


class Direction:
    """Bytes from ``reader`` to ``writer`` through the toxics of one stream."""

    def __init__(
        self, link: Link, stream: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.link = link
        self.stream = stream
        self.reader = reader
        self.writer = writer
        self.queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(QUEUE_LIMIT)
        self.writer_busy = False
        self.sent = 0
        self.dropped = 0
        """Bytes a ``timeout`` or ``reset_peer`` toxic swallowed: the stream has a hole from then on."""
        self.swallowing = False
        """A ``reset_peer`` toxic took this stream's first chunk: nothing passes until the reset."""
        self.last_due = 0.0

    def toxics(self, kind: str) -> list[Toxic]:
        return [t for t in self.link.active_toxics() if t.stream == self.stream and t.type == kind]

    def staged(self) -> bool:
        """Whether any toxic needs the writer stage (timing or slicing)."""
        return any(
            t.stream == self.stream and t.type in ("latency", "bandwidth", "slicer")
            for t in self.link.active_toxics()
        )

    async def pump(self) -> None:
        writer_task = asyncio.create_task(self._write_stage())
        try:
            while not self.link.closed:
                data = await self.reader.read(CHUNK)
                if not data:
                    break
                if self.toxics("timeout"):
                    self.dropped += len(data)
                    continue  # a black hole: nothing passes while the toxic is there
                resets = self.toxics("reset_peer")
                if resets or self.swallowing:
                    self.dropped += len(data)
                    if not self.swallowing:
                        self.swallowing = True
                        self.link.reset_after(resets[0].attr("timeout") / 1000)
                    continue  # swallowed: the connection is reset after the toxic's timeout
                allowed = self._limit(data)
                if allowed is None:
                    return
                if not self.staged() and self.queue.empty() and not self.writer_busy:
                    self.writer.write(allowed)
                    await self.writer.drain()
                else:
                    await self.queue.put((time.monotonic(), allowed))
            # the source closed: drain staged data, then close after slow_close's delay
            await self.queue.put(None)
            await writer_task
            delay_ms = sum(t.attr("delay") for t in self.toxics("slow_close"))
            if delay_ms:
                await asyncio.sleep(delay_ms / 1000)
            with contextlib.suppress(OSError, RuntimeError):
                if self.writer.can_write_eof():
                    self.writer.write_eof()
            self.link.half_closed(self)
        except (ConnectionError, OSError):
            self.link.close()
        finally:
            writer_task.cancel()

    def _limit(self, data: bytes) -> bytes | None:
        """Pass data up to the smallest ``limit_data`` budget; close the connection when it is spent."""
        limits = [t.attr("bytes") for t in self.toxics("limit_data")]
        if not limits:
            self.sent += len(data)
            return data
        budget = min(limits) - self.sent
        if budget <= 0:
            self.link.close()
            return None
        if len(data) >= budget:
            self.writer.write(data[:budget])
            self.sent += budget
            self.link.close_after_flush()
            return None
        self.sent += len(data)
        return data

    async def _write_stage(self) -> None:
        while True:
            item = await self.queue.get()
            if item is None:
                return
            self.writer_busy = True
            try:
                await self._deliver(*item)
            finally:
                self.writer_busy = self.queue.qsize() > 0

    async def _deliver(self, arrived: float, data: bytes) -> None:
        delay_ms = 0.0
        for t in self.toxics("latency"):
            jitter = t.attr("jitter")
            delay_ms += t.attr("latency") + (random.uniform(-jitter, jitter) if jitter else 0.0)
        due = max(arrived + max(delay_ms, 0.0) / 1000, self.last_due)
        self.last_due = due
        wait = due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        slicers = self.toxics("slicer")
        pieces = _slices(data, slicers[0]) if slicers else [data]
        gap_s = slicers[0].attr("delay") / 1_000_000 if slicers else 0.0
        for i, piece in enumerate(pieces):
            if i and gap_s:
                await asyncio.sleep(gap_s)
            await self._paced_write(piece)

    async def _paced_write(self, data: bytes) -> None:
        """Write under the tightest ``bandwidth`` rate: each tenth of a second's worth waits its turn."""
        rates = [t.attr("rate") for t in self.toxics("bandwidth") if t.attr("rate") > 0]
        if not rates:
            self.writer.write(data)
            await self.writer.drain()
            return
        bytes_per_s = min(rates) * 1000
        step = max(bytes_per_s // 10, 1)
        for start in range(0, len(data), step):
            piece = data[start : start + step]
            await asyncio.sleep(len(piece) / bytes_per_s)
            self.writer.write(piece)
            await self.writer.drain()


def _slices(data: bytes, toxic: Toxic) -> list[bytes]:
    average = toxic.attr("average_size")
    if average <= 0:
        return [data]
    variation = min(toxic.attr("size_variation"), average - 1)
    pieces: list[bytes] = []
    start = 0
    while start < len(data):
        size = average + (random.randint(-variation, variation) if variation else 0)
        pieces.append(data[start : start + max(size, 1)])
        start += max(size, 1)
    return pieces


class Link:
    """A client connection and its upstream connection, with the toxics that apply to it."""

    def __init__(self, toxics: Callable[[], list[Toxic]], on_close: Callable[[Link], None]) -> None:
        self._all_toxics = toxics
        self._on_close = on_close
        self._applies: dict[int, bool] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self.closed = False
        self.writers: list[asyncio.StreamWriter] = []
        self._half_closed = 0
        self.directions: list[Direction] = []
        self.task: asyncio.Task[None] | None = None
        self.resetting = False
        """A ``reset_peer`` toxic swallowed a chunk: the reset is due."""
        self._reset_timer: asyncio.TimerHandle | None = None

    def active_toxics(self) -> list[Toxic]:
        """The proxy's toxics that apply to this connection (toxicity drawn once per toxic)."""
        out = []
        for t in self._all_toxics():
            key = id(t)
            if key not in self._applies:
                self._applies[key] = random.random() < t.toxicity
            if self._applies[key]:
                out.append(t)
        return out

    def toxics_changed(self) -> None:
        """(Re)arm the connection-level timers of ``timeout`` toxics (``reset_peer``'s starts with data)."""
        if self.closed:
            return
        # A byte stream with a hole cannot go on (a network never delivers one), so a connection whose
        # data a timeout toxic swallowed is closed when the toxic goes away; clients reconnect.
        if not self.resetting and any(d.dropped and not d.toxics("timeout") for d in self.directions):
            self.close()
            return
        loop = asyncio.get_running_loop()
        live = {id(t): t for t in self.active_toxics() if t.type == "timeout"}
        for key in list(self._timers):
            if key not in live:
                self._timers.pop(key).cancel()
        for key, t in live.items():
            if key in self._timers:
                continue
            if t.type == "timeout" and t.attr("timeout") == 0:
                continue  # hold forever: data is dropped until the toxic goes away
            self._timers[key] = loop.call_later(t.attr("timeout") / 1000, self.close)

    async def run(
        self,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
        upstream: tuple[str, int],
    ) -> None:
        self.writers.append(client_writer)
        try:
            server_reader, server_writer = await asyncio.open_connection(*upstream)
        except OSError:
            self.close()  # upstream refused: the client sees its connection closed, as with Toxiproxy
            return
        self.writers.append(server_writer)
        for w in self.writers:
            sock = w.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.closed:
            self.close()
            return
        self.toxics_changed()
        up = Direction(self, "upstream", client_reader, server_writer)
        down = Direction(self, "downstream", server_reader, client_writer)
        self.directions = [up, down]
        await asyncio.gather(up.pump(), down.pump(), return_exceptions=True)
        self.close()

    def half_closed(self, _direction: Direction) -> None:
        self._half_closed += 1
        if self._half_closed >= 2:
            self.close()

    def close_after_flush(self) -> None:
        asyncio.get_running_loop().call_soon(self.close)

    def reset_after(self, delay_s: float) -> None:
        """Reset the connection ``delay_s`` from now (once; later calls change nothing)."""
        if self.resetting or self.closed:
            return
        self.resetting = True
        self._reset_timer = asyncio.get_running_loop().call_later(delay_s, self.reset)

    def reset(self) -> None:
        """Close both sockets with SO_LINGER 0 so the peers see a TCP RST."""
        if self.closed:
            return
        for w in self.writers:
            sock = w.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            w.transport.abort()
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._reset_timer is not None:
            self._reset_timer.cancel()
        for w in self.writers:
            w.close()
        self._on_close(self)
