"""The asyncio shell's side of connection bounds, in process: mute, TCP_NODELAY, limits, timeouts.

The rules are Kafka's network layer's (``core/src/main/scala/kafka/network/SocketServer.scala``:
a channel muted from a request's receipt to its response's send; ``ConnectionQuotas``;
``clients/src/main/java/org/apache/kafka/common/network/Selector.java``: idle expiry), plus the
reference's own receive bound (``reference.request.receive.timeout.ms``). Each wait below is a
bound on a hang, never a timing assertion.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable

from reference_impl import defects
from reference_impl.core.broker import Broker
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.ports import MemoryLogStore
from reference_impl.protocol.codec import encode_request
from reference_impl.protocol.frames import FrameDecoder
from reference_impl.server.shell import BrokerShell, monotonic_ms, wall_clock_ms

from .core.harness import request
from .core.test_backpressure import API_VERSIONS, long_poll

HANG_S = 5.0


def _run(configs: list[str], body: Callable[[BrokerShell, int], Awaitable[None]]) -> None:
    async def main() -> None:
        broker = Broker(
            config=BrokerConfig.parse(1, configs),
            store=MemoryLogStore(),
            advertised_host="127.0.0.1",
            advertised_port=0,
            cluster_id="shell-test",
            now_ms=wall_clock_ms(),
            mono_ms=monotonic_ms(),
        )
        shell = BrokerShell(broker)
        _host, port = await shell.listen("127.0.0.1", 0)
        try:
            await asyncio.wait_for(body(shell, port), HANG_S * 3)
        finally:
            await shell.close()

    asyncio.run(main())


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, frame: bytes) -> bytes:
    writer.write(frame)
    await writer.drain()
    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), HANG_S))[0]
    return await asyncio.wait_for(reader.readexactly(size), HANG_S)


async def _closed_by_broker(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), HANG_S) == b""
    except ConnectionError:
        return True


async def _create_topic(port: int, name: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    create = request(19, 7, topics=[topic], timeout=1000, validate_only=False)
    await _exchange(reader, writer, encode_request(create, 1, "t"))
    writer.close()


async def _pipeline_behind_a_long_poll(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection that sent a Fetch waiting 500 ms and 50 ApiVersions behind it (100 ms ago)."""
    await _create_topic(port, "t")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(encode_request(long_poll("t", max_wait_ms=500), 1, "t"))
    writer.write(encode_request(API_VERSIONS, 2, "t") * 50)
    await writer.drain()
    await asyncio.sleep(0.1)
    return reader, writer


def test_accepted_connections_have_nagle_off() -> None:
    """An answer written in two parts (header, then the records by sendfile) must not wait for the
    client's delayed ACK: the accepted socket has TCP_NODELAY (a long-poll answer took 40 ms more)."""

    async def body(shell: BrokerShell, port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await _exchange(reader, writer, encode_request(API_VERSIONS, 1, "t"))
        (conn,) = shell.connections.values()
        assert conn.transport is not None
        sock = conn.transport.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        writer.close()

    _run([], body)


def test_a_connection_is_not_read_while_its_long_poll_waits() -> None:
    """Frames pipelined behind a waiting Fetch stay in the socket: the shell stops reading until the
    core says ResumeReading (here: the Fetch's max_wait passes, then the ApiVersions is answered)."""

    async def body(shell: BrokerShell, port: int) -> None:
        reader, writer = await _pipeline_behind_a_long_poll(port)
        (conn,) = [c for c in shell.connections.values() if c.transport is not None]
        assert conn.transport is not None and not conn.transport.is_reading()
        assert shell.broker.read_gate.queued_requests == 0, "nothing was read behind the Fetch"
        decoder, frames = FrameDecoder(), list[bytes]()
        while len(frames) < 51:  # the Fetch's answer after its max_wait, then every ApiVersions
            frames += decoder.feed(await asyncio.wait_for(reader.read(1 << 16), HANG_S))
        writer.close()

    _run([], body)


def test_connections_over_max_connections_are_closed_at_once() -> None:
    async def body(shell: BrokerShell, port: int) -> None:
        kept = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        reader, _writer = await asyncio.open_connection("127.0.0.1", port)
        assert await _closed_by_broker(reader)
        await _exchange(*kept[0], encode_request(API_VERSIONS, 1, "t"))

    _run(["max.connections=2"], body)


def test_idle_connections_and_trickled_requests_are_closed() -> None:
    async def body(shell: BrokerShell, port: int) -> None:
        idle_reader, _idle = await asyncio.open_connection("127.0.0.1", port)
        slow_reader, slow = await asyncio.open_connection("127.0.0.1", port)
        slow.write(struct.pack(">i", 100) + b"\x00")
        for _ in range(4):  # activity that keeps the idle timer away, not the receive bound
            await asyncio.sleep(0.1)
            slow.write(b"\x00")
        assert await _closed_by_broker(slow_reader)
        assert await _closed_by_broker(idle_reader)

    _run(["connections.max.idle.ms=600", "reference.request.receive.timeout.ms=300"], body)


def test_the_seeded_defect_brings_the_old_reader_back() -> None:
    """With defects.UNBOUNDED_BUFFERING the shell reads everything behind a waiting request again
    (the old reader), so the mute check above fails."""

    async def body(shell: BrokerShell, port: int) -> None:
        _reader, writer = await _pipeline_behind_a_long_poll(port)
        assert shell.broker.read_gate.queued_requests == 50
        writer.close()

    with defects.seeded(defects.UNBOUNDED_BUFFERING):
        _run([], body)
