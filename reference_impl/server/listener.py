"""The broker's listening socket, and the process's file descriptors.

The log's descriptor pool (:mod:`reference_impl.log.descriptors`) is sized
from the process's ``RLIMIT_NOFILE`` at start: a quarter of it for segment and
index files. Most of the rest is for connections: the listener accepts at
most :attr:`Listener.max_connections` at once and stops accepting while that
many are open (Kafka's acceptor waits for a connection slot the same way when
``max.connections`` is reached), so clients can never take the descriptors the
logs and checkpoints need.

Should accepts fail anyway (``EMFILE``: the process is out of descriptors),
the accept loop backs off, from 100 ms doubling to 5 s, closes the idle log
files and logs one line for the whole episode. asyncio's own accept loop
(``create_server``) is not used because of how it fails there: it reports
every failure with a traceback and, in a loop over the backlog, schedules one
retry per failed ``accept`` (1,024 a wake-up), which took a broker out of
descriptors to 12,298 tracebacks a minute.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
import ssl
from collections.abc import Callable

from reference_impl.log.descriptors import POOL

from .tls import HANDSHAKE_TIMEOUT_S

log = logging.getLogger("reference_impl.server")

LOG_FILES_SHARE = 4
"""One descriptor in this many goes to the log's files."""
MAX_LOG_FILES = 4096
RESERVED_DESCRIPTORS = 32
"""Kept free of connections and log files: checkpoints, directory syncs, peers, the loop itself."""
ACCEPTS_PER_WAKEUP = 64
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 5.0
_OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def descriptor_limit() -> int | None:
    """The process's ``RLIMIT_NOFILE`` soft limit; None when unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


def log_file_budget(limit: int | None) -> int:
    """How many descriptors the log's files may hold under a descriptor limit."""
    return MAX_LOG_FILES if limit is None else min(MAX_LOG_FILES, limit // LOG_FILES_SHARE)


def connection_slots(limit: int | None, log_files: int) -> int | None:
    """Connections the listener takes at once: what the log files and the reserve leave (None: no bound)."""
    return None if limit is None else max(1, limit - log_files - RESERVED_DESCRIPTORS)


def size_log_descriptor_pool() -> int:
    """Size the log's pool from this process's limit; returns the capacity chosen."""
    POOL.resize(log_file_budget(descriptor_limit()))
    return POOL.capacity


class Listener:
    """A listening socket whose accepts are bounded in number and back off when descriptors run out."""

    def __init__(
        self,
        admit: Callable[[socket.socket, tuple[str, int]], asyncio.BaseProtocol | None],
        open_connections: Callable[[], int],
        max_connections: int | None,
        ssl_context: ssl.SSLContext | None = None,
        abandoned: Callable[[asyncio.BaseProtocol], None] | None = None,
    ) -> None:
        """``admit(sock, address)`` gives the protocol of a connection just accepted, or None to close
        it at once (the shell's connection policy: ``max.connections.per.ip`` and friends).
        With ``ssl_context`` each connection is TLS (handshake bounded by ``HANDSHAKE_TIMEOUT_S``);
        ``abandoned(protocol)`` hears of an admitted connection that never came up (a failed handshake)."""
        self._ssl = ssl_context
        self._abandoned = abandoned
        self._admit = admit
        self._open_connections = open_connections
        self.max_connections = max_connections
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading = False
        self._retry: asyncio.TimerHandle | None = None
        self._backoff_s = FIRST_BACKOFF_S
        self._tasks: set[asyncio.Task[object]] = set()
        self.failed_accepts = 0
        """Accepts that failed in the current episode (0: accepting works)."""
        self.full = False
        """Whether accepting is paused because every connection slot is taken."""
        self._crowded = False
        """Whether the listener filled up since the backlog was last empty (one log line per episode)."""

    def start(self, host: str, port: int, backlog: int) -> tuple[str, int]:
        self._loop = asyncio.get_running_loop()
        sock = _listening_socket(host, port, backlog)
        self._sock = sock
        self._resume_reading()
        name = sock.getsockname()
        return str(name[0]), int(name[1])

    def close(self) -> None:
        self._pause_reading()
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def connection_closed(self) -> None:
        """A connection went: if accepting paused for want of a slot, it resumes."""
        if self.full and self._sock is not None:
            self.full = False
            self._resume_reading()

    # -- the accept loop -------------------------------------------------------------------------

    def _resume_reading(self) -> None:
        if self._sock is not None and self._loop is not None and not self._reading:
            self._loop.add_reader(self._sock.fileno(), self._accept)
            self._reading = True

    def _pause_reading(self) -> None:
        if self._sock is not None and self._loop is not None and self._reading:
            self._loop.remove_reader(self._sock.fileno())
            self._reading = False

    def _accept(self) -> None:
        assert self._sock is not None and self._loop is not None
        for _ in range(ACCEPTS_PER_WAKEUP):
            opened = self._open_connections() + len(self._tasks)
            if self.max_connections is not None and opened >= self.max_connections:
                if not self._crowded:
                    log.warning("%d connections open, as many as the descriptor limit leaves room for: "
                                "accepting no more until one closes", opened)
                self.full = self._crowded = True
                self._pause_reading()
                return
            try:
                conn, address = self._sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                if self._crowded:
                    log.warning("accepting connections again: every waiting client was taken")
                    self._crowded = False
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_RESOURCES:
                    self._back_off(exc)
                else:
                    log.warning("accept failed: %s", exc)
                return
            if self.failed_accepts:
                log.warning("accepting connections again after %d failed attempt(s)", self.failed_accepts)
                self.failed_accepts = 0
                self._backoff_s = FIRST_BACKOFF_S
            protocol = self._admit(conn, (str(address[0]), int(address[1])))
            if protocol is None:
                conn.close()
                continue
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle delay on small answers
            task = self._loop.create_task(self._connect(conn, protocol))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _connect(self, conn: socket.socket, protocol: asyncio.BaseProtocol) -> None:
        assert self._loop is not None
        try:
            if self._ssl is None:
                await self._loop.connect_accepted_socket(lambda: protocol, conn)
            else:
                await self._loop.connect_accepted_socket(
                    lambda: protocol, conn, ssl=self._ssl, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S
                )
        except (OSError, EOFError) as exc:  # the peer left before the transport was made, or TLS failed
            log.info("dropped a connection as it was accepted: %s", exc or type(exc).__name__)
            conn.close()
            if self._abandoned is not None:
                self._abandoned(protocol)

    def _back_off(self, exc: OSError) -> None:
        assert self._loop is not None
        closed = POOL.release_idle()
        if not self.failed_accepts:
            log.warning("cannot accept connections: %s (%s); closed %d idle log file(s), retrying with a "
                        "back-off up to %.0f s (logged once until an accept succeeds)",
                        errno.errorcode.get(exc.errno or 0, "?"), exc.strerror, closed, MAX_BACKOFF_S)
        self.failed_accepts += 1
        self._pause_reading()
        self._retry = self._loop.call_later(self._backoff_s, self._retry_accept)
        self._backoff_s = min(self._backoff_s * 2, MAX_BACKOFF_S)

    def _retry_accept(self) -> None:
        self._retry = None
        if not self.full:
            self._resume_reading()


def _listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A non-blocking TCP socket listening on ``host:port`` (its first address), as asyncio makes one.

    The protocol is given as IPPROTO_TCP, not left at 0: asyncio sets
    TCP_NODELAY only on sockets that say so, and without it Nagle's algorithm
    held small answers back (a consumer group's joins reordered).
    """
    family, kind, proto, _name, address = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
