"""Several sans-IO brokers in one process, their peer requests carried as real Kafka frames.

They share a real KRaft quorum whose only voter is broker 1 (a combined broker+controller; the
others observe the metadata log and register with it), as the simulator's nodes do
(``reference_impl/sim/broker/nodes.py``: its controller listener and port); every message goes
through kio encoding exactly as on a socket, on the listener its port names. A node can be stopped
(its messages dropped, its in-flight requests failed) and isolated; time is virtual.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kio.static.protocol import RequestPayload

from reference_impl.core.boundary import (
    CloseConnection,
    ConnectionOpened,
    Event,
    FrameReceived,
    RequestFailed,
    ResponseReceived,
    SendRequest,
    SendResponse,
    Step,
)
from reference_impl.core.broker import Broker
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.kraft.quorum import QuorumPorts
from reference_impl.core.ports import MemoryLogStore
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore
from reference_impl.protocol.codec import decode_response, encode_request
from reference_impl.protocol.frames import FrameDecoder
from reference_impl.sim.broker.nodes import CONTROLLER_PORT, LISTENERS

from .harness import HARNESS_CONFIGS, START_MS

VOTER = 1
CLUSTER_CONFIGS = (*HARNESS_CONFIGS, "controller.listener.names=CONTROLLER")
SETTLE_MS = 10_000


@dataclass
class _Link:
    """The connection from one broker to a peer: requests answered in order."""

    connection_id: int
    in_flight: deque[tuple[int, RequestPayload]] = field(default_factory=deque)


class ClusterHarness:
    def __init__(self, size: int, *configs: str) -> None:
        self.now_ms = START_MS
        self.stores = {n: MemoryLogStore() for n in range(1, size + 1)}
        self.brokers: dict[int, Broker] = {}
        self.stopped: set[int] = set()
        self._conn_ids = itertools.count(1000)
        self._links: dict[tuple[int, int, str], _Link] = {}
        self._link_owner: dict[tuple[int, int], tuple[int, int, str]] = {}
        self._client_responses: dict[tuple[int, int], list[bytes]] = {}
        self._queue: deque[tuple[int, Event]] = deque()
        self._failed_on_resume: dict[int, list[RequestFailed]] = {}
        voters = {VOTER: (f"broker-{VOTER}", CONTROLLER_PORT)}
        for n in range(1, size + 1):
            self.brokers[n] = Broker(
                config=BrokerConfig.parse(n, (*CLUSTER_CONFIGS, *configs)),
                store=self.stores[n],
                advertised_host=f"broker-{n}",
                advertised_port=9092,
                cluster_id="cluster",
                now_ms=self.now_ms,
                quorum=QuorumPorts(voters, MemoryQuorumStateStore(), MemorySnapshotStore()),
            )
        self.sync()
        waited = 0
        while not all(b.open_to_clients for b in self.brokers.values()) and waited < SETTLE_MS:
            self.advance(10)
            waited += 10
        assert all(b.open_to_clients for b in self.brokers.values()), "the brokers never registered"

    # -- driving -------------------------------------------------------------------------------

    def sync(self) -> None:
        """Run every running broker's timers until each has applied the voter's whole metadata log
        (a creation forwarded to the controller, its records fetched by the observers); bounded."""
        for n, broker in self.brokers.items():
            if n not in self.stopped:
                self._deliver(n, broker.tick(self.now_ms))
        self._drain()
        waited = 0
        while not self._metadata_applied() and waited < SETTLE_MS:
            self.advance(10)
            waited += 10

    def _metadata_applied(self) -> bool:
        if VOTER in self.stopped:
            return True  # nothing more to fetch
        end = self.brokers[VOTER].quorum.raft.log.end_offset if self.brokers[VOTER].quorum else 0
        return all(
            b.quorum is not None and b.quorum.raft.published_offset >= end
            for n, b in self.brokers.items()
            if n not in self.stopped
        )

    def advance(self, ms: int, step_ms: int = 10) -> None:
        end = self.now_ms + ms
        while self.now_ms < end:
            self.now_ms = min(end, self.now_ms + step_ms)
            for n, broker in self.brokers.items():
                if n not in self.stopped:
                    self._deliver(n, broker.tick(self.now_ms))
            self._drain()

    def stop(self, node: int) -> None:
        """The node stops answering; requests to and from it fail."""
        self.stopped.add(node)
        for (src, dst, channel), link in list(self._links.items()):
            if node in (src, dst):
                while link.in_flight:
                    request_id, _body = link.in_flight.popleft()
                    failure = RequestFailed(request_id=request_id, reason="connection lost")
                    if src in self.stopped:
                        self._failed_on_resume.setdefault(src, []).append(failure)  # seen when it wakes
                    else:
                        self._queue.append((src, failure))
                del self._links[(src, dst, channel)]
        self._drain()

    def resume(self, node: int) -> None:
        self.stopped.discard(node)
        for failure in self._failed_on_resume.pop(node, []):
            self._queue.append((node, failure))
        self.sync()

    # -- a client on one broker ------------------------------------------------------------------

    def call(self, node: int, body: RequestPayload, *, settle_ms: int = 0) -> Any:
        cid = next(self._conn_ids)
        broker = self.brokers[node]
        self._deliver(
            node,
            broker.step(
                ConnectionOpened(connection_id=cid, client_host="client", client_port=1), self.now_ms
            ),
        )
        self._deliver(
            node, broker.step(FrameReceived(connection_id=cid, frame=self._frame(body, 1)), self.now_ms)
        )
        self._drain()
        waited = 0
        while not self._client_responses.get((node, cid)) and waited < max(settle_ms, 60_000):
            self.advance(10)
            waited += 10
        frames = self._client_responses.get((node, cid))
        assert frames, f"broker {node} never answered {type(body).__name__}"
        return decode_response(int(body.__api_key__), int(body.__version__), frames.pop(0))[1]

    # -- plumbing --------------------------------------------------------------------------------

    @staticmethod
    def _frame(body: RequestPayload, correlation_id: int) -> bytes:
        (frame,) = FrameDecoder().feed(encode_request(body, correlation_id, "harness"))
        return frame

    def _deliver(self, node: int, step: Step) -> None:
        for effect in step.effects:
            if isinstance(effect, SendRequest):
                self._route_request(node, effect)
            elif isinstance(effect, SendResponse):
                data = b"".join(p for p in effect.parts if isinstance(p, bytes))
                (frame,) = FrameDecoder().feed(data)
                owner = self._link_owner.get((node, effect.connection_id))
                if owner is None:
                    self._client_responses.setdefault((node, effect.connection_id), []).append(frame)
                    continue
                link = self._links.get(owner)
                if link is None or not link.in_flight or owner[0] in self.stopped:
                    continue
                request_id, body = link.in_flight.popleft()
                _corr, response = decode_response(int(body.__api_key__), int(body.__version__), frame)
                self._queue.append((owner[0], ResponseReceived(request_id=request_id, body=response)))
            elif isinstance(effect, CloseConnection):
                pass

    def _route_request(self, src: int, effect: SendRequest) -> None:
        dst = effect.node_id
        if dst in self.stopped or src in self.stopped or dst not in self.brokers:
            self._queue.append((src, RequestFailed(request_id=effect.request_id, reason="unreachable")))
            return
        listener = LISTENERS.get(effect.port, "PLAINTEXT")
        link = self._links.get((src, dst, effect.channel))  # a connection per channel, as the shell's
        if link is None:
            link = self._links[(src, dst, effect.channel)] = _Link(next(self._conn_ids))
            self._link_owner[(dst, link.connection_id)] = (src, dst, effect.channel)
            opened = ConnectionOpened(
                connection_id=link.connection_id,
                client_host=f"broker-{src}",
                client_port=1,
                listener=listener,
            )
            self._queue.append((dst, opened))
        link.in_flight.append((effect.request_id, effect.body))
        self._queue.append(
            (
                dst,
                FrameReceived(
                    connection_id=link.connection_id, frame=self._frame(effect.body, effect.request_id)
                ),
            )
        )

    def _drain(self, limit: int = 100_000) -> None:
        for _ in range(limit):
            if not self._queue:
                return
            node, event = self._queue.popleft()
            if node in self.stopped:
                continue
            self._deliver(node, self.brokers[node].step(event, self.now_ms))
        raise AssertionError("message storm: the cluster did not settle")
