"""Whole brokers as simulated nodes: the real :class:`Broker` core on a simulated disk and network.

Each node is the broker the ``kafka-harness broker`` process runs, minus the
asyncio shell: a KRaft node (broker and quorum voter in combined mode, or an
observer), with its partition replicas, replica fetcher, purgatory,
coordinators and controller. Its requests to peers and its answers travel as
real Kafka frames over :mod:`..engine.transport` connections on the seeded
:class:`~..engine.network.Network`, so a fetch, a vote or an AlterPartition is
encoded, delayed, lost or reset exactly as the network decides.

:class:`BrokerDisk` is what survives a crash. A process crash (SIGKILL) keeps
every byte written, as the page cache does; a power loss (``power_loss=True``)
also drops every log's unflushed suffix. Logs flush as Kafka's do: never by
default (Kafka leaves it to replication), after every ``flush.messages``
messages when a topic sets it; the metadata log flushes before Raft counts an
entry, as KRaft does.

Virtual time is each node's monotonic clock. Its wall clock is virtual time plus the node's offset
(:meth:`BrokerCluster.step_wall_clock`, zero at first), so a scenario can step one broker's wall
clock, forward or back, as NTP or an operator steps a machine's, while its timers keep running.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reference_impl.core.boundary import Event
from reference_impl.core.broker import Broker
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.kraft.quorum import QuorumPorts
from reference_impl.core.metadata.records import METADATA_TOPIC
from reference_impl.core.ports import MemoryLogStore
from reference_impl.core.raft.api import CommittedRecords, RaftStep
from reference_impl.core.raft.messages import Envelope
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore
from reference_impl.log.api import AppendInfo, PartitionLog
from reference_impl.log.config import LONG_MAX
from reference_impl.log.memory import MemoryLog

from ..engine.network import LinkFaults
from ..engine.simulation import Simulation
from ..engine.transport import (
    DEFAULT_REQUEST_TIMEOUT_MS,
    Endpoint,
    Segment,
    TcpRetransmission,
    describe_segment,
    refused,
)
from .invariants import broker_invariants

CLUSTER_ID = "kh-simulated-cluster"
EVENT_BUDGET = 250_000
"""The most events any one wait of a broker simulation may take (a healthy cluster runs a few
hundred per virtual second): a node that wakes itself again at once, for ever, fails the run in
seconds rather than after millions of events."""
PORT = 9092
CONTROLLER_PORT = 9093
"""Each simulated node listens on both, as ``listeners=PLAINTEXT://node-N:9092,CONTROLLER://node-N:9093``:
replica fetches reach the broker listener, the quorum and the controller's requests the other."""
LISTENERS = {PORT: "PLAINTEXT", CONTROLLER_PORT: "CONTROLLER"}

SIM_BROKER_CONFIGS: tuple[str, ...] = (
    "controller.listener.names=CONTROLLER",
    "broker.session.timeout.ms=3000",
    "broker.heartbeat.interval.ms=500",
    "replica.lag.time.max.ms=3000",
    "controller.quorum.election.timeout.ms=1000",
    "controller.quorum.fetch.timeout.ms=2000",
    "controller.quorum.request.timeout.ms=1000",
    "offsets.topic.replication.factor=3",
    "transaction.state.log.replication.factor=3",
)
"""Kafka's failure detection made quicker (broker session 9 s -> 3 s, heartbeat 2 s -> 0.5 s,
replica lag 30 s -> 3 s, quorum request timeout 2 s -> 1 s) so that a failover takes a few
seconds of virtual time; ``configs`` of :func:`build_broker_simulation` override any of them."""


class _FlushingLog(MemoryLog):
    """A memory log that flushes after every ``flush.messages`` messages, as Kafka's log does."""

    def __init__(self, flush_messages: int) -> None:
        super().__init__()
        self.flush_messages = flush_messages

    def append_as_leader(self, records: bytearray, leader_epoch: int, now_ms: int) -> AppendInfo:
        info = super().append_as_leader(records, leader_epoch, now_ms)
        self._maybe_flush()
        return info

    def append_as_follower(self, records: bytes) -> AppendInfo:
        info = super().append_as_follower(records)
        self._maybe_flush()
        return info

    def _maybe_flush(self) -> None:
        if self.log_end_offset - self.recovery_point >= self.flush_messages:
            self.flush()


