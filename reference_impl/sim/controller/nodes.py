"""Simulated brokers as the controller quorum sees them, and controllers built from disks.

A :class:`BrokerStubNode` is what a KRaft broker is to the controllers: an
observer of the metadata log (a :class:`RaftClient` that fetches but never
votes) replaying committed records into its own :class:`ControllerImage`,
and a client of the active controller that registers, heartbeats with the
offset it has replayed, and may ask for a controlled shutdown. It holds no
partitions: the lead's partition-replica nodes will take its place and keep
its controller conversation.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from reference_impl.core.controller.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from reference_impl.core.controller.node import ControllerNode
from reference_impl.core.controller.quorum import ControllerConfig
from reference_impl.core.controller.records import ControllerImage, decode_record, decode_snapshot
from reference_impl.core.raft.api import CommittedBatch, LeaderAndEpoch, RaftConfig, RaftStep
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import RAFT_MESSAGE_TYPES, Envelope
from reference_impl.core.raft.raft_log import Snapshot

from ..engine.simulation import Simulation
from ..raft.invariants import raft_invariants
from ..raft.nodes import RaftDisk


@dataclass(frozen=True, slots=True)
class BrokerStubConfig:
    heartbeat_interval_ms: int = 2_000
    """Kafka's ``broker.heartbeat.interval.ms``."""
    request_timeout_ms: int = 1_000


class BrokerStubNode:
    def __init__(
        self,
        node_id: int,
        controllers: tuple[int, ...],
        raft: RaftClient,
        rng: random.Random,
        now_ms: int,
        config: BrokerStubConfig | None = None,
    ) -> None:
        self.node_id = node_id
        self.controllers = controllers
        self.raft = raft
        self.rng = rng
        self.config = config or BrokerStubConfig()
        self.image = ControllerImage(cluster_id="kafka-harness", controller_id=-1)
        self.committed: list[tuple[int, bytes]] = []
        self.broker_epoch = -1
        self.fenced = True
        self.want_shut_down = False
        self.should_shut_down = False
        self._controller_index = rng.randrange(len(controllers))
        self._correlation = itertools.count(1)
        self._inflight: tuple[int, int] | None = None
        self._next_heartbeat_ms = now_ms
        raft.register(self)

    # -- RaftListener: the broker's metadata image -----------------------------------------------

    def handle_commit(self, batch: CommittedBatch) -> None:
        for offset, value in batch.records:
            self.image.apply(decode_record(value), offset)
        self.committed.extend(batch.records)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.image = decode_snapshot(snapshot.data, self.image.cluster_id, snapshot.snapshot_id.offset)
        self.committed = []

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.image.controller_id = leader.leader_id

    # -- the node ------------------------------------------------------------------------------

    def request_controlled_shutdown(self) -> None:
        self.want_shut_down = True

    def step(self, message: Envelope | None, now_ms: int) -> RaftStep:
        if message is not None:
            if isinstance(message.body, RAFT_MESSAGE_TYPES):
                self.raft.handle(message, now_ms)
            else:
                self._handle_controller_response(message.body, now_ms)
        self.raft.poll(now_ms)
        out = list(self.raft.drain_outbound())
        if self._inflight is not None and now_ms - self._inflight[1] >= self.config.request_timeout_ms:
            self._inflight = None
            self._controller_index += 1
        if self._inflight is None and now_ms >= self._next_heartbeat_ms:
            out.append(self._next_request(now_ms))
        deadlines = [
            self._next_heartbeat_ms
            if self._inflight is None
            else self._inflight[1] + self.config.request_timeout_ms
        ]
        raft_deadline = self.raft.next_deadline_ms()
        if raft_deadline is not None:
            deadlines.append(raft_deadline)
        return RaftStep(tuple(out), min(deadlines))

    def _next_request(self, now_ms: int) -> Envelope:
        correlation = next(self._correlation)
        self._inflight = (correlation, now_ms)
        controller = self.controllers[self._controller_index % len(self.controllers)]
        body: Any
        if self.broker_epoch < 0:
            body = BrokerRegistrationRequest(
                correlation_id=correlation, broker_id=self.node_id, host=f"broker-{self.node_id}", port=9092
            )
        else:
            body = BrokerHeartbeatRequest(
                correlation_id=correlation,
                broker_id=self.node_id,
                broker_epoch=self.broker_epoch,
                current_metadata_offset=self.raft.published_offset,
                want_shut_down=self.want_shut_down,
            )
        return Envelope(source_id=self.node_id, destination_id=controller, body=body)

    def _handle_controller_response(self, body: Any, now_ms: int) -> None:
        if self._inflight is None or getattr(body, "correlation_id", None) != self._inflight[0]:
            return
        self._inflight = None
        if body.error_code == ErrorCode.not_controller:
            self._controller_index += 1
            self._next_heartbeat_ms = now_ms + 50
            return
        if isinstance(body, BrokerRegistrationResponse):
            if body.error_code == ErrorCode.none:
                self.broker_epoch = body.broker_epoch
            self._next_heartbeat_ms = now_ms
        elif isinstance(body, BrokerHeartbeatResponse):
            if body.error_code in (ErrorCode.stale_broker_epoch, ErrorCode.broker_id_not_registered):
                self.broker_epoch = -1
                self._next_heartbeat_ms = now_ms
                return
            self.fenced = body.is_fenced
            self.should_shut_down = body.should_shut_down
            interval = self.config.heartbeat_interval_ms
            # Heartbeat sooner while waiting to be unfenced or to be let go, as Kafka's brokers do.
            self._next_heartbeat_ms = now_ms + (
                interval // 10 if self.fenced or self.want_shut_down else interval
            )


