"""TCP as the simulator's shell gives it to a broker: ordered connections carrying Kafka frames.

The simulated network (:mod:`.network`) delivers each message on its own: it
may drop, delay, reorder or duplicate it. A broker core expects what a
socket gives it: a connection whose frames arrive whole, once, in order, and
a failure it can see (``RequestFailed``, ``ConnectionClosed``). This module
is the layer between, as a kernel's TCP is on a real machine:

* a :class:`Connection` is named by the node that opened it, that node's
  incarnation and a number, so a restarted process never reuses one. It
  opens with a handshake (a SYN, answered by a SYN-ACK) before any request
  goes out, so no request can overtake the opening of its connection, and a
  segment for a connection the receiver does not know is answered with a reset;
* each :class:`Segment` carries one whole frame (requests and responses are
  real Kafka frames, encoded and decoded by the same codec as on a socket)
  and a per-direction sequence number: the receiver delivers in order, drops
  duplicates, and holds what arrives early. A lost segment is sent again
  (:class:`TcpRetransmission`, through the simulator) for as long as its
  sender keeps the connection, so a partition delays what is on a connection
  until it heals or the requester's timeout resets the connection;
* a :class:`Reset` is an RST: the connection is gone, every request still in
  flight on it fails. The simulator sends one back when a segment reaches a
  node that is down (connection refused), and a node sends one for a
  segment of a connection it does not know (the peer restarted).

A node is both sides at once: :class:`Dialer` for the connections it opens
(one per peer and channel, as the asyncio shell keeps them) and
:class:`Listener` for those opened to it. Both are sans-IO: they take
segments and return broker events and outbound envelopes.
"""

from __future__ import annotations

import itertools
import struct
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.static.protocol import RequestPayload

from reference_impl.core import boundary
from reference_impl.core.raft.messages import Envelope
from reference_impl.protocol.apis import UnknownApiError, api_name
from reference_impl.protocol.codec import encode_request

SYN = b""
"""Sequence 0 of each direction, with no frame: the SYN, and the SYN-ACK that answers it."""

DEFAULT_REQUEST_TIMEOUT_MS = 30_000
"""Kafka's ``request.timeout.ms`` and ``replica.socket.timeout.ms``: how long a request may go
unanswered before its connection is dropped. A request that waits on the server by design (a
long-poll fetch, acks=all, an admin call) gets its own wait on top."""


@dataclass(frozen=True, slots=True, order=True)
class Connection:
    client: int
    incarnation: int
    number: int
    port: int = 0
    """The server port dialled: it names the listener the connection reaches (see :class:`Listener`)."""

    def __str__(self) -> str:
        return f"c{self.client}.{self.incarnation}.{self.number}"


@dataclass(frozen=True, slots=True)
class Segment:
    """One whole frame (size prefix included) on ``connection``; ``to_server`` says which way."""

    connection: Connection
    to_server: bool
    seq: int
    frame: bytes


@dataclass(frozen=True, slots=True)
class Reset:
    """The connection is gone; ``to_server`` says which side receives the RST."""

    connection: Connection
    to_server: bool
    reason: str


def refused(envelope: Envelope) -> Envelope | None:
    """What a host whose process is down answers a segment with: a reset (connection refused)."""
    body = envelope.body
    if isinstance(body, Segment):
        return Envelope(
            source_id=envelope.destination_id,
            destination_id=envelope.source_id,
            body=Reset(body.connection, not body.to_server, f"node {envelope.destination_id} is down"),
        )
    return None


class TcpRetransmission:
    """A lost segment is sent again after an RTO that doubles from 200 ms (Linux's minimum) up to
    3.2 s, for as long as its sender keeps the connection: a short partition delays a request,
    it does not break the connection, as with TCP. Resets are not sent again (a lost RST is
    found out by the peer's next segment)."""

    def rto_ms(self, attempt: int) -> int | None:
        return min(200 << attempt, 3_200)

    def still_sending(self, sim: Any, envelope: Envelope) -> bool:
        body = envelope.body
        node = sim.nodes.get(envelope.source_id)
        is_open = getattr(node, "is_open", None)
        return isinstance(body, Segment) and is_open is not None and bool(is_open(body))


