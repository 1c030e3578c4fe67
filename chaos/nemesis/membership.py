"""The membership nemesis: a broker joins a running cluster, takes partitions, and is decommissioned.

One ``membership`` window of the schedule is three steps, each recorded in the history as a
nemesis op (``f`` = ``membership``, ``step`` names it, with its figures):

1. ``add``: a new broker-only node (the next free id, never reused in a campaign) starts from one
   of the cluster's commands (:mod:`fixtures.targets.membership`) and registers with the
   controllers (BrokerRegistration); the step waits until Metadata lists it.
2. ``reassign-onto``: a seeded half (at least one) of the campaign's partitions, and up to two
   partitions of the internal topics (``__consumer_offsets``, ``__transaction_state``: their group
   and transaction coordinators move with the leadership), each swap one seeded replica for the new
   broker (AlterPartitionReassignments, KIP-455: the new replica
   catches up and joins the ISR before the old one leaves; the leader may be the one leaving).
   A move that has not completed by the window's end is cancelled (null target replicas).
3. ``decommission`` at the window's end: Kafka's ``remove-broker`` order
   (:func:`fixtures.wire.membership.decommission`): every replica of the new broker reassigned to
   the others, wait, stop it (SIGTERM), UnregisterBroker, wait until Metadata no longer lists it.

With ``voters`` (a cluster at kraft.version 1, KIP-853; :mod:`.voters`), the window also changes
the metadata quorum: before the broker is added a seeded voter is removed (RemoveRaftVoter), and
after the broker is listed it is added back (AddRaftVoter) once caught up as an observer
(``remove-voter``, ``add-voter``; ``voter-skip`` when the majority rule forbids the removal). A
voter not back by then is tried again at the window's end, before the decommission. Every second
such window instead starts a new controller (``controller.quorum.bootstrap.servers``), adds it once
caught up and removes and stops it at the window's end (``start-controller``, ``add-voter``,
``remove-voter``, ``stop-controller`` with ``new``).

The steps run on a worker thread per window (starting a process and waiting for a move take
seconds: the schedule's other faults go on meanwhile), one window at a time (a window planned
while another's moves are in flight would take their replica lists, targets and leaving replicas
together, for assignments); ``heal`` waits for every worker, bounded.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.history import Recorder
from fixtures.targets import Target, processes
from fixtures.targets.launch import Node
from fixtures.targets.membership import added_broker_command, added_controller_command, reference_directory_id
from fixtures.targets.processes import free_port
from fixtures.wire.membership import (
    MembershipError,
    Placement,
    decommission,
    reassign,
    reassigning,
    view,
    wait_moved,
    wait_registered,
)

from .voters import VoterKey, VoterSteps

MEMBERSHIP_FAULTS = ("membership",)
STEP_TIMEOUT_S = 60.0
"""Each wait of a step (registration, a reassignment, leaving Metadata)."""
JOIN_TIMEOUT_S = 240.0
"""How long ``heal`` waits for a window's worker (its steps' waits together, with room)."""
MAX_MOVED = 64
"""At most this many partitions move onto a new broker in one window."""
INTERNAL_MOVED = 2
"""At most this many partitions of the internal topics move onto it in one window."""
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
KRAFT_VERSION_CONFIG = "reference.kraft.version"
"""The reference's format-time kraft.version (1: dynamic voters, KIP-853); a campaign with this
nemesis starts its cluster with 1 unless its broker configs say otherwise."""


@dataclass(frozen=True)
class MembershipPlan:
    """What one window does, decided from the seed and the cluster as it is at the window's start."""

    new_broker: int
    onto: dict[tuple[str, int], tuple[int, ...]]
    """(topic, partition) -> target replicas, the new broker in one old replica's place."""

    def steps(self) -> list[str]:
        moved = ", ".join(f"{t}-{p}->{list(r)}" for (t, p), r in sorted(self.onto.items()))
        return [
            f"add broker {self.new_broker}",
            f"reassign-onto {self.new_broker}: {moved or 'nothing'}",
            f"decommission {self.new_broker}: reassign away, stop, unregister",
        ]


