"""The probes' link relays (:mod:`kafka_harness.probe_links`): whole frames pass, a cut link resets
its connections and refuses new ones until released, a held direction waits."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from fixtures.targets import free_port
from kafka_harness.probe_links import Relay


def _frame(api_key: int, correlation: int, body: bytes = b"") -> bytes:
    payload = api_key.to_bytes(2, "big") + b"\x00\x00" + correlation.to_bytes(4, "big") + body
    return len(payload).to_bytes(4, "big") + payload


def _answer_server() -> tuple[socket.socket, int]:
    """Answers each request frame with a frame of its correlation id and a payload (``ok``)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve(conn: socket.socket) -> None:
        with conn:
            for _ in range(100):
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                body = conn.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
                answer = body[4:8] + b"ok"
                conn.sendall(len(answer).to_bytes(4, "big") + answer)

    def accept() -> None:
        for _ in range(20):
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server, server.getsockname()[1]


@pytest.fixture
def relay() -> Iterator[Relay]:
    server, port = _answer_server()
    link = Relay(free_port(), port)
    link.start()
    yield link
    link.close()
    server.close()


def _ask(sock: socket.socket, correlation: int) -> bytes:
    sock.sendall(_frame(3, correlation))
    return sock.recv(64)


def test_frames_pass_and_a_cut_link_resets_and_refuses_until_released(relay: Relay) -> None:
    with socket.create_connection(("127.0.0.1", relay.listen_port), timeout=5) as sock:
        assert _ask(sock, 7) == b"\x00\x00\x00\x06\x00\x00\x00\x07ok"
        relay.cut()
        assert sock.recv(64) == b""  # reset by the cut
    with socket.create_connection(("127.0.0.1", relay.listen_port), timeout=5) as sock:
        assert sock.recv(64) == b""  # refused: accepted and closed
    relay.release()
    with socket.create_connection(("127.0.0.1", relay.listen_port), timeout=5) as sock:
        assert _ask(sock, 8).endswith(b"\x00\x00\x00\x08ok")


def test_a_held_answer_waits_for_the_release(relay: Relay) -> None:
    with socket.create_connection(("127.0.0.1", relay.listen_port), timeout=0.5) as sock:
        relay.hold(up=False, down=True)
        sock.sendall(_frame(3, 9))
        with pytest.raises(TimeoutError):
            sock.recv(64)
        relay.release()
        sock.settimeout(5)
        assert sock.recv(64).endswith(b"\x00\x00\x00\x09ok")