def describe_segment(body: Any) -> str:
    """A trace line for a transport message: the request's API, or the answer's size."""
    if isinstance(body, Segment):
        if body.frame == SYN:
            return f"{body.connection} {'SYN' if body.to_server else 'SYN-ACK'}"
        if body.to_server:
            api_key, api_version = struct.unpack_from(">hh", body.frame, 4)
            try:
                what = f"{api_name(api_key)} v{api_version}"
            except UnknownApiError:
                what = f"api {api_key} v{api_version}"
            return f"{body.connection} #{body.seq} {what} ({len(body.frame)} B)"
        return f"{body.connection} #{body.seq} answer ({len(body.frame)} B)"
    if isinstance(body, Reset):
        return f"{body.connection} RST ({body.reason})"
    return type(body).__name__


class _InOrder:
    """The receiving half of one direction: in-order delivery, duplicates dropped, early segments held."""

    __slots__ = ("early", "next_seq")

    def __init__(self, after_syn: bool = False) -> None:
        self.next_seq = 1 if after_syn else 0
        self.early: dict[int, bytes] = {}

    def accept(self, seq: int, frame: bytes) -> list[bytes]:
        if seq < self.next_seq or seq in self.early:
            return []
        self.early[seq] = frame
        ready = []
        while self.next_seq in self.early:
            ready.append(self.early.pop(self.next_seq))
            self.next_seq += 1
        return ready


@dataclass
class _InFlight:
    request_id: int
    api_key: int
    api_version: int
    deadline_ms: int


@dataclass
class _Outgoing:
    """A connection this node opened to ``peer``."""

    connection: Connection
    peer: int
    next_seq: int = 1
    """Sequence 0 is the SYN; requests follow it."""
    received: _InOrder = field(default_factory=_InOrder)
    in_flight: deque[_InFlight] = field(default_factory=deque)
    established: bool = False
    waiting: list[Envelope] = field(default_factory=list)
    """Request segments held until the handshake completes (TCP sends no data before it)."""


def _server_wait_ms(body: RequestPayload) -> int:
    """How long the server may hold ``body`` by design: a fetch's max wait, a produce's or an
    admin request's timeout (kio names them ``max_wait``, ``timeout`` or ``timeout_ms``)."""
    wait = 0
    for name in ("max_wait", "timeout", "timeout_ms"):
        value = getattr(body, name, None)
        if value is None:
            continue
        millis = value.total_seconds() * 1000 if hasattr(value, "total_seconds") else value
        wait = max(wait, int(millis))
    return wait


