"""Faults: each starts and stops, through the Toxiproxy API (links) or the target's nodes (processes).

Every start and stop is recorded in the history as a nemesis op carrying the planned entry, what
was chosen (nodes, proxies) and any error, so a history shows exactly what was done and when,
and two runs with one seed can be compared event by event.

``strand-leader`` cuts partition 0's leader from its followers only (replica fetches; it still
reaches the controllers and the clients), so it shrinks the ISR to itself and goes on taking writes
alone; halfway through the window it is killed, and at the end started again and the links healed.
With no in-sync replica alive the partition must stay offline: electing a follower outside the ISR
loses what the leader acknowledged alone (Kafka's controller elects outside the ISR only with
``unclean.leader.election.enable``: ``PartitionChangeBuilder``, apache/kafka ``metadata/src/main/
java/org/apache/kafka/controller/PartitionChangeBuilder.java``).

``partition-leader-peers`` cuts partition 0's leader from every other broker and controller but
not from clients (Jepsen's classic: an isolated leader that clients can still write to; acks=all
must not acknowledge what its followers never got).

``partition-coordinator`` isolates the group coordinator of the campaign's group (``Nemesis.group``:
the share workload's share group, the queue workload's consumer group): the node FindCoordinator
names for the group with key type 0 (GROUP). Share groups are coordinated like consumer groups:
Kafka's share consumer finds its coordinator through ``CoordinatorRequestManager``, which asks
``FindCoordinatorRequest.CoordinatorType.GROUP`` (apache/kafka ``clients/src/main/java/org/apache/
kafka/clients/consumer/internals/CoordinatorRequestManager.java``); key type 2 (SHARE) names the
share coordinator, the persister of share-partition state, not the group's. Without a group, or
when no broker answers, the seeded pick chooses the node.

A network partition is a black hole (a ``timeout`` toxic with timeout 0 on both streams): packets
vanish and clients wait, as with iptables DROP, instead of being refused at once.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests

from chaos.history import Recorder
from fixtures.targets import Target
from fixtures.wire import Capabilities, WireClient, ops
from fixtures.wire.security import with_run_security

from .clock import CLOCK_FAULTS, Clock
from .disk import DISK_FAULTS, Disk
from .log_dirs import LOG_DIR_FAULTS, FailedDir, fail_dir, prepare_dir, restore_dir
from .membership import MEMBERSHIP_FAULTS, Membership
from .packet import LOSS_PROBABILITY, PACKET_FAULTS, PacketRules
from .restart_probe import RestartProbe
from .schedule import FAULTS, Planned
from .topology import Topology

PARTITIONS = {f for f in FAULTS if f.startswith("partition-")}
LINK_TOXICS: dict[str, list[dict[str, Any]]] = {
    "latency": [
        {"type": "latency", "stream": s, "attributes": {"latency": 100, "jitter": 50}}
        for s in ("upstream", "downstream")
    ],
    "bandwidth": [
        {"type": "bandwidth", "stream": s, "attributes": {"rate": 64}} for s in ("upstream", "downstream")
    ],
    "reset-peer": [{"type": "reset_peer", "stream": "downstream", "attributes": {"timeout": 0}}],
    "timeout": [{"type": "timeout", "stream": "downstream", "attributes": {"timeout": 500}}],
    "slicer": [
        {
            "type": "slicer",
            "stream": s,
            "attributes": {"average_size": 64, "size_variation": 32, "delay": 200},
        }
        for s in ("upstream", "downstream")
    ],
}
RESTART_ISOLATED = "restart-isolated"
"""A node killed, then started again while its broker and controller links stay cut (clients still
reach it), healed :data:`ISOLATED_HOLD_S` after its start. Until then it cannot catch up with the
metadata log: a correct broker holds what clients ask (Kafka's broker does not open its client
listeners before its metadata has caught up, ``BrokerServer.startup`` waiting on
``BrokerLifecycleManager``'s initial catch-up future), one that answers from its stale image says a
topic that exists does not, which the restart probe records (``restart_answered_uncaught_up``). A
plain ``kill`` leaves that window to chance: the node usually catches up within milliseconds of its
port opening. ``reference_impl/tests/integration/test_restart_probe_mutant.py`` makes the same window
with SIGSTOP on the other nodes."""
ISOLATED_HOLD_S = 3.0

BLACK_HOLE = [
    {"type": "timeout", "stream": s, "attributes": {"timeout": 0}} for s in ("upstream", "downstream")
]


@dataclass
class Nemesis:
    """Runs planned faults against one target through one Toxiproxy server."""

    recorder: Recorder
    topology: Topology
    target: Target | None
    topic: str
    active: dict[int, dict[str, Any]] = field(default_factory=dict)
    packets: PacketRules | None = None
    """iptables rules, only when the campaign enabled packet faults (root)."""
    clock: Clock | None = None
    """The brokers' faked wall clock, only when the campaign has clock faults (:mod:`.clock`)."""
    disk: Disk | None = None
    """The tmpfs holding the brokers' data, only when the campaign has disk faults (:mod:`.disk`)."""
    probe: RestartProbe | None = None
    """What a node started again after a kill or bounce first says about the topic
    (:mod:`.restart_probe`); None: not probed."""
    membership: Membership | None = None
    """Adds and decommissions brokers (:mod:`.membership`), only on a reference cluster launched here."""
    group: str | None = None
    """The campaign's group, whose coordinator ``partition-coordinator`` isolates."""

    # --- what to hit ----------------------------------------------------------------------------

    def _metadata(self) -> tuple[int | None, int | None]:
        """(leader of partition 0 of the topic, active controller), or None where unknown."""
        try:
            from confluent_kafka.admin import AdminClient

            admin = AdminClient(
                with_run_security({"bootstrap.servers": self.topology.bootstrap, "socket.timeout.ms": 3000})
            )
            metadata = admin.list_topics(self.topic, timeout=3)
            topic = metadata.topics.get(self.topic)
            leader = topic.partitions[0].leader if topic and 0 in topic.partitions else None
            controller = metadata.controller_id if metadata.controller_id >= 0 else None
            return (leader if leader is not None and leader >= 0 else None), controller
        except Exception:  # a partitioned or killed cluster may not answer; fall back to the seeded pick
            return None, None

    def _coordinator(self) -> int | None:
        """The node FindCoordinator (key type 0) names for :attr:`group`, asked of each proxied
        address in turn; None when there is no group or no answer."""
        if self.group is None:
            return None
        for address in self.topology.bootstrap.split(","):
            try:
                with WireClient(address, timeout_s=3.0) as wire:
                    caps = Capabilities(wire.api_versions())
                    code, node, _host, _port = ops.find_coordinator(wire, caps, self.group, 0)
                if int(code) == 0:
                    return node
            except Exception:  # killed or cut off: ask the next one
                continue
        return None

    def _choose(self, plan: Planned, role: str) -> int:
        nodes = self.topology.node_ids
        picked = nodes[plan.pick % len(nodes)]
        if role == "node" or len(nodes) == 1:
            return picked
        if role == "coordinator":
            coordinator = self._coordinator()
            return coordinator if coordinator in nodes else picked
        leader, controller = self._metadata()
        chosen = leader if role == "leader" else controller
        return chosen if chosen in nodes else picked

    # --- links ---------------------------------------------------------------------------------

    def _add_toxics(self, proxies: list[str], toxics: list[dict[str, Any]], tag: str) -> list[str]:
        added = []
        for proxy in proxies:
            for toxic in toxics:
                name = f"{tag}-{toxic['type']}-{toxic['stream']}"
                answer = requests.post(
                    f"{self.topology.api_url}/proxies/{proxy}/toxics",
                    timeout=10,
                    json={**toxic, "name": name, "toxicity": 1.0},
                )
                if answer.status_code in (200, 201):
                    added.append(f"{proxy}/{name}")
        return added

    def _remove_toxics(self, added: list[str]) -> None:
        for item in added:
            proxy, name = item.split("/", 1)
            requests.delete(f"{self.topology.api_url}/proxies/{proxy}/toxics/{name}", timeout=10)

    def _partition_links(self, plan: Planned) -> tuple[list[str], list[int]]:
        nodes = self.topology.node_ids
        kind = plan.fault
        if kind == "partition-client":
            return self.topology.client_links(), nodes
        if kind == "partition-halves":
            shuffled = sorted(nodes, key=lambda n: random.Random(plan.pick + n).random())
            half = shuffled[: max(1, len(nodes) // 2)]
            return self.topology.isolate(half), half
        if kind == "partition-ring":
            ring = self.topology.ring()
            return (
                (ring, nodes) if ring else (self.topology.client_links([self._choose(plan, "node")]), nodes)
            )
        role = {"partition-leader": "leader", "partition-leader-peers": "leader",
                "partition-controller": "controller", "partition-coordinator": "coordinator",
                }.get(kind, "node")  # fmt: skip
        node = self._choose(plan, role)
        if kind == "partition-leader-peers":  # clients still reach it: it may go on taking writes
            others = [n for n in nodes if n != node]
            return self.topology.links_between([node], others), [node]
        return self.topology.isolate([node]), [node]

    # --- start and stop -----------------------------------------------------------------------

    def start(self, plan: Planned) -> None:
        state: dict[str, Any] = {
            "fault": plan.fault,
            "id": plan.id,
            "planned_start_s": plan.start_s,
            "duration_s": plan.duration_s,
        }
        try:
            if plan.fault in PARTITIONS:
                proxies, nodes = self._partition_links(plan)
                state["nodes"] = nodes
                state["toxics"] = self._add_toxics(proxies, BLACK_HOLE, f"nemesis{plan.id}")
            elif plan.fault == "strand-leader":
                node = self._choose(plan, "leader")
                state["nodes"] = [node]
                state["toxics"] = self._add_toxics(
                    self.topology.replication_links(node), BLACK_HOLE, f"nemesis{plan.id}"
                )
                timer = threading.Timer(plan.duration_s * 0.5, self._strand_kill, args=(plan.id, node))
                timer.daemon = True
                state["timer"] = timer
                timer.start()
            elif plan.fault in PACKET_FAULTS:
                state.update(self._packet_start(plan))
            elif plan.fault in DISK_FAULTS:
                if self.disk is None:
                    raise RuntimeError("this campaign's brokers do not keep their data on a disk it controls")
                state["filled_bytes"] = self.disk.fill()
                state["nodes"] = list(self.topology.node_ids)
            elif plan.fault in LOG_DIR_FAULTS:
                state.update(self._log_dir_start(plan))
            elif plan.fault in CLOCK_FAULTS:
                if self.clock is None:
                    raise RuntimeError("this campaign's brokers were not started on a faked clock")
                state["offset_s"] = round(Clock.offset_for(plan.fault, plan.pick), 3)
                state["nodes"] = list(self.topology.node_ids)
                self.clock.set(state["offset_s"])
            elif plan.fault in MEMBERSHIP_FAULTS:
                if self.membership is None:
                    raise RuntimeError("membership changes need a reference cluster this campaign launched")
                state.update(self.membership.start(plan.id, plan.pick))
            elif plan.fault == RESTART_ISOLATED:
                node_id = self._choose(plan, "leader")
                state["nodes"] = [node_id]
                self._process_start("kill", node_id)
                others = [n for n in self.topology.node_ids if n != node_id]
                state["toxics"] = self._add_toxics(
                    self.topology.links_between([node_id], others), BLACK_HOLE, f"nemesis{plan.id}"
                )
            elif plan.fault in LINK_TOXICS:
                state["toxics"] = self._add_toxics(
                    self.topology.client_links(), LINK_TOXICS[plan.fault], f"nemesis{plan.id}"
                )
            else:
                node_id = self._choose(plan, "leader")
                state["nodes"] = [node_id]
                self._process_start(plan.fault, node_id)
        except Exception as exc:  # recorded, never fatal: a fault that could not start is still a fact
            state["error"] = f"{type(exc).__name__}: {exc}"
        self.active[plan.id] = state
        shown = {k: v for k, v in state.items() if k not in ("toxics", "rules", "timer", "failed")}
        self.recorder.nemesis("start", shown)

    def stop(self, plan: Planned) -> None:
        state = self.active.pop(plan.id, {"fault": plan.fault, "id": plan.id})
        outcome: dict[str, Any] = {"fault": plan.fault, "id": plan.id}
        try:
            if plan.fault == RESTART_ISOLATED and state.get("nodes"):
                try:  # started while still cut off; the links heal after the hold
                    self._process_stop("kill", state["nodes"][0], outcome)
                    time.sleep(ISOLATED_HOLD_S)
                finally:
                    self._remove_toxics(state.pop("toxics", []))
            self._remove_toxics(state.get("toxics", []))
            if self.clock is not None and plan.fault in CLOCK_FAULTS:
                self.clock.set(0.0)
            if self.disk is not None and plan.fault in DISK_FAULTS:
                self.disk.free()
                outcome["restarted"] = self._restart_ended()
            if plan.fault in LOG_DIR_FAULTS and state.get("failed") is not None:
                self._log_dir_stop(state["nodes"][0], state["failed"], outcome)
            if self.packets is not None and state.get("rules"):
                self.packets.remove(state["rules"])
            if plan.fault in ("kill", "pause", "bounce") and state.get("nodes"):
                self._process_stop(plan.fault, state["nodes"][0], outcome)
            if plan.fault in MEMBERSHIP_FAULTS and self.membership is not None:
                self.membership.stop(plan.id)
            if plan.fault == "strand-leader" and state.get("nodes"):
                if state.get("timer") is not None:
                    state["timer"].cancel()
                self._process_stop("kill", state["nodes"][0], outcome)
        except Exception as exc:
            outcome["error"] = f"{type(exc).__name__}: {exc}"
        self.recorder.nemesis("stop", outcome)

    def _node(self, node_id: int) -> Any:
        if self.target is None or not self.target.nodes:
            raise RuntimeError("this target has no processes to control (bootstrap target)")
        return self.target.node(node_id)

    def _process_start(self, fault: str, node_id: int) -> None:
        node = self._node(node_id)
        if fault == "kill":
            node.kill()
        elif fault == "pause":
            node.pause()
        elif fault == "bounce":
            node.stop()

    def _strand_kill(self, plan_id: int, node_id: int) -> None:
        """strand-leader's second half: the stranded leader dies (recorded as its own nemesis op)."""
        if plan_id not in self.active:
            return
        value: dict[str, Any] = {"fault": "strand-leader", "id": plan_id, "nodes": [node_id]}
        try:
            self._process_start("kill", node_id)
        except Exception as exc:
            value["error"] = f"{type(exc).__name__}: {exc}"
        self.recorder.nemesis("kill", value)

    def _restart_ended(self) -> list[int]:
        """Start again the nodes whose process ended (a broker that stopped on a failed disk)."""
        if self.target is None or not self.target.nodes:
            return []
        ended = [n for n in self.topology.node_ids if not self._node(n).is_running]
        for n in ended:
            self._node(n).start()
        return ended

    def _process_stop(self, fault: str, node_id: int, outcome: dict[str, Any] | None = None) -> None:
        node = self._node(node_id)
        if fault == "kill" or fault == "bounce":
            node.start()
            if self.probe is not None:  # the node's own address: its proxy would accept at any time
                self.probe.restarted(node_id, node.host, node.port, outcome or {"fault": fault})
        elif fault == "pause":
            node.resume()

    def _log_dir_start(self, plan: Planned) -> dict[str, Any]:
        """Fail the log directory holding partition 0 on its leader (:mod:`.log_dirs`)."""
        node_id = self._choose(plan, "leader")
        node = self._node(node_id)
        path, moved = prepare_dir(f"{node.host}:{node.port}", self.topic, 0)
        return {"nodes": [node_id], "log_dir": path, "moved": moved, "failed": fail_dir(path, str(plan.id))}

    def _log_dir_stop(self, node_id: int, failed: FailedDir, outcome: dict[str, Any]) -> None:
        """Stop the broker, put its directory back, start it again (Kafka: a restart brings it back)."""
        node = self._node(node_id)
        node.stop()
        restore_dir(failed)
        outcome["restored"] = failed.path
        self._process_stop("bounce", node_id, outcome)

    def _packet_start(self, plan: Planned) -> dict[str, Any]:
        if self.packets is None:
            raise RuntimeError("packet faults are off (kafka-harness chaos --packet-faults, as root)")
        if plan.fault == "packet-drop":
            node = self._choose(plan, "leader")
            rules = self.packets.drop(self.topology.ports_of([node]))
            return {"nodes": [node], "rules": rules}
        ports = self.topology.ports_of(self.topology.node_ids)
        return {
            "nodes": list(self.topology.node_ids),
            "rules": self.packets.drop(ports, LOSS_PROBABILITY),
            "loss": LOSS_PROBABILITY,
        }

    def heal(self) -> None:
        """End every active fault (used when a campaign stops early or finishes)."""
        for plan_id, state in list(self.active.items()):
            self.stop(Planned(plan_id, state["fault"], 0.0, 0.0, 0))
        if self.packets is not None:
            self.packets.clear()
        if self.clock is not None:
            self.clock.set(0.0)
        if self.disk is not None:
            self.disk.free()
        if self.membership is not None:
            unfinished = self.membership.heal()
            if unfinished:
                self.recorder.nemesis("membership", {"fault": "membership", "unfinished": unfinished})
        if self.probe is not None:
            self.probe.finish()


def run_schedule(nemesis: Nemesis, plan: list[Planned], started: float, stop: threading.Event) -> None:
    """Start and stop each planned fault at its time (seconds after ``started``, monotonic)."""
    events = sorted(
        [(p.start_s, 0, p) for p in plan] + [(p.start_s + p.duration_s, 1, p) for p in plan],
        key=lambda e: (e[0], e[1]),
    )
    for at, kind, entry in events:
        wait = started + at - time.monotonic()
        if wait > 0 and stop.wait(wait):
            break
        (nemesis.start if kind == 0 else nemesis.stop)(entry)
    nemesis.heal()
