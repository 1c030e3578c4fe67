"""Every type that crosses between the sans-IO broker and a shell (asyncio or simulator).

Inbound events are past tense (something happened); outbound effects are
imperative (do this). A :class:`Step` is what one call into the broker
returns: the effects to carry out, and when to call again at the latest.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.static.protocol import RequestPayload, ResponsePayload

from reference_impl.log.api import FileRegion
from reference_impl.protocol.codec import decode_response


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionOpened:
    connection_id: int
    client_host: str
    client_port: int
    listener: str = "PLAINTEXT"
    """The name of the listener the connection came in on (Kafka's listener names): one named in
    ``controller.listener.names`` serves the quorum and registration APIs and nothing else."""
    peer_certificate_dn: str | None = None
    """A TLS client's verified certificate subject (RFC 2253), which names its principal on an SSL
    listener (:mod:`.security`); None without TLS or a client certificate."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameReceived:
    """One whole request frame (size prefix removed)."""

    connection_id: int
    frame: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionClosed:
    connection_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseReceived:
    """The answer to a :class:`SendRequest` this broker made to a peer."""

    request_id: int
    body: ResponsePayload


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestFailed:
    """A :class:`SendRequest` got no answer: the peer was unreachable or the connection dropped."""

    request_id: int
    reason: str


Event = ConnectionOpened | FrameReceived | ConnectionClosed | ResponseReceived | RequestFailed


def answer(request_id: int, api_key: int, api_version: int, frame: bytes) -> ResponseReceived | RequestFailed:
    """What a peer's response frame (size prefix removed) to request ``request_id`` means to the broker,
    for every shell that carries its requests: the decoded answer, or the request failed when the
    frame does not decode (a peer's garbage fails the request, never the node)."""
    try:
        _corr, body = decode_response(api_key, api_version, frame)
    except Exception as exc:
        return RequestFailed(request_id=request_id, reason=f"undecodable response: {exc}")
    return ResponseReceived(request_id=request_id, body=body)


@dataclass(frozen=True, slots=True, kw_only=True)
class SendResponse:
    """Write these parts, in order, as one response frame (the size prefix is the first part)."""

    connection_id: int
    parts: tuple[bytes | FileRegion, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseConnection:
    connection_id: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeReading:
    """The connection may be read again.

    A shell that honours backpressure reads nothing more from a connection after it has handed
    the core one :class:`FrameReceived` of it (Kafka mutes a channel once a request is read), nor
    after :meth:`Broker.reserve_frame` refused it, until this effect names the connection. A shell
    without backpressure (the simulator) may ignore it: the core queues what arrives meanwhile."""

    connection_id: int


DATA_CHANNEL = "data"
"""The connection replica fetches use; quorum and controller traffic has its own (``raft``,
``controller``), so a long-poll fetch never holds a vote or a heartbeat back."""
CONTROLLER_CHANNEL = "controller"
"""The connection to the active controller: registration, heartbeats, AlterPartition."""
FORWARDING_CHANNEL = "forwarding"
"""The connection admin requests a broker forwards to the active controller use (KIP-590). Their
answers wait for the controller's commit, or for its timeout when it has no quorum: on the
controller connection they would hold heartbeats back until the broker was fenced (Kafka's
forwarding has its own channel manager too)."""
TXN_MARKER_CHANNEL = "txn-markers"
"""The connection WriteTxnMarkers use (Kafka's TransactionMarkerChannelManager has its own too). A
broker answers one request per connection at a time and a marker's answer waits for the ISR, so on
the fetch connection it would hold back the very fetch that replicates it, until its timeout."""
TXN_VERIFICATION_CHANNEL = "txn-verification"
"""The connection a partition leader's AddPartitionsToTxn v4 verification uses (Kafka's
AddPartitionsToTxnManager is its own InterBrokerSendThread): an add's answer waits for the
coordinator's state record to replicate, which on the fetch connection would hold back the very
fetch that replicates it."""
SHARE_STATE_CHANNEL = "share-state"
"""The connection a share-partition leader's ReadShareGroupState/WriteShareGroupState use (Kafka's
persister has its own send thread): a write's answer waits for its ``__share_group_state`` record to
replicate, which on the fetch connection would hold back the very fetch that replicates it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SendRequest:
    """Send ``body`` to broker ``node_id`` at ``host:port``; answer with ResponseReceived or RequestFailed."""

    request_id: int
    node_id: int
    host: str
    port: int
    body: RequestPayload
    channel: str = DATA_CHANNEL


Effect = SendResponse | CloseConnection | SendRequest | ResumeReading


@dataclass(frozen=True, slots=True)
class Step:
    effects: tuple[Effect, ...]
    next_wakeup_ms: int | None
    """Call :meth:`tick` at this time at the latest (None: only when an event arrives)."""