def controller_factory(
    voters: tuple[int, ...],
    disks: dict[int, RaftDisk],
    raft_config: RaftConfig,
    controller_config: ControllerConfig,
) -> Callable[[int, random.Random, int], ControllerNode]:
    def build(node_id: int, rng: random.Random, now_ms: int) -> ControllerNode:
        disk = disks[node_id]
        raft = RaftClient(node_id, voters, disk.raft_log(), disk.quorum_store, rng, now_ms, raft_config)
        return ControllerNode(raft, rng, controller_config)

    return build


def broker_factory(
    voters: tuple[int, ...],
    disks: dict[int, RaftDisk],
    raft_config: RaftConfig,
    config: BrokerStubConfig | None = None,
) -> Callable[[int, random.Random, int], BrokerStubNode]:
    def build(node_id: int, rng: random.Random, now_ms: int) -> BrokerStubNode:
        disk = disks[node_id]
        raft = RaftClient(node_id, voters, disk.raft_log(), disk.quorum_store, rng, now_ms, raft_config)
        return BrokerStubNode(node_id, voters, raft, rng, now_ms, config)

    return build


def build_controller_simulation(
    seed: int,
    controllers: int = 3,
    brokers: int = 3,
    *,
    raft_config: RaftConfig | None = None,
    controller_config: ControllerConfig | None = None,
    broker_config: BrokerStubConfig | None = None,
    trace: bool = True,
) -> tuple[Simulation, dict[int, RaftDisk]]:
    """Controllers 1..C (the voters) and brokers 101..100+B (observers), every invariant installed."""
    voters = tuple(range(1, controllers + 1))
    broker_ids = tuple(range(101, 101 + brokers))
    disks = {n: RaftDisk() for n in voters + broker_ids}
    raft_config = raft_config or RaftConfig()
    sim = Simulation(seed, trace=trace)
    sim.invariants.extend(raft_invariants())
    make_controller = controller_factory(voters, disks, raft_config, controller_config or ControllerConfig())
    for n in voters:
        sim.add_node(n, make_controller, disks[n])
    make_broker = broker_factory(voters, disks, raft_config, broker_config)
    for n in broker_ids:
        sim.add_node(n, make_broker, disks[n])
    return sim, disks


def active_controller(sim: Simulation) -> int | None:
    for node_id, node in sorted(sim.nodes.items()):
        if isinstance(node, ControllerNode) and node.controller.is_active:
            return node_id
    return None
