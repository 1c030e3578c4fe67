"""Loopback relays on the links between reference brokers, for the black-box probes
(:mod:`kafka_harness.mutants_probes`): a link can be cut (connections reset and refused), held (a
direction not forwarded), or made to drop the Fetch answers that carry records while everything
else passes, so a follower's fetches reach the leader and no record reaches the follower. The
brokers' links to the controller quorum and to clients are not touched.

A relay listens on a loopback port of its own (launch's ``peer_ports[(a, b)]``: the port through
which broker ``a`` reaches broker ``b``) and forwards each connection to ``b``'s listener. A held
direction is not read: its bytes wait in the kernel's buffers (bounded by them) and flow again when
the direction is released. Only loopback addresses are used; every thread ends when :meth:`close`
closes the sockets.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.codec import MalformedResponseError, decode_response

HOST = "127.0.0.1"
CHUNK = 64 << 10
FETCH_API_KEY = 1
MAX_FRAME = 64 << 20
"""A frame announcing more than this ends the connection (the size is read from the wire)."""
MAX_CONNECTIONS = 10_000
"""Connections a relay accepts over its life (a broker opens one or two per peer, and retries a cut link
a few times a second); then it stops accepting."""


@dataclass
class Relay:
    """One direction-controllable link ``a`` -> ``b``: ``up`` carries a's requests, ``down`` b's answers."""

    listen_port: int
    upstream_port: int
    up: threading.Event = field(default_factory=threading.Event)
    down: threading.Event = field(default_factory=threading.Event)
    down_bytes: int = 0
    """Bytes forwarded from ``b`` to ``a``."""
    dropping_fetch_answers: bool = False
    """Drop ``b``'s answers to ``a``'s Fetch requests that carry records (everything else passes):
    ``a`` asks, ``b`` hears it, and no record reaches ``a``."""
    fetch_answers_dropped: int = 0
    fetch_answers_passed: int = 0
    """Fetch answers carrying records, dropped and forwarded."""
    _server: socket.socket | None = None
    _sockets: list[socket.socket] = field(default_factory=list)
    _closed: bool = False
    _refusing: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        self.up.set()
        self.down.set()
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((HOST, self.listen_port))
        server.listen(8)
        self._server = server
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self, *, up: bool = True, down: bool = True) -> None:
        """Stop forwarding the named directions (both: the link is cut, without closing it)."""
        if up:
            self.up.clear()
        if down:
            self.down.clear()

    def cut(self) -> None:
        """Close the link's connections and refuse new ones until :meth:`release` (a broker's
        client sees its connection reset, then refused: it retries, as after a network cut)."""
        with self._lock:
            self._refusing = True
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def drop_fetch_answers(self) -> None:
        self.dropping_fetch_answers = True

    def release(self) -> None:
        self._refusing = False
        self.dropping_fetch_answers = False
        self.up.set()
        self.down.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets = [s for s in (self._server, *self._sockets) if s is not None]
        self.release()  # pumps waiting on a held direction wake and find their sockets closed
        for s in sockets:
            with contextlib.suppress(OSError):
                s.close()

    def _accept(self) -> None:
        assert self._server is not None
        for _ in range(MAX_CONNECTIONS):
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self._refusing:
                client.close()
                continue
            try:
                server = socket.create_connection((HOST, self.upstream_port), timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._sockets += [client, server]
            fetches: dict[int, int] = {}
            threading.Thread(
                target=self._pump, args=(client, server, self.up, False, fetches), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(server, client, self.down, True, fetches), daemon=True
            ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, gate: threading.Event, down: bool,
              fetches: dict[int, int]) -> None:  # fmt: skip
        """Forward whole Kafka frames (a 4-byte size, then the frame): requests name their api key
        and correlation id, answers their correlation id, so Fetch answers can be told apart."""
        pending = b""
        while not self._closed:
            gate.wait()
            try:
                data = source.recv(CHUNK)
            except OSError:
                data = b""
            if not data:
                break
            pending += data
            frames: list[bytes] = []
            while len(pending) >= 4:
                size = int.from_bytes(pending[:4], "big", signed=True)
                if not 4 <= size <= MAX_FRAME:
                    break
                if len(pending) < 4 + size:
                    break
                frames.append(pending[: 4 + size])
                pending = pending[4 + size :]
            if len(pending) > 4 and not 4 <= int.from_bytes(pending[:4], "big", signed=True) <= MAX_FRAME:
                break  # not Kafka framing: end the connection
            gate.wait()  # held while these bytes were read: they wait too
            out = [f for f in frames if self._passes(f, down, fetches)]
            try:
                sink.sendall(b"".join(out))
            except OSError:
                break
            if down:
                with self._lock:
                    self.down_bytes += sum(len(f) for f in out)
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def _passes(self, frame: bytes, down: bool, fetches: dict[int, int]) -> bool:
        """Whether to forward ``frame``. On the way up each Fetch request's correlation id and
        version are noted; on the way down, while :attr:`dropping_fetch_answers`, a Fetch answer
        that carries records is dropped (one with errors or nothing fetched passes: the follower
        goes on asking)."""
        if not down:
            if len(frame) >= 12 and int.from_bytes(frame[4:6], "big") == FETCH_API_KEY:
                version = int.from_bytes(frame[6:8], "big")
                fetches[int.from_bytes(frame[8:12], "big", signed=True)] = version
            return True
        correlation = int.from_bytes(frame[4:8], "big", signed=True)
        if correlation not in fetches:
            return True
        version = fetches.pop(correlation)
        try:
            _, answer = decode_response(FETCH_API_KEY, version, frame[4:])
            topics: Any = getattr(answer, "responses", ())
            carries = any(p.records for t in topics for p in t.partitions)
        except MalformedResponseError:
            carries = True
        if not carries:
            return True
        with self._lock:
            if self.dropping_fetch_answers:
                self.fetch_answers_dropped += 1
                return False
            self.fetch_answers_passed += 1
        return True