class Dialer:
    """The connections a node opens: one per (peer, channel), requests answered in order."""

    def __init__(
        self, node_id: int, incarnation: int, request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    ) -> None:
        self.node_id = node_id
        self.incarnation = incarnation
        self.request_timeout_ms = request_timeout_ms
        self._numbers = itertools.count(1)
        self._by_channel: dict[tuple[int, str, int], _Outgoing] = {}
        self._by_connection: dict[Connection, _Outgoing] = {}

    def send(self, effect: boundary.SendRequest, now_ms: int) -> list[Envelope]:
        """The segments to send for ``effect``: a SYN first on a new connection; the request
        itself once the connection is established (held until then)."""
        key = (effect.node_id, effect.channel, effect.port)
        out = self._by_channel.get(key)
        opening: list[Envelope] = []
        if out is None:
            connection = Connection(self.node_id, self.incarnation, next(self._numbers), effect.port)
            out = _Outgoing(connection, effect.node_id)
            self._by_channel[key] = out
            self._by_connection[connection] = out
            syn = Segment(connection, True, 0, SYN)
            opening.append(Envelope(source_id=self.node_id, destination_id=out.peer, body=syn))
        body = effect.body
        frame = encode_request(body, effect.request_id, f"node-{self.node_id}")
        deadline = now_ms + self.request_timeout_ms + _server_wait_ms(body)
        out.in_flight.append(
            _InFlight(effect.request_id, int(body.__api_key__), int(body.__version__), deadline)
        )
        segment = Segment(out.connection, True, out.next_seq, frame)
        out.next_seq += 1
        envelope = Envelope(source_id=self.node_id, destination_id=out.peer, body=segment)
        if not out.established:
            out.waiting.append(envelope)
            return opening
        return [envelope]

    def receive(self, source: int, body: Segment | Reset) -> tuple[list[boundary.Event], list[Envelope]]:
        """A SYN-ACK, a response or a reset from ``source``, the server side of one of this node's
        connections: the events for the broker, and the segments to send now."""
        out = self._by_connection.get(body.connection)
        if out is None:
            if isinstance(body, Segment):  # a connection of an earlier incarnation, or one reset
                return [], [self._reset_to_server(body.connection, source, "unknown connection")]
            return [], []
        if isinstance(body, Reset):
            return self._fail(out, f"connection reset: {body.reason}"), []
        events: list[boundary.Event] = []
        sends: list[Envelope] = []
        for frame in out.received.accept(body.seq, body.frame):
            if frame == SYN:
                out.established = True
                sends, out.waiting = out.waiting, []
                continue
            if not out.in_flight:
                events += self._fail(out, "a response to no request")
                return events, [self._reset_to_server(out.connection, out.peer, "protocol error")]
            request = out.in_flight.popleft()
            (correlation_id,) = struct.unpack_from(">i", frame, 4)
            if correlation_id != request.request_id:
                # Kafka's clients check this too: an answer to another request means the stream is lost.
                out.in_flight.appendleft(request)
                events += self._fail(out, f"correlation id {correlation_id}, expected {request.request_id}")
                return events, [self._reset_to_server(out.connection, out.peer, "correlation id mismatch")]
            events.append(
                boundary.answer(request.request_id, request.api_key, request.api_version, frame[4:])
            )
        return events, sends

    def expire(self, now_ms: int) -> tuple[list[boundary.Event], list[Envelope]]:
        """Connections whose oldest request is overdue are dropped (RST to the server)."""
        events: list[boundary.Event] = []
        envelopes: list[Envelope] = []
        for out in list(self._by_connection.values()):
            if out.in_flight and out.in_flight[0].deadline_ms <= now_ms:
                events += self._fail(out, f"request timed out after {self.request_timeout_ms} ms")
                envelopes.append(self._reset_to_server(out.connection, out.peer, "request timeout"))
        return events, envelopes

    def next_deadline_ms(self) -> int | None:
        deadlines = [out.in_flight[0].deadline_ms for out in self._by_connection.values() if out.in_flight]
        return min(deadlines) if deadlines else None

    def is_open(self, connection: Connection) -> bool:
        return connection in self._by_connection

    def close_all(self) -> list[Envelope]:
        """Resets for every connection this node opened (the process is gone)."""
        return [
            self._reset_to_server(o.connection, o.peer, "peer process exited")
            for o in self._by_connection.values()
        ]

    def _fail(self, out: _Outgoing, reason: str) -> list[boundary.Event]:
        self._by_connection.pop(out.connection, None)
        for key, known in list(self._by_channel.items()):
            if known is out:
                del self._by_channel[key]
        failed: list[boundary.Event] = [
            boundary.RequestFailed(request_id=r.request_id, reason=reason) for r in out.in_flight
        ]
        out.in_flight.clear()
        return failed

    def _reset_to_server(self, connection: Connection, peer: int, reason: str) -> Envelope:
        return Envelope(source_id=self.node_id, destination_id=peer, body=Reset(connection, True, reason))


@dataclass
class _Incoming:
    connection: Connection
    local_id: int
    received: _InOrder = field(default_factory=lambda: _InOrder(after_syn=True))
    next_seq: int = 1
    """Sequence 0 was the SYN-ACK; answers follow it."""


