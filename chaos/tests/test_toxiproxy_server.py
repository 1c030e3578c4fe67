"""The project's Toxiproxy server, driven through toxiproxy-python 0.1.1 unchanged.

Each test states the README's words for the attribute it checks. Time-based toxics are checked
by lower bounds (the data cannot arrive before the toxic allows), or with generous socket
timeouts, never by how fast the machine is.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from chaos.toxiproxy.server import ServerThread


class EchoServer:
    """A TCP server that echoes, and remembers what it received and when (for upstream checks)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.received: list[tuple[float, bytes]] = []
        self.close_after_first = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                self.received.append((time.monotonic(), data))
                conn.sendall(data)
                if self.close_after_first:
                    return


@pytest.fixture()
def api() -> Iterator[Toxiproxy]:
    with ServerThread() as server:
        APIConsumer.host, APIConsumer.port = server.host, server.port
        yield Toxiproxy()


@pytest.fixture()
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.sock.close()


def connect(proxy: object, timeout: float = 5.0) -> socket.socket:
    host, port = proxy.listen.rsplit(":", 1)  # type: ignore[attr-defined]
    return socket.create_connection((host, int(port)), timeout=timeout)


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def round_trip(sock: socket.socket, payload: bytes = b"ping") -> tuple[bytes, float]:
    start = time.monotonic()
    sock.sendall(payload)
    return recv_exactly(sock, len(payload)), time.monotonic() - start


# --- the HTTP API ----------------------------------------------------------------------------


def test_create_list_show_and_delete_proxy(api: Toxiproxy, echo: EchoServer) -> None:
    proxy = api.create(upstream=echo.address, name="echo")
    assert proxy.enabled is True
    assert not proxy.listen.endswith(":0"), "port 0 is replaced by the port actually bound"
    assert set(api.proxies()) == {"echo"}
    with pytest.raises(ProxyExists):
        APIConsumer.post("/proxies", json={"name": "echo", "upstream": echo.address})
    shown = APIConsumer.get("/proxies/echo").json()
    assert shown["upstream"] == echo.address and shown["toxics"] == []
    with connect(proxy) as sock:
        assert round_trip(sock)[0] == b"ping"
    assert api.destroy(proxy)
    assert api.proxies() == {}
    with pytest.raises(NotFound):
        APIConsumer.get("/proxies/echo")


def test_bad_requests_get_json_errors(api: Toxiproxy, echo: EchoServer) -> None:
    answer = requests.post(f"http://{APIConsumer.host}:{APIConsumer.port}/proxies", data=b"{nope", timeout=5)
    assert answer.status_code == 400 and answer.json()["status"] == 400
    answer = requests.post(
        f"http://{APIConsumer.host}:{APIConsumer.port}/proxies",
        json={"name": "x", "upstream": "no-port"},
        timeout=5,
    )
    assert answer.status_code == 400
    proxy = api.create(upstream=echo.address, name="echo")
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="earthquake")
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="latency", attributes={"latency": -5})
    with pytest.raises(NotFound):
        APIConsumer.get("/proxies/echo/toxics/absent")


def test_version_and_populate(api: Toxiproxy, echo: EchoServer) -> None:
    assert b"version" in api.version()
    body = [
        {"name": "a", "upstream": echo.address, "listen": "127.0.0.1:0"},
        {"name": "b", "upstream": echo.address, "listen": "127.0.0.1:0"},
    ]
    answer = APIConsumer.post("/populate", json=body)
    assert answer.status_code == 201
    names = [p["name"] for p in answer.json()["proxies"]]
    assert names == ["a", "b"]
    listen_a = api.proxies()["a"].listen
    # unchanged fields: the proxy is untouched; a changed upstream replaces it
    again = APIConsumer.post(
        "/populate", json=[{"name": "a", "upstream": echo.address, "listen": listen_a}]
    ).json()
    assert again["proxies"][0]["listen"] == listen_a
    other = EchoServer()
    replaced = APIConsumer.post("/populate", json=[{"name": "a", "upstream": other.address}]).json()
    assert replaced["proxies"][0]["upstream"] == other.address
    other.sock.close()


