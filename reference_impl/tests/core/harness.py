"""Drive a sans-IO broker from tests: a virtual clock, connections, kio requests in, responses out."""

from __future__ import annotations

import itertools
from typing import Any

from kio.static.protocol import RequestPayload

from reference_impl.core.boundary import (
    CloseConnection,
    ConnectionClosed,
    ConnectionOpened,
    FrameReceived,
    ResumeReading,
    SendResponse,
    Step,
)
from reference_impl.core.broker import Broker
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.ports import MemoryLogStore
from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import decode_response, encode_request
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.frames import FrameDecoder

START_MS = 1_700_000_000_000
HARNESS_CONFIGS = ("controller.quorum.append.linger.ms=0",)
"""The broker is the only voter of its quorum; its records commit as they are written (no linger),
so most admin answers come in the step of the request, as Kafka's with linger 0."""
COORDINATOR_NOT_READY = frozenset(
    {ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available}
)
SETTLE_ROUNDS = 50
SAME_TIME_ROUNDS = 4
ANSWER_ROUNDS = 20
ANSWER_STEP_MS = 5
WALK_WAKEUPS = 10_000
"""``tick_at`` ticks at most this many of the broker's wake-ups on its way (bounded; an idle broker
wakes for its heartbeats, seconds apart)."""
"""``take`` ticks at most this far at a time (to the broker's next wake-up if sooner) while an
answer waits for its commit."""


