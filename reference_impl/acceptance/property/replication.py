"""Three replicas of one partition under a controller, faults and a virtual clock: the model the
property suite drives, checked after every step against the simulator's partition claims.

The replicas are the reference broker's own :class:`Partition` state machines
on in-memory logs (a crash loses what was not flushed); the controller is the
KRaft controller's election rule for one partition (first live ISR member;
a crashed broker leaves the ISR; an unclean election only when allowed);
messages between leader and followers are single fetch round trips that a
rule may drop; a network partition cuts one node off, an isolated leader going on as a zombie of
its old epoch until the partition heals. The election is the controller's own rule
(:func:`reference_impl.core.controller.elections.elect_leader`), steered by the rule's choice of
successor; an ISR change is accepted by the controller's own AlterPartition checks, and each
replica takes its role from the controller's decision as a broker does from its metadata image
(:meth:`Partition.take_role`).

The invariants are not here: the model presents itself as a
:class:`~reference_impl.sim.broker.replicas.ReplicaView` and :meth:`ReplicationModel.check` runs
every claim of :mod:`reference_impl.sim.broker.invariants` over it, the same claims the simulator
checks on whole brokers after every event. A failing claim raises :class:`InvariantViolation`
naming itself, so the mutation check can say which claim caught which bug.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from reference_impl.core.controller.elections import accepted_isr, elect_leader, unclean_configured
from reference_impl.core.metadata.image import PartitionInfo
from reference_impl.core.mutants import MUTANT_CONFIG
from reference_impl.core.partition import Partition
from reference_impl.log.api import Chunk
from reference_impl.log.memory import MemoryLog
from reference_impl.protocol.errors import KafkaError
from reference_impl.protocol.record_set import build_batch
from reference_impl.sim.broker.invariants import (
    ReplicaClaim,
    isr_join_problem,
    record_values,
    replica_claims,
    stale_epoch_problem,
)
from reference_impl.sim.broker.replicas import PartitionKey, Registration, Replica, Values

NODES = (1, 2, 3)
TOPIC_ID = uuid.UUID(int=42)
LAG_MS = 1_000
PRODUCER_ID = 1000


class InvariantViolation(AssertionError):
    def __init__(self, invariant: str, detail: str, trace: list[str]) -> None:
        timeline = "\n".join(f"  {i:3d}. {line}" for i, line in enumerate(trace, 1))
        super().__init__(f"{invariant}: {detail}\ntimeline:\n{timeline}")
        self.invariant = invariant


def _bytes(chunk: Chunk) -> bytes:
    assert isinstance(chunk, bytes)
    return chunk


@dataclass
class Controller:
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    isr: tuple[int, ...] = NODES
    unclean: bool = False


@dataclass
class Pending:
    """An acks=all produce waiting for the high watermark, in the epoch it was appended."""

    leader_epoch: int
    last_offset: int
    values: dict[int, bytes]


@dataclass
class ReplicationModel:
    mutant: str | None = None
    now_ms: int = 0
    logs: dict[int, MemoryLog] = field(default_factory=lambda: {n: MemoryLog() for n in NODES})
    partitions: dict[int, Partition] = field(default_factory=dict)
    alive: set[int] = field(default_factory=lambda: set(NODES))
    isolated: set[int] = field(default_factory=set)
    """Live nodes cut off from the controller and the other replicas (a network partition): they keep
    their state, and an isolated leader keeps believing it leads (a zombie) until the partition heals."""
    controller: Controller = field(default_factory=lambda: Controller(leader=1))
    pending: list[Pending] = field(default_factory=list)
    acked: dict[int, bytes] = field(default_factory=dict)
    read: dict[int, bytes | None] = field(default_factory=dict)
    leader_hw: dict[int, int] = field(default_factory=dict)
    trace: list[str] = field(default_factory=list)
    on_violation: Callable[[], None] | None = None
    windows: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("isr-before-epoch-start", "diverged-inside-an-epoch", "diverging"), 0
        )
    )
    """How often the run reached the states where known bugs bite (the search aims for more)."""
    durability_lost: bool = False
    """A power loss took unflushed records: Kafka promises nothing about acknowledged data after that."""
    counter: int = 0
    next_sequence: int = 0
    last_idempotent: bytes | None = None
    starts: dict[int, int] = field(default_factory=lambda: dict.fromkeys(NODES, 0))
    """How often each node's replica was opened (its incarnation, for claims that remember)."""
    claims: list[ReplicaClaim] = field(default_factory=replica_claims)
    """Every partition claim of the simulator, the log-scanning ones included."""

    def __post_init__(self) -> None:
        for node in NODES:
            self.partitions[node] = self._open(node)
        self._publish()

    # -- plumbing ------------------------------------------------------------------------------

    @property
    def topic_configs(self) -> dict[str, str]:
        configs = {"min.insync.replicas": "1"}
        if self.mutant:
            configs[MUTANT_CONFIG] = self.mutant
        return configs

    def _open(self, node: int) -> Partition:
        self.starts[node] += 1
        return Partition("t", 0, TOPIC_ID, self.logs[node], self.topic_configs, node, _bytes)

    @property
    def reachable(self) -> set[int]:
        """Live nodes the controller and the other replicas can talk to."""
        return self.alive - self.isolated

    def violation(self, invariant: str, detail: str) -> InvariantViolation:
        if self.on_violation is not None:
            self.on_violation()
        return InvariantViolation(invariant, detail, self.trace)

    @property
    def leader(self) -> Partition | None:
        node = self.controller.leader
        return self.partitions[node] if node in self.reachable else None

    def _publish(self) -> None:
        """Every reachable replica learns the controller's decision (leader, epochs, ISR) and takes
        its role as a broker does when the decision reaches its metadata image."""
        c = self.controller
        for node in sorted(self.reachable):
            part = self.partitions[node]
            part.take_role(c.leader, c.leader_epoch, c.partition_epoch, NODES, c.isr, self.now_ms)

    def _elect(self, choice: int) -> None:
        """The controller's election rule, with ``choice`` first in the preference order (the rule
        picks the successor, e.g. the most lagging ISR member), unclean when the topic's configs say
        so (the unclean-election bug mode does)."""
        c = self.controller
        order = (choice, *(n for n in NODES if n != choice))
        unclean = c.unclean or unclean_configured(self.topic_configs, {}, default=False)
        new, isr = elect_leader(order, c.isr, self.reachable, unclean)
        if new < 0:
            c.leader = -1
            self.trace.append(f"no live ISR member: partition offline (ISR {list(c.isr)})")
            return
        c.leader = new
        c.leader_epoch += 1
        c.partition_epoch += 1
        c.isr = isr
        self.trace.append(f"controller elects {new} leader of epoch {c.leader_epoch}, ISR {list(c.isr)}")
        self._publish()

    def _settle_acks(self) -> None:
        leader = self.leader
        still = []
        for p in self.pending:
            if p.leader_epoch != self.controller.leader_epoch or leader is None:
                continue  # the producer got an error: not acknowledged
            if leader.committed(p.last_offset):
                self.acked.update(p.values)
                self.trace.append(f"acks=all acknowledged offsets {sorted(p.values)}")
            else:
                still.append(p)
        self.pending = still

    # -- steps ---------------------------------------------------------------------------------

    def produce(self, count: int, acks: int) -> None:
        leader = self.leader
        if leader is None:
            return
        values = [b"v%d" % (self.counter + i) for i in range(count)]
        self.counter += count
        batch = build_batch([(None, v) for v in values], base_timestamp=self.now_ms)
        try:
            outcome = leader.append_as_leader(batch, acks, self.now_ms)
        except KafkaError as exc:
            self.trace.append(f"produce {count} (acks={acks}) refused: {exc.code.name}")
            return
        offsets = range(outcome.first_offset, outcome.last_offset + 1)
        self.trace.append(
            f"produce {count} (acks={acks}) to leader {leader.local_id} at offsets "
            f"{outcome.first_offset}-{outcome.last_offset}"
        )
        if acks == -1:
            self.pending.append(
                Pending(
                    self.controller.leader_epoch, outcome.last_offset, dict(zip(offsets, values, strict=True))
                )
            )
        self._settle_acks()

    def produce_idempotent(self, retry: bool) -> None:
        """An idempotent producer's batch, or a retry of its previous one (as after a lost response)."""
        leader = self.leader
        if leader is None:
            return
        if retry and self.last_idempotent is not None:
            batch = self.last_idempotent
        else:
            batch = build_batch(
                [(None, b"idem%d" % self.next_sequence)],
                base_timestamp=self.now_ms,
                producer_id=PRODUCER_ID,
                producer_epoch=0,
                base_sequence=self.next_sequence,
            )
            self.next_sequence += 1
            self.last_idempotent = batch
        try:
            outcome = leader.append_as_leader(batch, -1, self.now_ms)
            self.trace.append(
                f"idempotent {'retry' if retry else 'send'} -> offset {outcome.first_offset}"
                f"{' (duplicate)' if outcome.duplicate else ''}"
            )
        except KafkaError as exc:
            self.trace.append(f"idempotent {'retry' if retry else 'send'} refused: {exc.code.name}")

    def fetch(self, follower: int, drop_response: bool) -> None:
        leader = self.leader
        part = self.partitions[follower]
        if leader is None or follower not in self.reachable or follower == self.controller.leader:
            return
        offset, epoch = part.follower_fetch_position()
        if (
            follower not in self.controller.isr
            and leader.high_watermark <= offset < leader.epoch_start_offset
        ):
            self.windows["isr-before-epoch-start"] += 1  # the fetch KIP-320's ISR rule exists for
        try:
            info = leader.read_for_follower(follower, offset, epoch, part.leader_epoch, 1 << 20, self.now_ms)
        except KafkaError as exc:
            self.trace.append(f"{follower} fetches at {offset}: {exc.code.name}")
            return
        data = b"".join(_bytes(c) for c in info.records.chunks)
        if drop_response:
            self.trace.append(f"{follower} fetches at {offset} (epoch {epoch}); the answer is lost")
        else:
            part.apply_from_leader(data, info.high_watermark, info.log_start_offset, info.diverging_epoch)
            if info.diverging_epoch is not None:
                local_epoch, local_end = part.log.end_offset_for_epoch(info.diverging_epoch[0])
                if local_epoch == info.diverging_epoch[0] and local_end < info.diverging_epoch[1]:
                    self.windows["diverged-inside-an-epoch"] += 1  # where KIP-279's bound matters
                self.windows["diverging"] += 1
            what = (
                f"diverging {info.diverging_epoch}" if info.diverging_epoch else f"{info.records.size} bytes"
            )
            self.trace.append(
                f"{follower} fetches at {offset} (epoch {epoch}): {what}, HW {info.high_watermark}"
            )
        self._maybe_alter_isr(follower)
        self._settle_acks()

    def stale_fetch(self, follower: int) -> None:
        """A fetch carrying an epoch older than the leader's must be fenced (KIP-320)."""
        leader = self.leader
        if leader is None or follower not in self.reachable:
            return
        problem = stale_epoch_problem(leader, follower, self.now_ms)
        if problem is not None:
            raise self.violation("StaleEpochFenced", problem)

    def tick(self, ms: int) -> None:
        self.now_ms += ms
        self._maybe_alter_isr(None)

    def _maybe_alter_isr(self, fetched_by: int | None) -> None:
        """The leader proposes an ISR change (after each follower fetch and on its timer, as Kafka's
        ReplicaManager does); the controller accepts it when its epochs are current (AlterPartition,
        :func:`~reference_impl.core.controller.elections.accepted_isr`)."""
        leader = self.leader
        if leader is None:
            return
        proposal = leader.propose_isr_change(self.now_ms, LAG_MS, fetched_by)
        if proposal is None:
            return
        c = self.controller
        registration = PartitionInfo(0, NODES, c.isr, c.leader, c.leader_epoch, c.partition_epoch)
        eligible = [n for n in proposal.new_isr if n in self.reachable or n == c.leader]
        try:  # the controller's own AlterPartition checks
            isr = accepted_isr(
                registration, leader.local_id, proposal.leader_epoch, proposal.partition_epoch, eligible
            )
        except KafkaError:
            leader.isr_change_failed()
            return
        problem = isr_join_problem(leader, set(proposal.new_isr) - set(c.isr))
        if problem is not None:
            raise self.violation("IsrJoinAfterEpochStart", problem)
        c.isr = isr
        c.partition_epoch += 1
        self.trace.append(f"t={self.now_ms}: ISR becomes {list(c.isr)}")
        self._publish()
        self._settle_acks()

    def crash(self, node: int, choice: int, power_loss: bool = False) -> None:
        """A process crash (kill -9: the OS keeps what was written) or, with ``power_loss``, a machine
        crash that loses the unflushed suffix. Kafka leaves flushing to the OS, so a power loss that
        takes unflushed records voids the durability claims; the model records that it happened."""
        if node not in self.alive or len(self.alive) == 1:
            return
        self.alive.discard(node)
        self.isolated.discard(node)
        if power_loss:
            log = self.logs[node]
            if log.recovery_point < log.log_end_offset:
                self.durability_lost = True
            log.crash()
            self.trace.append(f"{node} loses power (unflushed data lost; log ends at {log.log_end_offset})")
        else:
            self.trace.append(f"{node} crashes (its log, written to the OS, survives)")
        self._controller_loses(node, choice)

    def _controller_loses(self, node: int, choice: int) -> None:
        """The controller no longer hears from ``node`` (crashed or cut off): it leaves the ISR
        (unless it is the last member), a new leader is elected if it led, and the acks wait again."""
        c = self.controller
        if node in c.isr and len(c.isr) > 1:
            c.isr = tuple(n for n in c.isr if n != node)
            c.partition_epoch += 1
        if node == c.leader:
            self._elect(choice)
        else:
            self._publish()
        self._settle_acks()

    def restart(self, node: int) -> None:
        if node in self.alive:
            return
        self.alive.add(node)
        self.partitions[node] = self._open(node)
        self.trace.append(f"{node} restarts with log end {self.logs[node].log_end_offset}")
        if self.controller.leader == -1:
            self._elect(node)
        else:
            self._publish()

    def isolate(self, node: int, choice: int) -> None:
        """A network partition cuts ``node`` off from the controller and its peers. The controller
        treats it as gone (out of the ISR, a new leader elected if it led); the node itself hears
        nothing, so an isolated leader goes on as a zombie of its old epoch (seed 002, KIP-101's
        fencing by epoch)."""
        if node not in self.reachable or len(self.reachable) < 3:
            return
        self.isolated.add(node)
        self.trace.append(f"network partition isolates {node}")
        self._controller_loses(node, choice)

    def zombie_produce(self, count: int) -> None:
        """A client on the isolated side writes to a node that still believes it leads (acks=1: the
        write is acknowledged locally; Kafka promises nothing for it, and acks=all cannot complete)."""
        zombies = [n for n in sorted(self.isolated) if self.partitions[n].is_leader]
        if not zombies:
            return
        part = self.partitions[zombies[0]]
        values = [b"z%d" % (self.counter + i) for i in range(count)]
        self.counter += count
        batch = build_batch([(None, v) for v in values], base_timestamp=self.now_ms)
        try:
            outcome = part.append_as_leader(batch, 1, self.now_ms)
        except KafkaError as exc:
            self.trace.append(f"zombie {part.local_id} refuses produce: {exc.code.name}")
            return
        self.trace.append(
            f"zombie leader {part.local_id} (epoch {part.leader_epoch}) appends {count} (acks=1) at "
            f"{outcome.first_offset}-{outcome.last_offset}"
        )

    def heal(self, node: int) -> None:
        """The partition heals: the node learns the controller's current decision."""
        if node not in self.isolated:
            return
        self.isolated.discard(node)
        self.trace.append(f"partition heals: {node} reachable again")
        if self.controller.leader == -1:
            self._elect(node)
        else:
            self._publish()

    def lagging_isr_member(self) -> int:
        """The live ISR follower with the shortest log (the adversarial pick for an election)."""
        c = self.controller
        members = [n for n in c.isr if n in self.reachable and n != c.leader]
        if not members:
            return c.leader
        return min(members, key=lambda n: self.logs[n].log_end_offset)

    def write_then_fail(self, successor: int) -> None:
        """The leader appends records no follower fetches, then crashes: a divergent suffix (KIP-101/279)."""
        leader = self.leader
        if leader is None:
            return
        self.produce(2, 1)
        self.crash(leader.local_id, successor)

    def replicate_partially_then_fail(self, follower: int, successor: int) -> None:
        """Records reach one follower, then the leader crashes: the new leader's log may end past its HW,
        so its epoch starts above the HW (the window KIP-320's ISR rule guards)."""
        leader = self.leader
        if leader is None or follower == leader.local_id:
            return
        self.produce(1, 1)
        self.fetch(follower, False)
        self.crash(leader.local_id, successor)

    def fast_failover(self) -> None:
        """KIP-279's fast failover: the follower that is behind is elected, writes in its new epoch and
        fails at once, and the follower that was ahead takes over; both old leaders come back and catch
        up with the new leader."""
        leader = self.leader
        if leader is None:
            return
        c = self.controller
        followers = sorted(
            (n for n in c.isr if n in self.reachable and n != c.leader),
            key=lambda n: self.logs[n].log_end_offset,
        )
        if len(followers) < 2:
            self.write_then_fail(-1)
        else:
            lagging, ahead = followers[0], followers[-1]
            self.produce(1, 1)
            self.fetch(ahead, False)
            self.crash(leader.local_id, lagging)
            self.produce(1, 1)
            self.crash(lagging, ahead)
        for node in NODES:
            if node not in self.alive:
                self.restart(node)
        for _round in range(3):  # the survivors catch up: any divergence left shows up below the HW
            for node in sorted(self.reachable):
                self.fetch(node, False)
            self.produce(1, -1)

    def restart_during_failover(self) -> None:
        """A rolling restart meets a leadership move: one follower restarts and is catching up (out of
        the ISR) when leadership moves (preferred election, controlled shutdown) to the other, whose log
        ends past its HW while the old leader stays in the ISR; the restarted follower then fetches from
        the new leader below the new epoch's start (KIP-320's ISR rule)."""
        leader = self.leader
        followers = [n for n in sorted(self.reachable) if n != self.controller.leader]
        if leader is None or len(followers) < 2:
            return
        steady, restarting = followers
        self.crash(restarting, -1)
        self.produce(2, 1)
        self.fetch(steady, False)
        self.fetch(steady, False)
        self.restart(restarting)
        self.fetch(restarting, False)
        self.produce(1, 1)
        self.fetch(steady, False)
        self.move_leadership(steady)
        self.fetch(restarting, False)

    def follower_falls_behind(self, follower: int) -> None:
        """A follower restarts and is out of the ISR until it catches up again."""
        self.crash(follower, -1)
        self.restart(follower)

    def replicate_then_republish(self) -> None:
        """acks=all records reach every follower but not yet their high watermarks, then the partition
        epoch changes (a follower leaves the ISR): followers re-learn their role with HW < LEO."""
        self.produce(1, -1)
        for _round in range(2):
            for node in sorted(self.reachable):
                self.fetch(node, False)
        followers = [n for n in sorted(self.reachable) if n != self.controller.leader]
        if len(followers) > 1:
            self.crash(followers[-1], -1)

    def flush(self, node: int) -> None:
        if node in self.alive:
            self.logs[node].flush()

    def move_leadership(self, choice: int) -> None:
        """A clean leader change (preferred election, controlled shutdown): to another ISR member."""
        c = self.controller
        if choice != c.leader and choice in c.isr and choice in self.reachable:
            self._elect(choice)

    def consume(self) -> None:
        leader = self.leader
        if leader is None:
            return
        entries = record_values(leader.log)
        for offset in range(leader.log.log_start_offset, leader.high_watermark):
            if offset in entries:
                self.read.setdefault(offset, entries[offset])

    # -- the claims: the simulator's, over this model as a ReplicaView ------------------------

    def check(self) -> None:
        for claim in self.claims:
            problem = claim.check_view(self)
            if problem is not None:
                raise self.violation(claim.name, problem)

    @property
    def key(self) -> PartitionKey:
        return (TOPIC_ID, 0)

    def replicas(self) -> list[Replica]:
        """Every running replica, an isolated one (perhaps a zombie leader) included."""
        return [Replica(n, self.starts[n], self.partitions[n]) for n in sorted(self.alive)]

    def leaders(self) -> list[Replica]:
        """The controller's leader, if it runs and is reachable."""
        leader = self.leader
        return [] if leader is None else [Replica(leader.local_id, self.starts[leader.local_id], leader)]

    def registrations(self) -> list[Registration]:
        c = self.controller
        return [Registration("the controller", "t", 0, c.leader, c.isr, NODES)]

    def acknowledged(self) -> Mapping[PartitionKey, Values]:
        return {self.key: self.acked}

    def consumed(self) -> Mapping[PartitionKey, Values]:
        return {self.key: self.read}

    @property
    def unclean_elections(self) -> bool:
        return self.controller.unclean