def _flush_messages(configs: Mapping[str, str]) -> int:
    try:
        return max(1, int(configs.get("flush.messages", LONG_MAX)))
    except ValueError:
        return LONG_MAX


class SimLogStore(MemoryLogStore):
    """The partition logs of one simulated machine; reopening after a crash recovers them."""

    def __init__(self) -> None:
        super().__init__()
        self._opened: set[tuple[str, int]] = set()

    def open_log(
        self, topic: str, partition: int, topic_id: uuid.UUID, configs: Mapping[str, str], now_ms: int
    ) -> PartitionLog:
        key = (topic, partition)
        log = self.logs.get(key)
        if log is None:
            log = self.logs[key] = _FlushingLog(_flush_messages(configs))
        elif key not in self._opened:
            log.restart()  # loading a log trims its epoch cache to the log end, as Kafka's does
        self._opened.add(key)
        return log

    def update_configs(self, topic: str, partition: int, configs: Mapping[str, str]) -> None:
        log = self.logs.get((topic, partition))
        if isinstance(log, _FlushingLog):
            log.flush_messages = _flush_messages(configs)

    def stop(self, power_loss: bool) -> None:
        """The process is gone; with ``power_loss`` the machine lost its page cache too."""
        self._opened.clear()
        if power_loss:
            for log in self.logs.values():
                log.crash()


@dataclass
class BrokerDisk:
    """One node's data directory: partition logs (the metadata log among them), quorum state, snapshots."""

    store: SimLogStore = field(default_factory=SimLogStore)
    quorum_store: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    snapshots: MemorySnapshotStore = field(default_factory=MemorySnapshotStore)
    power_loss: bool = False
    """What the next crash is: False, a process crash (page cache kept); True, a machine losing power."""
    starts: int = 0
    crashes: int = 0

    @property
    def log(self) -> MemoryLog:
        """The ``__cluster_metadata`` log (what the Raft invariants read)."""
        log = self.store.logs.get((METADATA_TOPIC, 0))
        if log is None:
            log = self.store.logs[(METADATA_TOPIC, 0)] = _FlushingLog(LONG_MAX)
        return log

    def crash(self) -> None:
        self.crashes += 1
        self.store.stop(self.power_loss)


class BrokerSimNode:
    """The broker core of node ``node_id`` behind a simulated network endpoint."""

    def __init__(
        self, broker: Broker, endpoint: Endpoint, wall_offset_ms: Mapping[int, int] | None = None
    ) -> None:
        """``wall_offset_ms`` (by node id, read at every step) puts the node's wall clock that far from
        virtual time (its monotonic clock)."""
        self.broker = broker
        self.endpoint = endpoint
        self._wall_offsets = wall_offset_ms if wall_offset_ms is not None else {}
        assert broker.quorum is not None, "simulated brokers are KRaft nodes"
        self.raft = broker.quorum.raft
        self._committed = CommittedRecords()
        self.raft.register(self._committed)

    @property
    def committed(self) -> list[tuple[int, bytes]]:
        """Every metadata record this incarnation was handed as committed (the quorum invariants
        compare them across nodes)."""
        return self._committed.records

    def exit_messages(self) -> list[Envelope]:
        return self.endpoint.exit_messages()

    def is_open(self, segment: Segment) -> bool:
        return self.endpoint.is_open(segment)

    def step(self, message: Envelope | None, now_ms: int) -> RaftStep:
        """Feed the broker what ``message`` means (or its timer), with any timed-out request, and
        carry out every effect of every call, as the asyncio shell does. ``now_ms`` (virtual time) is
        the broker's monotonic clock, its wall clock that plus the node's offset."""
        wall_ms = now_ms + self._wall_offsets.get(self.broker.node_id, 0)
        outbound: list[Envelope] = []
        pending: list[Event] = []
        if message is not None:
            pending, replies = self.endpoint.receive(message, now_ms)
            outbound += replies
        wakeup: int | None = None
        while True:
            expired, resets = self.endpoint.expire(now_ms)
            pending += expired
            outbound += resets
            if not pending:
                break
            step = self.broker.step(pending.pop(0), wall_ms, now_ms)
            outbound += self.endpoint.apply(step.effects, now_ms)
            wakeup = step.next_wakeup_ms
        if message is None or wakeup is None:
            step = self.broker.tick(wall_ms, now_ms)
            outbound += self.endpoint.apply(step.effects, now_ms)
            wakeup = step.next_wakeup_ms
        deadlines = [d for d in (wakeup, self.endpoint.next_deadline_ms()) if d is not None]
        return RaftStep(tuple(outbound), min(deadlines) if deadlines else None)


