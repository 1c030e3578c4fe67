"""The simulator's TCP: a handshake, frames in order and once, failures a broker can see, resends."""

from __future__ import annotations

from typing import Any

from reference_impl.core.boundary import (
    CloseConnection,
    ConnectionClosed,
    ConnectionOpened,
    FrameReceived,
    RequestFailed,
    ResponseReceived,
    SendRequest,
    SendResponse,
)
from reference_impl.core.raft.messages import Envelope
from reference_impl.protocol.apis import request_class, response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import decode_request, encode_response
from reference_impl.sim.engine.transport import (
    SYN,
    Dialer,
    Endpoint,
    Listener,
    Reset,
    Segment,
    TcpRetransmission,
    refused,
)


def _request(request_id: int) -> SendRequest:
    body = build(request_class(18, 3), {"client_software_name": "sim", "client_software_version": "1"})
    return SendRequest(request_id=request_id, node_id=2, host="", port=0, body=body)


def _answer(frame: bytes, connection_id: int) -> SendResponse:
    header, _body = decode_request(frame)
    body = build(response_class(18, 3), {"error_code": 0, "api_keys": [], "throttle_time": 0})
    return SendResponse(
        connection_id=connection_id, parts=(encode_response(18, 3, header.correlation_id, body),)
    )


def _outcomes(events: list[Any]) -> list[tuple[type, int]]:
    return [(type(e), e.request_id) for e in events]


def _connected(dialer: Dialer, listener: Listener, *requests: SendRequest) -> tuple[int, list[Envelope]]:
    """Open a connection (SYN, SYN-ACK) carrying ``requests``: the server's connection id and the
    request segments the handshake released."""
    segments = [e for r in requests for e in dialer.send(r, now_ms=0)]
    assert [type(e.body) for e in segments] == [Segment] and segments[0].body.frame == SYN
    opened, synack = listener.receive(segments[0].body)
    assert isinstance(opened[0], ConnectionOpened) and len(opened) == 1
    events, released = dialer.receive(2, synack[0].body)
    assert events == []
    return opened[0].connection_id, released


def test_no_request_goes_out_before_the_handshake_and_none_before_its_connection_opened() -> None:
    dialer, listener = Dialer(1, 1), Listener(2)
    _cid, released = _connected(dialer, listener, _request(1), _request(2))
    assert [e.body.seq for e in released] == [1, 2]
    assert len(dialer.send(_request(3), now_ms=1)) == 1  # established: at once
    # a request segment reaching a server that never saw the connection's SYN is refused
    got, replies = Listener(3).receive(released[0].body)
    assert got == [] and [type(r.body) for r in replies] == [Reset] and replies[0].destination_id == 1


def test_requests_arrive_in_order_once_whatever_the_network_does() -> None:
    """Segments delivered reversed and twice still reach the broker once each, in sending order;
    the answers come back matched to their requests."""
    dialer, listener = Dialer(1, 1), Listener(2)
    cid, released = _connected(dialer, listener, _request(1), _request(2), _request(3))
    frames: list[Any] = []
    for envelope in [*reversed(released), released[0], released[1]]:
        got, replies = listener.receive(envelope.body)
        assert replies == []
        frames += got
    assert all(isinstance(f, FrameReceived) for f in frames)
    assert [decode_request(f.frame)[0].correlation_id for f in frames] == [1, 2, 3]
    answers = [listener.respond(_answer(f.frame, cid)) for f in frames]
    received: list[Any] = []
    for answer in [*reversed(answers), answers[2]]:
        assert answer is not None
        got, _ = dialer.receive(2, answer.body)
        received += got
    assert [(type(e), e.request_id) for e in received] == [
        (ResponseReceived, 1),
        (ResponseReceived, 2),
        (ResponseReceived, 3),
    ]


def test_an_answer_to_another_request_fails_the_connection() -> None:
    """Kafka's clients check the correlation id: an answer that is not the oldest request's means
    the stream is lost (a response skipped), so every request on it fails and the server is reset."""
    dialer, listener = Dialer(1, 1), Listener(2)
    cid, released = _connected(dialer, listener, _request(1), _request(2))
    frames: list[Any] = [e for env in released for e in listener.receive(env.body)[0]]
    skipped = _answer(frames[1].frame, cid)  # the server answers request 2 only, as if 1 was lost
    answer = listener.respond(skipped)
    assert answer is not None
    events, replies = dialer.receive(2, answer.body)
    assert _outcomes(events) == [(RequestFailed, 1), (RequestFailed, 2)]
    assert [type(r.body) for r in replies] == [Reset]


def test_an_unanswered_request_fails_at_its_timeout_and_resets_the_connection() -> None:
    dialer = Dialer(1, 1, request_timeout_ms=1_000)
    (syn,) = dialer.send(_request(1), now_ms=0)
    assert dialer.next_deadline_ms() == 1_000
    assert dialer.expire(999) == ([], [])
    events, resets = dialer.expire(1_000)
    assert [type(e) for e in events] == [RequestFailed]
    assert [type(r.body) for r in resets] == [Reset] and resets[0].destination_id == 2
    (again,) = dialer.send(_request(2), now_ms=1_000)
    assert again.body.connection != syn.body.connection and again.body.frame == SYN  # a new connection


def test_a_reset_fails_what_is_in_flight_and_closes_the_servers_side() -> None:
    endpoint, listener = Endpoint(1, 1), Listener(2)
    cid, _ = _connected(endpoint.dialer, listener, _request(7))
    close = listener.close(CloseConnection(connection_id=cid, reason="bye"))
    assert close is not None
    events, _ = endpoint.receive(close, now_ms=5)
    assert _outcomes(events) == [(RequestFailed, 7)]
    cid, released = _connected(endpoint.dialer, listener, _request(8))
    closed, _ = listener.receive(Reset(released[0].body.connection, True, "client gone"))
    assert closed == [ConnectionClosed(connection_id=cid)]


def test_an_answer_on_a_connection_of_an_earlier_incarnation_is_reset() -> None:
    """A restarted node does not know its earlier incarnation's connections (the kernel's RST)."""
    old, restarted, listener = Dialer(1, 1), Dialer(1, 2), Listener(2)
    cid, released = _connected(old, listener, _request(1))
    (frame,) = listener.receive(released[0].body)[0]
    assert isinstance(frame, FrameReceived)
    answer = listener.respond(_answer(frame.frame, cid))
    assert answer is not None
    got, replies = restarted.receive(2, answer.body)
    assert got == [] and [type(r.body) for r in replies] == [Reset] and replies[0].destination_id == 2


def test_a_down_node_refuses_and_a_lost_segment_is_resent_while_its_connection_lives() -> None:
    dialer = Dialer(1, 1)
    (syn,) = dialer.send(_request(1), now_ms=0)
    answer = refused(syn)
    assert answer is not None and answer.destination_id == 1 and isinstance(answer.body, Reset)
    assert refused(Envelope(source_id=1, destination_id=2, body=answer.body)) is None  # no RST for an RST
    tcp = TcpRetransmission()
    assert [tcp.rto_ms(n) for n in range(6)] == [200, 400, 800, 1600, 3200, 3200]

    sender = type("Node", (), {"is_open": lambda self, segment: dialer.is_open(segment.connection)})()
    sim = type("Sim", (), {"nodes": {1: sender}})()
    assert tcp.still_sending(sim, syn)
    dialer.receive(2, answer.body)  # the connection is gone: nothing more is resent on it
    assert not tcp.still_sending(sim, syn)