def test_toxic_crud_defaults_and_reset(api: Toxiproxy, echo: EchoServer) -> None:
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="latency", attributes={"latency": 10})
    toxic = APIConsumer.get("/proxies/echo/toxics/latency_downstream").json()
    assert toxic == {
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1.0,
        "attributes": {"latency": 10, "jitter": 0},
    }
    with pytest.raises(ProxyExists):
        proxy.add_toxic(type="latency", attributes={"latency": 10})
    updated = APIConsumer.post(
        "/proxies/echo/toxics/latency_downstream", json={"attributes": {"jitter": 3}}
    ).json()
    assert updated["attributes"] == {"latency": 10, "jitter": 3}
    proxy.add_toxic(type="bandwidth", stream="upstream", name="cap", attributes={"rate": 100})
    assert set(proxy.toxics()) == {"latency_downstream", "cap"}
    assert proxy.destroy_toxic("cap")
    assert set(proxy.toxics()) == {"latency_downstream"}
    proxy.disable()
    assert api.reset()
    assert api.proxies()["echo"].enabled is True
    assert proxy.toxics() == {}


# --- toxic semantics ---------------------------------------------------------------------------


def test_latency_delays_data_by_at_least_latency(api: Toxiproxy, echo: EchoServer) -> None:
    """'Add a delay to all data going through the proxy. The delay is equal to latency +/- jitter.'"""
    proxy = api.create(upstream=echo.address, name="echo")
    with connect(proxy) as sock:
        proxy.add_toxic(type="latency", attributes={"latency": 200})
        data, elapsed = round_trip(sock)
        assert data == b"ping" and elapsed >= 0.19
        proxy.destroy_toxic("latency_downstream")
        proxy.add_toxic(type="latency", stream="upstream", attributes={"latency": 200})
        sent = time.monotonic()
        data, _ = round_trip(sock)
        assert data == b"ping" and echo.received[-1][0] - sent >= 0.19, "upstream delays the request"


def test_toxicity_zero_never_applies(api: Toxiproxy, echo: EchoServer) -> None:
    """'toxicity: probability of the toxic being applied to a link'."""
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="latency", toxicity=0.0, attributes={"latency": 30_000})
    with connect(proxy, timeout=10) as sock:
        assert round_trip(sock)[0] == b"ping", "a 30 s latency at toxicity 0 must not hold the data"


def test_bandwidth_limits_throughput(api: Toxiproxy, echo: EchoServer) -> None:
    """'Limit a connection to a maximum number of kilobytes per second.'"""
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="bandwidth", attributes={"rate": 100})  # 100 KB/s
    payload = b"x" * 50_000
    with connect(proxy, timeout=10) as sock:
        data, elapsed = round_trip(sock, payload)
    assert data == payload
    assert elapsed >= 0.4, "50 KB at 100 KB/s cannot arrive in under half a second"


def test_slow_close_delays_the_close(api: Toxiproxy, echo: EchoServer) -> None:
    """'Delay the TCP socket from closing until delay has elapsed.'"""
    echo.close_after_first = True
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="slow_close", attributes={"delay": 300})
    with connect(proxy) as sock:
        data, _ = round_trip(sock)
        assert data == b"ping"
        start = time.monotonic()
        assert sock.recv(10) == b""
        assert time.monotonic() - start >= 0.25


def test_timeout_zero_holds_data_until_removed(api: Toxiproxy, echo: EchoServer) -> None:
    """'If timeout is 0, the connection won't close, and data will be dropped until the toxic is removed.'"""
    proxy = api.create(upstream=echo.address, name="echo")
    with connect(proxy, timeout=0.5) as sock:
        proxy.add_toxic(type="timeout", stream="upstream", attributes={"timeout": 0})
        sock.sendall(b"lost")
        with pytest.raises(TimeoutError):
            sock.recv(10)
        assert echo.received == []
        proxy.destroy_toxic("timeout_upstream")
        # the project's choice beyond the README: a stream with a hole cannot go on, so it is closed
        sock.settimeout(5)
        assert sock.recv(10) == b"", "the connection that lost data is closed once the toxic goes"
    with connect(proxy) as sock:
        proxy.add_toxic(type="timeout", stream="upstream", attributes={"timeout": 0})
        proxy.destroy_toxic("timeout_upstream")
        assert round_trip(sock)[0] == b"ping", "a connection that lost nothing stays open and works"


