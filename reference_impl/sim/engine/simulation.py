"""N nodes, one virtual clock, one seeded network: the deterministic simulation loop.

A node is anything with ``step(message_or_none, now_ms)`` returning its
outbound :class:`Envelope` values and the time it wants to be woken at
(:class:`SimNode`): Raft voters today, partition replicas later. The loop
pops the next event (a delivery, a wakeup, a scripted action), steps the one
node it concerns, routes what that node sent through the :class:`Network`,
and then checks every invariant. A crash throws the node object away and
tells its :class:`Disk` to lose what was not flushed; a restart builds a new
node from that disk, as a process restarting on its data directory would.

Every random choice comes from generators derived from the seed (network
fates, each node incarnation's own ``random.Random``), events at the same
millisecond run in scheduling order, and nothing reads the wall clock: the
same seed yields the same :attr:`Simulation.trace`, line for line.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

from reference_impl.core.raft.messages import Envelope, describe

from .network import LinkFaults, Network
from .scheduler import Action, Deliver, Resend, Scheduler, Wake


class NodeStep(Protocol):
    @property
    def outbound(self) -> tuple[Envelope, ...]: ...

    @property
    def next_deadline_ms(self) -> int | None: ...


class SimNode(Protocol):
    def step(self, message: Envelope | None, now_ms: int) -> NodeStep: ...


class Disk(Protocol):
    def crash(self) -> None:
        """Lose everything not flushed (the node is down)."""
        ...


NodeFactory = Callable[[int, random.Random, int], SimNode]
"""Build a node (``node_id``, its seeded random, ``now_ms``) from what its disk holds."""


class InvariantViolation(AssertionError):
    """An invariant failed; the message names it, the seed and the virtual time."""


class Retransmission(Protocol):
    """A reliable transport's promise over the lossy network: what is lost is sent again.

    Without one (the Raft simulations), a lost message is gone, as Kafka raft's tests assume.
    """

    def rto_ms(self, attempt: int) -> int | None:
        """How long the sender waits before sending a lost message again (None: give up)."""
        ...

    def still_sending(self, sim: Simulation, envelope: Envelope) -> bool:
        """Whether the sender would still send it (its process and connection are alive)."""
        ...


class Invariant(Protocol):
    name: str

    def check(self, sim: Simulation) -> str | None:
        """None if the claim holds now, else what is wrong."""
        ...


class Simulation:
    def __init__(
        self,
        seed: int,
        *,
        faults: LinkFaults | None = None,
        start_ms: int = 0,
        trace: bool = True,
        trace_limit: int = 200_000,
    ) -> None:
        self.seed = seed
        self.scheduler = Scheduler(start_ms)
        self.start_ms = start_ms
        """The trace prints virtual time relative to this instant."""
        self.network = Network(random.Random(f"{seed}/network"), faults)
        self.nodes: dict[int, SimNode] = {}
        self.disks: dict[int, Disk] = {}
        self.factories: dict[int, NodeFactory] = {}
        self.incarnations: dict[int, int] = {}
        self._wake_generation: dict[int, int] = {}
        self._wake_at: dict[int, int | None] = {}
        self.invariants: list[Invariant] = []
        self.tracing = trace
        self.trace_limit = trace_limit
        self.trace: list[str] = []
        self.outside: dict[int, list[Envelope]] = {}
        """Messages addressed to ids that are not simulated nodes (a test acting as a client)."""
        self.refuse: Callable[[Envelope], Envelope | None] | None = None
        """What a down node's host answers a message with (a TCP reset), sent back over the network."""
        self.describe: Callable[[Any], str] = describe
        """How a message body reads in the trace."""
        self.retransmission: Retransmission | None = None
        """Set for nodes connected by a reliable transport: lost messages are sent again."""
        self.steps = 0
        self.events = 0

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    def log(self, line: str) -> None:
        if self.tracing and len(self.trace) < self.trace_limit:
            self.trace.append(f"{self.now_ms - self.start_ms:>8} {line}")

    # -- nodes ---------------------------------------------------------------------------------

    def add_node(self, node_id: int, factory: NodeFactory, disk: Disk) -> None:
        self.factories[node_id] = factory
        self.disks[node_id] = disk
        self.incarnations[node_id] = 0
        self.start(node_id)

    def is_up(self, node_id: int) -> bool:
        return node_id in self.nodes

    def start(self, node_id: int) -> None:
        if node_id in self.nodes:
            raise ValueError(f"node {node_id} is already running")
        self.incarnations[node_id] += 1
        rng = random.Random(f"{self.seed}/{node_id}/{self.incarnations[node_id]}")
        self.nodes[node_id] = self.factories[node_id](node_id, rng, self.now_ms)
        self._wake_at[node_id] = None
        self.log(f"start {node_id} (incarnation {self.incarnations[node_id]})")
        self._step_node(node_id, None)

    def crash(self, node_id: int) -> None:
        """Stop the node at once; its disk loses the unflushed suffix.

        A node may say what its host sends when the process dies (``exit_messages()``: the
        kernel closing its connections); a disk whose ``power_loss`` is set is a machine
        losing power, which sends nothing."""
        node = self.nodes.pop(node_id, None)
        if node is None:
            return
        self._wake_generation[node_id] = self._wake_generation.get(node_id, 0) + 1
        self._wake_at[node_id] = None
        disk = self.disks[node_id]
        exit_messages = getattr(node, "exit_messages", None)
        if exit_messages is not None and not getattr(disk, "power_loss", False):
            for envelope in exit_messages():
                self._route(envelope)
        disk.crash()
        self.log(f"crash {node_id}")
        self.check_invariants()

    def restart(self, node_id: int) -> None:
        self.start(node_id)

    def node(self, node_id: int) -> Any:
        return self.nodes[node_id]

    def wake(self, node_id: int) -> None:
        """Step the node now, as its own timer would (a script changed something it should act on)."""
        generation = self._wake_generation.get(node_id, 0) + 1
        self._wake_generation[node_id] = generation
        self._wake_at[node_id] = self.now_ms
        self.scheduler.schedule(self.now_ms, Wake(node_id, generation))

    # -- scripted actions and outside messages -------------------------------------------------

    def at(self, time_ms: int, name: str, run: Callable[[], None]) -> None:
        self.scheduler.schedule(time_ms, Action(name, run))

    def send(self, envelope: Envelope) -> None:
        """Put a message on the network (from a test acting as a client)."""
        self._route(envelope)

    def partition(self, *groups: set[int]) -> None:
        self.network.partition(groups)
        self.log(f"partition {' | '.join(str(sorted(g)) for g in groups)}")
        self.check_invariants()

    def block(self, source: int, *destinations: int) -> None:
        """Cut the links from ``source`` to each destination, one way only (the replies still flow)."""
        for destination in destinations:
            self.network.block(source, destination)
        self.log(f"block {source}->{sorted(destinations)}")
        self.check_invariants()

    def heal(self) -> None:
        self.network.heal()
        self.log("heal")
        self.check_invariants()

    # -- the loop ------------------------------------------------------------------------------

    def run_one(self) -> bool:
        """Run the next event; False when the queue is empty."""
        event = self.scheduler.pop()
        if event is None:
            return False
        self.events += 1
        match event:
            case Deliver(envelope=envelope, attempt=attempt):
                self._deliver(envelope, attempt)
            case Wake(node_id=node_id, generation=generation):
                if generation == self._wake_generation.get(node_id) and node_id in self.nodes:
                    self._wake_at[node_id] = None
                    self._step_node(node_id, None)
            case Action(name=name, run=run):
                self.log(f"action {name}")
                run()
                self.check_invariants()
            case Resend(envelope=envelope, attempt=attempt):
                if self.retransmission is not None and self.retransmission.still_sending(self, envelope):
                    self._route(envelope, attempt)
        return True

    def run_until(self, time_ms: int, max_events: int = 5_000_000) -> None:
        """Run every event up to virtual ``time_ms`` (bounded by ``max_events``)."""
        for _ in range(max_events):
            next_time = self.scheduler.peek_time_ms()
            if next_time is None or next_time > time_ms:
                break
            self.run_one()
        else:
            raise RuntimeError(
                f"seed {self.seed}: more than {max_events} events before {time_ms - self.start_ms} ms "
                f"(a node that never stops waking itself up, or a message storm)"
            )
        self.scheduler.now_ms = max(self.scheduler.now_ms, time_ms)

    def run_until_true(
        self, condition: Callable[[], bool], timeout_ms: int, max_events: int = 5_000_000
    ) -> bool:
        """Run until ``condition()`` holds (True) or ``timeout_ms`` of virtual time pass (False)."""
        deadline = self.now_ms + timeout_ms
        for _ in range(max_events):
            if condition():
                return True
            next_time = self.scheduler.peek_time_ms()
            if next_time is None or next_time > deadline:
                self.scheduler.now_ms = max(self.scheduler.now_ms, deadline)
                return condition()
            self.run_one()
        raise RuntimeError(
            f"seed {self.seed}: more than {max_events} events by {self.now_ms - self.start_ms} ms "
            f"(a node that never stops waking itself up, or a message storm)"
        )

    def check_invariants(self) -> None:
        for invariant in self.invariants:
            problem = invariant.check(self)
            if problem is not None:
                self.log(f"VIOLATION {invariant.name}: {problem}")
                recent = (
                    "\n".join(self.trace[-25:]) if self.tracing else "(run with trace=True to see events)"
                )
                raise InvariantViolation(
                    f"{invariant.name} violated at {self.now_ms - self.start_ms} ms (seed {self.seed}): "
                    f"{problem}\n"
                    f"last events:\n{recent}"
                )

    # -- internals -----------------------------------------------------------------------------

    def _deliver(self, envelope: Envelope, attempt: int = 0) -> None:
        source, destination = envelope.source_id, envelope.destination_id
        if self.network.is_blocked(source, destination):
            self.log(f"lost {source}->{destination} (partitioned) {self.describe(envelope.body)}")
            self._lost(envelope, attempt)
            return
        if destination not in self.nodes:
            if destination in self.factories:
                self.log(f"lost {source}->{destination} (down) {self.describe(envelope.body)}")
                answer = self.refuse(envelope) if self.refuse is not None else None
                if answer is not None:
                    self._route(answer)
            else:
                self.outside.setdefault(destination, []).append(envelope)
            return
        if self.tracing:
            self.log(f"{source}->{destination} {self.describe(envelope.body)}")
        self._step_node(destination, envelope)

    def _step_node(self, node_id: int, message: Envelope | None) -> None:
        result = self.nodes[node_id].step(message, self.now_ms)
        self.steps += 1
        for envelope in result.outbound:
            self._route(envelope)
        deadline = result.next_deadline_ms
        if deadline is not None:
            scheduled = self._wake_at.get(node_id)
            if scheduled is None or deadline < scheduled or scheduled < self.now_ms:
                generation = self._wake_generation.get(node_id, 0) + 1
                self._wake_generation[node_id] = generation
                self._wake_at[node_id] = max(deadline, self.now_ms)
                self.scheduler.schedule(deadline, Wake(node_id, generation))
        self.check_invariants()

    def _route(self, envelope: Envelope, attempt: int = 0) -> None:
        delays = self.network.deliveries(envelope.source_id, envelope.destination_id)
        if not delays:
            if self.tracing:
                self.log(
                    f"dropped {envelope.source_id}->{envelope.destination_id} {self.describe(envelope.body)}"
                )
            self._lost(envelope, attempt)
        for delay in delays:
            self.scheduler.schedule(self.now_ms + delay, Deliver(envelope, attempt))

    def _lost(self, envelope: Envelope, attempt: int) -> None:
        if self.retransmission is None:
            return
        wait = self.retransmission.rto_ms(attempt)
        if wait is not None:
            self.scheduler.schedule(self.now_ms + wait, Resend(envelope, attempt + 1))