def broker_config(node_id: int, voters: Sequence[int], configs: Sequence[str]) -> BrokerConfig:
    voter_list = ",".join(f"{v}@node-{v}:{CONTROLLER_PORT}" for v in voters)
    return BrokerConfig.parse(
        node_id, [*SIM_BROKER_CONFIGS, f"controller.quorum.voters={voter_list}", *configs]
    )


@dataclass
class BrokerCluster:
    """The simulation, and each broker's disk (what a script crashes, restarts and inspects)."""

    sim: Simulation
    disks: dict[int, BrokerDisk]
    wall_offset_ms: dict[int, int] = field(default_factory=dict)
    """Node id -> how far its wall clock is from virtual time (its monotonic clock)."""

    def step_wall_clock(self, delta_ms: int, nodes: Sequence[int] | None = None) -> None:
        """Step the wall clock of ``nodes`` (default: every broker) by ``delta_ms``, forward or back,
        leaving their monotonic clocks alone (libfaketime's ``DONT_FAKE_MONOTONIC``, NTP's step);
        each running node is woken to see it."""
        for node_id in self.disks if nodes is None else nodes:
            self.wall_offset_ms[node_id] = self.wall_offset_ms.get(node_id, 0) + delta_ms
            if self.sim.is_up(node_id):
                self.sim.wake(node_id)


def build_broker_simulation(
    seed: int,
    brokers: int = 3,
    *,
    voters: int | None = None,
    configs: Sequence[str] = (),
    faults: LinkFaults | None = None,
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
    trace: bool = True,
    check_invariants: bool = True,
    scanning_claims: bool = False,
    start_ms: int = 1_700_000_000_000,
) -> BrokerCluster:
    """Brokers 1..``brokers``, the first ``voters`` (default up to 3) also quorum voters.

    Virtual time starts at a plausible wall-clock instant, since record timestamps and
    time-based retention compare against it. ``scanning_claims`` adds the partition claims that
    rescan whole logs after every event (:func:`.invariants.replica_claims`).
    """
    count = min(brokers, 3) if voters is None else voters
    voter_ids = tuple(range(1, count + 1))
    disks = {n: BrokerDisk() for n in range(1, brokers + 1)}
    sim = Simulation(seed, faults=faults, trace=trace, start_ms=start_ms)
    sim.refuse = refused
    sim.describe = describe_segment
    sim.retransmission = TcpRetransmission()
    if check_invariants:
        sim.invariants.extend(broker_invariants(scanning=scanning_claims))
    extra = tuple(configs)
    offsets: dict[int, int] = {}

    def build(node_id: int, rng: random.Random, now_ms: int) -> BrokerSimNode:
        disk = disks[node_id]
        disk.starts += 1
        ports = QuorumPorts(
            {v: (f"node-{v}", CONTROLLER_PORT) for v in voter_ids}, disk.quorum_store, disk.snapshots
        )
        broker = Broker(
            config=broker_config(node_id, voter_ids, extra),
            store=disk.store,
            advertised_host=f"node-{node_id}",
            advertised_port=PORT,
            cluster_id=CLUSTER_ID,
            now_ms=now_ms + offsets.get(node_id, 0),
            mono_ms=now_ms,
            rng=rng,
            quorum=ports,
        )
        return BrokerSimNode(broker, Endpoint(node_id, disk.starts, request_timeout_ms, LISTENERS), offsets)

    for node_id in disks:
        sim.add_node(node_id, build, disks[node_id])
    return BrokerCluster(sim, disks, offsets)