def test_timeout_closes_after_timeout(api: Toxiproxy, echo: EchoServer) -> None:
    """'Stops all data from getting through, and closes the connection after timeout.'"""
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="timeout", attributes={"timeout": 200})
    with connect(proxy) as sock:
        start = time.monotonic()
        sock.sendall(b"ping")
        assert sock.recv(10) == b"", "no data gets through, then the connection closes"
        assert time.monotonic() - start >= 0.15


def test_reset_peer_resets_the_connection(api: Toxiproxy, echo: EchoServer) -> None:
    """'Simulate TCP RESET (Connection reset by peer) ... immediately or after a timeout.' As
    Toxiproxy's toxics/reset_peer.go does it: the first chunk on the toxic's stream (downstream:
    the echo) is swallowed, never delivered, and the connection is reset ``timeout`` ms later."""
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="reset_peer", attributes={"timeout": 100})
    with connect(proxy) as sock:
        start = time.monotonic()
        sock.sendall(b"ping")
        with pytest.raises(ConnectionResetError):
            assert sock.recv(10) == b"", "the echo must never arrive"
        assert time.monotonic() - start >= 0.09
    assert [data for _, data in echo.received] == [b"ping"], "upstream still passes the request"


def test_reset_peer_upstream_swallows_the_first_chunk(api: Toxiproxy, echo: EchoServer) -> None:
    """On the upstream stream the request itself is the swallowed chunk: the server never sees it."""
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="reset_peer", stream="upstream", attributes={"timeout": 50})
    with connect(proxy) as sock:
        sock.sendall(b"ping")
        with pytest.raises(ConnectionResetError):
            assert sock.recv(10) == b""
    assert echo.received == []


def test_reset_peer_leaves_an_idle_connection_alone(api: Toxiproxy, echo: EchoServer) -> None:
    """No data, no reset (the toxic's Pipe waits for its first input): the connection stays usable
    until the toxic goes away, and then carries data again."""
    proxy = api.create(upstream=echo.address, name="echo")
    with connect(proxy, timeout=0.3) as sock:
        assert round_trip(sock)[0] == b"ping"
        proxy.add_toxic(type="reset_peer", attributes={"timeout": 0})
        with pytest.raises(TimeoutError):
            sock.recv(10)  # nothing sent: nothing arrives, and no reset either
        proxy.destroy_toxic("reset_peer_downstream")
        sock.settimeout(5)
        assert round_trip(sock)[0] == b"ping"


def test_slicer_cuts_data_into_small_pieces(api: Toxiproxy, echo: EchoServer) -> None:
    """'Slices TCP data up into small bits, optionally adding a delay between each sliced packet.'"""
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="slicer", attributes={"average_size": 10, "size_variation": 2, "delay": 20_000})
    payload = bytes(range(100))
    with connect(proxy) as sock:
        sock.sendall(payload)
        pieces: list[bytes] = []
        while sum(map(len, pieces)) < len(payload):
            pieces.append(sock.recv(1000))
    assert b"".join(pieces) == payload
    assert len(pieces) >= 5 and max(map(len, pieces)) <= 12 * 2, pieces


def test_limit_data_closes_after_bytes(api: Toxiproxy, echo: EchoServer) -> None:
    """'Closes connection when transmitted data exceeded limit.'"""
    proxy = api.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="limit_data", attributes={"bytes": 10})
    with connect(proxy) as sock:
        sock.sendall(b"0123456789abcdef")
        received = b""
        while chunk := sock.recv(100):
            received += chunk
    assert received == b"0123456789"


def test_disabled_proxy_drops_connections_and_refuses_new_ones(api: Toxiproxy, echo: EchoServer) -> None:
    """'If you change enabled to false, it will take down the proxy.'"""
    proxy = api.create(upstream=echo.address, name="echo")
    host, port = proxy.listen.rsplit(":", 1)
    with connect(proxy) as sock:
        assert round_trip(sock)[0] == b"ping"
        with proxy.down():
            assert sock.recv(10) == b"", "the live connection is closed"
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((host, int(port)), timeout=2)
    with connect(proxy) as sock:
        assert round_trip(sock)[0] == b"ping", "enabled again on the same address"