class Listener:
    """The connections opened to a node: frames in as broker events, responses out as segments.

    ``listeners`` names the listener behind each port (as a broker's ``listeners`` config does), so
    the broker core knows whether a connection reached its controller listener; a port not listed
    is the PLAINTEXT listener."""

    def __init__(self, node_id: int, listeners: Mapping[int, str] | None = None) -> None:
        self.node_id = node_id
        self.listeners = dict(listeners or {})
        self._local_ids = itertools.count(1)
        self._by_connection: dict[Connection, _Incoming] = {}
        self._by_local: dict[int, _Incoming] = {}

    def receive(self, body: Segment | Reset) -> tuple[list[boundary.Event], list[Envelope]]:
        """A request segment or a reset from the client side of a connection opened to this node."""
        incoming = self._by_connection.get(body.connection)
        if isinstance(body, Reset):
            if incoming is None:
                return [], []
            self._forget(incoming)
            return [boundary.ConnectionClosed(connection_id=incoming.local_id)], []
        if incoming is None:
            if body.frame != SYN:  # a connection opened before this node restarted, or reset here
                reset = Reset(body.connection, False, "unknown connection")
                return [], [
                    Envelope(source_id=self.node_id, destination_id=body.connection.client, body=reset)
                ]
            incoming = _Incoming(body.connection, next(self._local_ids))
            self._by_connection[body.connection] = incoming
            self._by_local[incoming.local_id] = incoming
            opened = boundary.ConnectionOpened(
                connection_id=incoming.local_id,
                client_host=f"node-{body.connection.client}",
                client_port=body.connection.number,
                listener=self.listeners.get(body.connection.port, "PLAINTEXT"),
            )
            synack = Segment(body.connection, False, 0, SYN)
            return [opened], [
                Envelope(source_id=self.node_id, destination_id=body.connection.client, body=synack)
            ]
        events: list[boundary.Event] = []
        for frame in incoming.received.accept(body.seq, body.frame):
            if frame != SYN:
                events.append(boundary.FrameReceived(connection_id=incoming.local_id, frame=frame[4:]))
        return events, []

    def respond(self, effect: boundary.SendResponse) -> Envelope | None:
        incoming = self._by_local.get(effect.connection_id)
        if incoming is None:
            return None  # the connection was reset while the answer was being made
        if not all(isinstance(p, bytes) for p in effect.parts):
            raise TypeError("a simulated broker's store answers with bytes, never file regions")
        data = b"".join(p for p in effect.parts if isinstance(p, bytes))
        seq = incoming.next_seq
        incoming.next_seq += 1
        return Envelope(
            source_id=self.node_id,
            destination_id=incoming.connection.client,
            body=Segment(incoming.connection, False, seq, data),
        )

    def close(self, effect: boundary.CloseConnection) -> Envelope | None:
        incoming = self._by_local.get(effect.connection_id)
        if incoming is None:
            return None
        self._forget(incoming)
        return Envelope(
            source_id=self.node_id,
            destination_id=incoming.connection.client,
            body=Reset(incoming.connection, False, effect.reason),
        )

    def is_open(self, connection: Connection) -> bool:
        return connection in self._by_connection

    def close_all(self) -> list[Envelope]:
        """Resets for every connection opened to this node (the process is gone)."""
        return [
            Envelope(
                source_id=self.node_id,
                destination_id=i.connection.client,
                body=Reset(i.connection, False, "peer process exited"),
            )
            for i in self._by_connection.values()
        ]

    def _forget(self, incoming: _Incoming) -> None:
        self._by_connection.pop(incoming.connection, None)
        self._by_local.pop(incoming.local_id, None)


class Endpoint:
    """One node's side of the network: the connections it opened and those opened to it."""

    def __init__(
        self,
        node_id: int,
        incarnation: int,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        listeners: Mapping[int, str] | None = None,
    ) -> None:
        self.dialer = Dialer(node_id, incarnation, request_timeout_ms)
        self.listener = Listener(node_id, listeners)

    def receive(self, envelope: Envelope, now_ms: int) -> tuple[list[boundary.Event], list[Envelope]]:
        """The events a delivered message means to the node, and any reset it answers with."""
        body = envelope.body
        if not isinstance(body, Segment | Reset):
            raise TypeError(f"not a transport message: {type(body).__name__}")
        if body.to_server:
            return self.listener.receive(body)
        return self.dialer.receive(envelope.source_id, body)

    def apply(self, effects: tuple[Any, ...], now_ms: int) -> list[Envelope]:
        """Carry out a broker step's effects: requests out, responses back, connections closed."""
        out: list[Envelope] = []
        for effect in effects:
            envelope: Envelope | None
            if isinstance(effect, boundary.SendRequest):
                out += self.dialer.send(effect, now_ms)
                continue
            if isinstance(effect, boundary.ResumeReading):
                continue  # the simulated network delivers every frame: the core queues them
            if isinstance(effect, boundary.SendResponse):
                envelope = self.listener.respond(effect)
            elif isinstance(effect, boundary.CloseConnection):
                envelope = self.listener.close(effect)
            else:
                raise TypeError(f"unknown effect {type(effect).__name__}")
            if envelope is not None:
                out.append(envelope)
        return out

    def expire(self, now_ms: int) -> tuple[list[boundary.Event], list[Envelope]]:
        return self.dialer.expire(now_ms)

    def is_open(self, segment: Segment) -> bool:
        """Whether this node still holds the connection ``segment`` was sent on (from its side)."""
        if segment.to_server:
            return self.dialer.is_open(segment.connection)
        return self.listener.is_open(segment.connection)

    def exit_messages(self) -> list[Envelope]:
        """What the kernel sends when this node's process dies: a reset on every open connection."""
        return self.dialer.close_all() + self.listener.close_all()

    def next_deadline_ms(self) -> int | None:
        return self.dialer.next_deadline_ms()