def plan_window(
    pick: int,
    placements: Sequence[Placement],
    topics: Sequence[str],
    new_broker: int,
    internal: Sequence[str] = (),
) -> MembershipPlan:
    """The seeded plan of one window: half of ``topics``' partitions (at least one, at most
    :data:`MAX_MOVED`) and up to :data:`INTERNAL_MOVED` partitions of the ``internal`` topics (the
    group and transaction coordinators' logs: their coordinators move with the leadership), each
    giving the replica at a seeded index to ``new_broker``. Pure."""
    rng = random.Random(pick)

    def held(names: Sequence[str]) -> list[Placement]:
        return sorted(
            (p for p in placements if p.topic in names and p.replicas and new_broker not in p.replicas),
            key=lambda p: (p.topic, p.partition),
        )

    ours, theirs = held(topics), held(internal)
    chosen = rng.sample(ours, min(MAX_MOVED, max(1, len(ours) // 2)) if ours else 0)
    chosen += rng.sample(theirs, min(INTERNAL_MOVED, len(theirs)))
    onto: dict[tuple[str, int], tuple[int, ...]] = {}
    for p in sorted(chosen, key=lambda p: (p.topic, p.partition)):
        index = rng.randrange(len(p.replicas))
        onto[(p.topic, p.partition)] = tuple(
            new_broker if i == index else r for i, r in enumerate(p.replicas)
        )
    return MembershipPlan(new_broker, onto)


@dataclass
class Membership:
    """Adds and decommissions brokers of one launched reference cluster (``target``)."""

    recorder: Recorder
    target: Target
    topics: list[str]
    workers: dict[int, threading.Thread] = field(default_factory=dict)
    ends: dict[int, threading.Event] = field(default_factory=dict)
    added: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    voters: bool = False
    """Change the metadata quorum's voters too (the cluster runs at kraft.version 1)."""
    voter_windows: int = 0
    controllers: list[Node] = field(default_factory=list)
    """Controllers this nemesis started and has not stopped yet."""
    one_at_a_time: threading.Lock = field(default_factory=threading.Lock)
    """Windows run one after another: a window planning while another's moves are in flight would
    read their replica lists (targets and leaving replicas together) as assignments."""

    def start(self, plan_id: int, pick: int) -> dict[str, Any]:
        """Begin a window: its worker adds a broker and moves partitions onto it."""
        end = threading.Event()
        worker = threading.Thread(
            target=self._window, args=(plan_id, pick, end), name=f"membership-{plan_id}", daemon=True
        )
        self.ends[plan_id] = end
        self.workers[plan_id] = worker
        worker.start()
        return {"nodes": []}

    def stop(self, plan_id: int) -> None:
        """End a window: its worker decommissions the broker it added (on its own thread)."""
        end = self.ends.get(plan_id)
        if end is not None:
            end.set()

    def heal(self) -> list[int]:
        """Every window ended and its worker waited for (bounded); the ids of workers still running."""
        for end in self.ends.values():
            end.set()
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        for worker in self.workers.values():
            worker.join(max(0.0, deadline - time.monotonic()))
        unfinished = [plan_id for plan_id, w in self.workers.items() if w.is_alive()]
        if not unfinished:
            self.stop_controllers()
        return unfinished

    # -- the steps -------------------------------------------------------------------------------

    def _addresses(self, without: int | None = None) -> list[str]:
        return [f"{n.host}:{n.port}" for n in self.target.nodes if n.node_id != without and n.is_running]

    def _record(self, plan_id: int, step: str, value: dict[str, Any]) -> None:
        self.recorder.nemesis("membership", {"fault": "membership", "id": plan_id, "step": step, **value})

    def _window(self, plan_id: int, pick: int, end: threading.Event) -> None:
        if not self.one_at_a_time.acquire(timeout=JOIN_TIMEOUT_S):
            self._record(plan_id, "error", {"error": "the previous window did not finish"})
            return
        try:
            node: Node | None = None
            removed: VoterKey | None = None
            joined: tuple[VoterKey, Node] | None = None
            steps = self._voter_steps() if self.voters else None
            record = functools.partial(self._record, plan_id)
            try:
                if steps is not None:
                    self.voter_windows += 1
                    if self.voter_windows % 2 == 1:  # odd windows: a voter out and back
                        removed = steps.remove(pick, record)
                    else:  # even windows: a new controller in and out
                        joined = self._start_controller(plan_id)
                node = self._add(plan_id)
                if steps is not None and removed is not None:
                    steps.add(removed, record)
                if steps is not None and joined is not None:
                    steps.add(joined[0], record)
                addresses = self._addresses()
                moving = reassigning(addresses)
                current = [p for p in view(addresses).placements if (p.topic, p.partition) not in moving]
                plan = plan_window(pick, current, self.topics, node.node_id, INTERNAL_TOPICS)
                self._record(plan_id, "plan", {"steps": plan.steps()})
                self._onto(plan_id, plan, end)
            except Exception as exc:  # recorded, never fatal
                self._record(plan_id, "error", {"error": f"{type(exc).__name__}: {exc}"})
            end.wait(JOIN_TIMEOUT_S)
            if steps is not None and removed is not None and not removed.in_quorum:
                try:
                    steps.add(removed, record)
                except Exception as exc:  # recorded, never fatal
                    self._record(plan_id, "error", {"error": f"{type(exc).__name__}: {exc}"})
            if steps is not None and joined is not None:
                self._leave(plan_id, steps, *joined)
            if node is not None:
                self._decommission(plan_id, node)
        finally:
            self.one_at_a_time.release()

    def _voter_steps(self) -> VoterSteps:
        def running() -> list[int]:
            return [n.node_id for n in self.target.nodes if n.is_running]

        def endpoint(node_id: int) -> tuple[str, int] | None:
            node = next((n for n in self.target.nodes if n.node_id == node_id), None)
            if node is None or node.controller_port is None:
                return None
            return (node.host, node.controller_port)

        return VoterSteps(self._addresses, running, endpoint)

    def _new_id(self) -> int:
        with self.lock:
            taken = {n.node_id for n in self.target.nodes} | set(self.added)
            new_id = max(taken) + 1
            self.added.append(new_id)
        return new_id

    def _start_controller(self, plan_id: int) -> tuple[VoterKey, Node]:
        """A new controller-only process that finds the quorum through the voters' controller
        listeners (``controller.quorum.bootstrap.servers``, KIP-853); started, not waited for (its
        catching up is :meth:`VoterSteps.add`'s wait)."""
        voters = [n for n in self.target.nodes if n.controller_port is not None]
        if not voters:
            raise RuntimeError("no voter with a controller listener to copy")
        template = voters[0]
        new_id = self._new_id()
        port = free_port()
        root = self.target.workdir or Path(template.log_path).parent
        bootstrap = [f"{n.host}:{n.controller_port}" for n in voters]
        command = added_controller_command(
            template.command, new_id, template.host, port, root / f"node-{new_id}", bootstrap
        )
        cluster_id = command[command.index("--cluster-id") + 1] if "--cluster-id" in command else ""
        node = Node(
            new_id, template.host, port, port, command, root / f"node-{new_id}.log", dict(template.env)
        )
        node.controller_port = port
        node.process = processes.start_logged(command, node.log_path, node.env)
        with self.lock:
            self.controllers.append(node)
        self._record(plan_id, "start-controller", {"nodes": [new_id], "bootstrap": bootstrap})
        joined = VoterKey(new_id, reference_directory_id(cluster_id, new_id), (template.host, port), new=True)
        return joined, node

    def _leave(self, plan_id: int, steps: VoterSteps, joined: VoterKey, node: Node) -> None:
        """The joined controller removed from the voters, then its process stopped (an observer
        that never became a voter is stopped at once)."""
        try:
            gone = steps.leave(joined, functools.partial(self._record, plan_id))
        except Exception as exc:  # recorded, never fatal
            self._record(plan_id, "error", {"error": f"{type(exc).__name__}: {exc}"})
            gone = False
        if gone:
            node.stop()
            with self.lock:
                self.controllers.remove(node)
            self._record(plan_id, "stop-controller", {"nodes": [joined.voter]})

    def stop_controllers(self) -> list[int]:
        """The campaign's end: every controller this nemesis started and still runs is stopped
        (one that could not be removed from the voters too); their ids."""
        with self.lock:
            left, self.controllers = list(self.controllers), []
        for node in left:
            node.stop()
        return [n.node_id for n in left]

    def _add(self, plan_id: int) -> Node:
        new_id = self._new_id()
        template = self.target.nodes[0]
        port = free_port()
        root = self.target.workdir or Path(template.log_path).parent
        peers = {n.node_id: f"{n.host}:{n.port}" for n in self.target.nodes}
        command = added_broker_command(
            template.command, new_id, template.host, port, root / f"node-{new_id}", peers
        )
        node = Node(
            new_id, template.host, port, port, command, root / f"node-{new_id}.log", dict(template.env)
        )
        started = time.monotonic()
        node.start()
        with self.lock:
            self.target.nodes.append(node)
        waited = wait_registered(self._addresses(), new_id, STEP_TIMEOUT_S)
        self._record(
            plan_id,
            "add",
            {
                "nodes": [new_id],
                "registered_s": round(waited, 3),
                "total_s": round(time.monotonic() - started, 3),
            },
        )
        return node

    def _onto(self, plan_id: int, plan: MembershipPlan, end: threading.Event) -> None:
        if not plan.onto:
            return
        addresses = self._addresses()
        results = reassign(addresses, plan.onto)
        accepted = {
            k: v for k, v in plan.onto.items() if results.get(k) is not None and results[k].value == 0
        }
        value: dict[str, Any] = {
            "nodes": [plan.new_broker],
            "asked": len(plan.onto),
            "accepted": len(accepted),
            "refused": {f"{t}-{p}": c.name for (t, p), c in results.items() if c.value != 0},
        }
        try:
            value["moved_s"] = round(wait_moved(addresses, accepted, STEP_TIMEOUT_S), 3)
        except MembershipError as exc:
            value["unfinished"] = str(exc)
            cancel = {k: None for k in accepted}
            value["cancelled"] = {f"{t}-{p}": c.name for (t, p), c in reassign(addresses, cancel).items()}
        self._record(plan_id, "reassign-onto", value)

    def _decommission(self, plan_id: int, node: Node) -> None:
        addresses = self._addresses(without=node.node_id)
        try:
            done = decommission(addresses, node.node_id, node.stop, STEP_TIMEOUT_S)
            self._record(plan_id, "decommission", {"nodes": [node.node_id], **done.figures()})
            with self.lock:
                self.target.nodes.remove(node)
        except Exception as exc:  # the broker stays: never stopped before its replicas moved
            self._record(
                plan_id, "decommission", {"nodes": [node.node_id], "error": f"{type(exc).__name__}: {exc}"}
            )
