"""The broker's accept loop when the process is out of descriptors (issue 17, item 5).

asyncio's ``create_server`` loop (CPython 3.11 ``selector_events._accept_connection``) reports each failed
accept with a traceback and, looping over the backlog, schedules one retry per failure: a broker out of
descriptors logged 12,298 tracebacks a minute. The listener (reference_impl/server/listener.py) stops at
the first EMFILE, logs one line for the episode, backs off and accepts again when descriptors return.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import socket

import pytest

from reference_impl.server.listener import Listener, connection_slots, log_file_budget

PENDING = 30


async def _until(condition: object, timeout_s: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():  # type: ignore[operator]
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


def test_out_of_descriptors_the_accept_loop_backs_off_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    """30 clients wait in the backlog while the process has no descriptor left: one failed accept is
    recorded (not one per client), one line logged without a traceback; with descriptors back, all 30 are
    accepted and the end of the episode is logged once."""
    caplog.set_level(logging.INFO, logger="reference_impl.server")
    accepted: list[asyncio.Protocol] = []

    def factory(_sock: socket.socket, _address: tuple[str, int]) -> asyncio.Protocol:
        protocol = asyncio.Protocol()
        accepted.append(protocol)
        return protocol

    async def scenario() -> Listener:
        listener = Listener(factory, lambda: len(accepted), None)
        _host, port = listener.start("127.0.0.1", 0, backlog=64)
        clients = [socket.socket() for _ in range(PENDING)]  # descriptors taken before the limit drops
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 1, hard))
        try:
            for client in clients:
                client.connect(("127.0.0.1", port))  # queued in the backlog: accepting needs descriptors
            await _until(lambda: listener.failed_accepts > 0)
            assert listener.failed_accepts == 1 and not listener._reading  # one failure, not one per client
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        await _until(lambda: len(accepted) == PENDING and listener.failed_accepts == 0)
        for client in clients:
            client.close()
        listener.close()
        return listener

    asyncio.run(scenario())
    lines = [r.getMessage() for r in caplog.records]
    assert sum("cannot accept connections" in line for line in lines) == 1
    assert sum("accepting connections again" in line for line in lines) == 1
    assert not any(r.exc_info for r in caplog.records)


def test_connection_slots_leave_the_logs_and_a_reserve() -> None:
    """Under a limit of 256: 64 descriptors for log files, 160 connections, 32 kept free."""
    assert log_file_budget(256) == 64
    assert connection_slots(256, 64) == 160
    assert log_file_budget(None) == 4096 and connection_slots(None, 4096) is None


def test_accepted_connections_send_without_nagle_delay() -> None:
    """Every accepted socket has TCP_NODELAY, as asyncio's own server sets it: without it small answers
    waited on the peer's delayed ACK and a consumer group's joins came in another order (kafka-python's
    sticky group test then saw a generation its leader assigned without the topic's metadata)."""
    sockets: list[socket.socket] = []

    class Recorder(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sockets.append(transport.get_extra_info("socket"))

    async def scenario() -> int:
        listener = Listener(lambda _sock, _address: Recorder(), lambda: len(sockets), None)
        _host, port = listener.start("127.0.0.1", 0, backlog=8)
        with socket.create_connection(("127.0.0.1", port)):
            await _until(lambda: bool(sockets))
            nodelay = sockets[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        listener.close()
        return nodelay

    assert asyncio.run(scenario()) != 0