class BrokerHarness:
    def __init__(self, *configs: str, store: MemoryLogStore | None = None, now_ms: int = START_MS) -> None:
        self.now_ms = now_ms
        self.mono_ms: int | None = None
        """The broker's monotonic clock once :meth:`tick_at` set it apart (None: the wall clock)."""
        self.store = store or MemoryLogStore()
        self.broker = Broker(
            config=BrokerConfig.parse(1, (*HARNESS_CONFIGS, *configs)),
            store=self.store,
            advertised_host="127.0.0.1",
            advertised_port=9092,
            cluster_id="test-cluster",
            now_ms=now_ms,
        )
        self._ids = itertools.count(1)
        self._corr = itertools.count(1)
        self.responses: dict[int, list[bytes]] = {}
        self.closed: dict[int, str] = {}
        self.resumed: list[int] = []
        """Connections the broker said may be read again (ResumeReading), in order."""
        self.next_wakeup_ms: int | None = None
        self.settle()

    def settle(self) -> None:
        """Tick until the broker, the only voter of its quorum, has registered and serves clients
        (bounded: a few rounds of its own timers)."""
        for round in range(SETTLE_ROUNDS):
            if self.broker.open_to_clients and self.broker.quorum.has_producer_ids:
                return
            self._tick_to_next_wakeup(round)
        raise AssertionError("the broker never opened to clients")

    def _tick_to_next_wakeup(self, round: int) -> None:
        """The first rounds tick at the same time (the lone voter's requests to itself, answered in
        process, take a tick each); later ones move the clock to the next wake-up."""
        if round < SAME_TIME_ROUNDS:
            self._apply(self.broker.tick(self.now_ms, self.mono_ms))
            return
        wake = self.next_wakeup_ms
        mono = self.now_ms if self.mono_ms is None else self.mono_ms
        self.advance(max(0, min(wake - mono, ANSWER_STEP_MS)) if wake is not None else ANSWER_STEP_MS)

    def connect(self, listener: str = "PLAINTEXT") -> int:
        cid = next(self._ids)
        opened = ConnectionOpened(
            connection_id=cid, client_host="127.0.0.1", client_port=40000 + cid, listener=listener
        )
        self._apply(self.broker.step(opened, self.now_ms, self.mono_ms))
        return cid

    def disconnect(self, cid: int) -> None:
        self._apply(self.broker.step(ConnectionClosed(connection_id=cid), self.now_ms, self.mono_ms))

    def send_frame(self, cid: int, frame: bytes) -> None:
        """Raw bytes as a frame (size prefix included), cut by a real decoder."""
        for f in FrameDecoder().feed(frame):
            received = FrameReceived(connection_id=cid, frame=f)
            self._apply(self.broker.step(received, self.now_ms, self.mono_ms))

    def send(self, cid: int, body: RequestPayload) -> int:
        corr = next(self._corr)
        self.send_frame(cid, encode_request(body, corr, "test-client"))
        return corr

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        if self.mono_ms is not None:
            self.mono_ms += ms
        self._apply(self.broker.tick(self.now_ms, self.mono_ms))

    def tick_at(self, wall_ms: int, mono_ms: int) -> None:
        """Run the broker's timers with its two clocks given apart (a wall-clock step).

        The monotonic time up to ``mono_ms`` passes as it does for a running broker: ticked at each
        of its wake-ups on the way (its heartbeats to its own controller among them), so a long step
        is time passing, not a stalled process that its controller would rightly fence."""
        mono = self.now_ms if self.mono_ms is None else self.mono_ms
        self.now_ms = wall_ms
        for _ in range(WALK_WAKEUPS):
            wake = self.next_wakeup_ms
            if wake is None or wake >= mono_ms:
                break
            mono = max(mono + 1, wake)
            self.mono_ms = mono
            self._apply(self.broker.tick(wall_ms, mono))
        self.mono_ms = mono_ms
        self._apply(self.broker.tick(wall_ms, mono_ms))

    def take(self, cid: int, body: RequestPayload) -> Any:
        """The oldest unread response on ``cid``, decoded as the response to ``body``."""
        for round in range(ANSWER_ROUNDS):  # an admin answer waits for its records to commit
            if self.responses.get(cid) or cid in self.closed:
                break
            self._tick_to_next_wakeup(round)
        frames = self.responses.get(cid) or []
        assert frames, f"no response on connection {cid} (closed: {self.closed.get(cid)})"
        frame = frames.pop(0)
        _corr, response = decode_response(int(body.__api_key__), int(body.__version__), frame)
        return response

    def call(self, body: RequestPayload, cid: int | None = None) -> Any:
        cid = cid or self.connect()
        self.send(cid, body)
        return self.take(cid, body)

    def call_as_client(self, body: RequestPayload) -> Any:
        """``call``, retried as Kafka's clients retry while a coordinator's internal topic is being
        created and loaded (its records commit, then its partitions open): bounded."""
        answer = self.call(body)
        for round in range(ANSWER_ROUNDS):
            if getattr(answer, "error_code", ErrorCode.none) not in COORDINATOR_NOT_READY:
                break
            self._tick_to_next_wakeup(round)
            answer = self.call(body)
        return answer

    def _apply(self, step: Step) -> None:
        self.next_wakeup_ms = step.next_wakeup_ms
        for effect in step.effects:
            if isinstance(effect, SendResponse):
                data = b"".join(p for p in effect.parts if isinstance(p, bytes))
                self.responses.setdefault(effect.connection_id, []).extend(FrameDecoder().feed(data))
            elif isinstance(effect, CloseConnection):
                self.closed[effect.connection_id] = effect.reason
            elif isinstance(effect, ResumeReading):
                self.resumed.append(effect.connection_id)


def settled(broker: Broker, now_ms: int) -> Broker:
    """A broker made outside a harness, ticked at ``now_ms`` until it serves clients (bounded): the
    only voter of its quorum registers and is unfenced by its own controller in a few ticks."""
    wake: int | None = now_ms
    for round in range(SETTLE_ROUNDS):
        if broker.open_to_clients and broker.quorum.has_producer_ids:
            return broker
        if round >= SAME_TIME_ROUNDS and wake is not None:  # e.g. the metadata log's append linger
            now_ms = max(now_ms, wake)
        wake = broker.tick(now_ms).next_wakeup_ms
    raise AssertionError("the broker never opened to clients")


def request(api_key: int, version: int, **fields: Any) -> Any:
    """A request entity of any version from plain data (missing fields take schema defaults)."""
    return build(request_class(api_key, version), fields)
