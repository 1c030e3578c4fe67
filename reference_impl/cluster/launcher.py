"""A reference cluster as processes: plan the nodes, start them, wait until they agree, act on one.

A cluster is N ``kafka-harness broker`` processes sharing a cluster id, the
first C of them voters of the metadata quorum (combined broker+controller
mode), the rest observers; or, with separate controllers, N brokers observing
a quorum of C more nodes that are controllers only (``process.roles=controller``).
As in Kafka, each node has a PLAINTEXT listener for clients and peers' replica fetches (a
controller-only node has none) and each voter a CONTROLLER listener
(``controller.listener.names=CONTROLLER``) that alone serves the quorum and the brokers'
registrations, heartbeats and forwarded requests; ``controller.quorum.voters`` names the
controller listeners. Every address is planned per link, so a proxy can sit on each one: a node
listens on one port, advertises another to clients, and reaches each peer's broker listener and
each voter's controller listener at an address of that (source, destination) pair.

:class:`ClusterPlan` is what ``cluster.json`` holds: each node's id, pid, the
addresses and the command that (re)starts it, so ``kafka-harness cluster
kill|restart|pause|resume|stop NODE`` acts on a cluster another process started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import decode_response, encode_request
from reference_impl.protocol.frames import FrameDecoder

CLUSTER_FILE = "cluster.json"
CONTROLLER_LISTENER = "CONTROLLER"
MAX_SEPARATE_CONTROLLERS = 5
"""Raft quorums of 1, 3 or 5 voters are what clusters run; more only slows every commit."""
HOST = "127.0.0.1"
Address = tuple[str, int]


class ClusterError(RuntimeError):
    """The cluster cannot be started, reached or found (message says why)."""


def free_port(host: str = HOST) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class NodePlan:
    node_id: int
    listen: str
    """HOST:PORT of the node's client listener (a controller-only node: its controller listener)."""
    advertised: str
    """HOST:PORT clients are told (a proxy's, when one fronts the node)."""
    peers: dict[str, str]
    """Peer id -> HOST:PORT this node uses to reach its client listener (replica fetches)."""
    voter: bool
    command: list[str]
    log: str
    pid: int | None = None
    broker: bool = True
    """False for a controller-only node (it never serves clients or partitions)."""
    controller: str = ""
    """HOST:PORT of the node's controller listener (voters only)."""
    controller_peers: dict[str, str] = field(default_factory=dict)
    """Voter id -> HOST:PORT this node uses to reach its controller listener (the quorum,
    registrations and heartbeats, forwarded admin requests)."""

    @property
    def listen_address(self) -> Address:
        host, _, port = self.listen.rpartition(":")
        return host, int(port)


@dataclass
class ClusterPlan:
    data_dir: str
    cluster_id: str
    nodes: list[NodePlan] = field(default_factory=list)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.advertised for n in self.brokers)

    @property
    def brokers(self) -> list[NodePlan]:
        return [n for n in self.nodes if n.broker]

    def node(self, node_id: int) -> NodePlan:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise ClusterError(f"no node {node_id} in the cluster at {self.data_dir}")

    def save(self) -> None:
        path = Path(self.data_dir) / CLUSTER_FILE
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(asdict(self), indent=2) + "\n")
        temporary.replace(path)

    @classmethod
    def load(cls, data_dir: str | Path) -> ClusterPlan:
        path = Path(data_dir) / CLUSTER_FILE
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ClusterError(f"no cluster at {data_dir}: {exc}") from None
        nodes = [NodePlan(**n) for n in raw.pop("nodes")]
        return cls(nodes=nodes, **raw)


def plan_cluster(
    data_dir: str | Path,
    brokers: int,
    *,
    controllers: int | None = None,
    separate_controllers: bool = False,
    listen_ports: Sequence[int] | None = None,
    advertised_ports: Sequence[int] | None = None,
    peer_addresses: Mapping[tuple[int, int], Address] | None = None,
    configs: Sequence[str] = (),
    cluster_id: str | None = None,
    python: Sequence[str] = (sys.executable, "-m", "kafka_harness"),
    controller_ports: Mapping[int, int] | None = None,
    controller_addresses: Mapping[tuple[int, int], Address] | None = None,
) -> ClusterPlan:
    """Nodes 1..``brokers``; the first ``controllers`` (default: up to 3) are quorum voters, or,
    with ``separate_controllers``, nodes ``brokers``+1.. are ``controllers`` controller-only voters.

    One list of ports (one per node) each for where nodes listen and what they advertise
    (default: free ports, advertised as listened); a controller-only node's listen port is its
    controller listener's. ``controller_ports[v]`` is where voter ``v``'s controller listener
    binds (default: a free port). ``peer_addresses[(a, b)]`` is where node ``a`` reaches node
    ``b``'s client listener (default: ``b``'s listen address), ``controller_addresses[(a, v)]``
    where it reaches voter ``v``'s controller listener (default: ``v``'s controller port).
    """
    if brokers < 1:
        raise ClusterError("a cluster needs at least one broker")
    voters = min(brokers, 3) if controllers is None else controllers
    if separate_controllers and not 1 <= voters <= MAX_SEPARATE_CONTROLLERS:
        raise ClusterError(f"--controllers must be 1..{MAX_SEPARATE_CONTROLLERS} with separate controllers")
    if not separate_controllers and not 1 <= voters <= brokers:
        raise ClusterError(f"--controllers must be 1..{brokers}")
    root = Path(data_dir).resolve()
    ids = list(range(1, brokers + (voters if separate_controllers else 0) + 1))
    voter_ids = ids[brokers:] if separate_controllers else ids[:voters]
    listen = list(listen_ports) if listen_ports else [free_port() for _ in ids]
    advertised = list(advertised_ports) if advertised_ports else list(listen)
    if len(listen) != len(ids) or len(advertised) != len(ids):
        raise ClusterError(f"{len(ids)} nodes need {len(ids)} listen and advertised ports each")
    links = dict(peer_addresses or {})
    controller_links = dict(controller_addresses or {})
    strays = sorted(f"{a}:{b}" for a, b in links if a == b or a not in ids or b not in ids)
    strays += sorted(f"{a}:{v}" for a, v in controller_links if a == v or a not in ids or v not in voter_ids)
    if strays:
        raise ClusterError(f"peer addresses for links not between two of nodes 1..{len(ids)}: {strays}")
    brokers_only = {n for n in ids if not (separate_controllers and n in voter_ids)}
    ctrl = _controller_ports(ids, voter_ids, brokers_only, listen, listen_ports, controller_ports or {})
    cluster = ClusterPlan(str(root), cluster_id or f"kh-{uuid.uuid4().hex[:16]}")
    for i, node_id in enumerate(ids):
        is_broker = node_id in brokers_only
        peers = {
            str(peer): _address(links.get((node_id, peer), (HOST, listen[j])))
            for j, peer in enumerate(ids)
            if peer != node_id and peer in brokers_only
        }
        controller_peers = {
            str(v): _address(controller_links.get((node_id, v), (HOST, ctrl[v])))
            for v in voter_ids
            if v != node_id
        }
        voter_list = ",".join(
            f"{v}@{_address((HOST, ctrl[v])) if v == node_id else controller_peers[str(v)]}"
            for v in voter_ids
        )
        command = [*python, "broker", "--node-id", str(node_id)]
        if is_broker:
            command += ["--listen", f"{HOST}:{listen[i]}", "--advertised-listener", f"{HOST}:{advertised[i]}"]
        command += [
            "--data-dir", str(root / f"node-{node_id}"),
            "--cluster-id", cluster.cluster_id,
            "--controller-quorum-voters", voter_list,
            "--config", f"controller.listener.names={CONTROLLER_LISTENER}",
            "--config", "inter.broker.addresses=" + ",".join(f"{p}={a}" for p, a in sorted(peers.items())),
        ]  # fmt: skip
        if node_id in voter_ids:
            command += ["--config", f"listeners={CONTROLLER_LISTENER}://{HOST}:{ctrl[node_id]}"]
        if not is_broker:
            command += ["--config", "process.roles=controller"]
        for kv in configs:
            command += ["--config", kv]
        cluster.nodes.append(
            NodePlan(
                node_id=node_id,
                listen=f"{HOST}:{listen[i] if is_broker else ctrl[node_id]}",
                advertised=f"{HOST}:{advertised[i] if is_broker else ctrl[node_id]}",
                peers=peers,
                voter=node_id in voter_ids,
                command=command,
                log=str(root / f"node-{node_id}.log"),
                broker=is_broker,
                controller=f"{HOST}:{ctrl[node_id]}" if node_id in voter_ids else "",
                controller_peers=controller_peers,
            )
        )
    return cluster


def _controller_ports(
    ids: Sequence[int],
    voter_ids: Sequence[int],
    brokers: set[int],
    listen: Sequence[int],
    given_listen: Sequence[int] | None,
    given: Mapping[int, int],
) -> dict[int, int]:
    """Each voter's controller port: as given, else (a controller-only node) its listen port, else free."""
    strays = sorted(set(given) - set(voter_ids))
    if strays:
        raise ClusterError(f"controller ports for nodes that are no voters: {strays}")
    ports: dict[int, int] = {}
    for v in voter_ids:
        own = listen[ids.index(v)]
        if v not in brokers and given_listen and v in given and given[v] != own:
            raise ClusterError(f"controller-only node {v} listens on one port: {own} or {given[v]}?")
        ports[v] = given.get(v) or (own if v not in brokers else free_port())
    return ports


def _address(address: Address) -> str:
    return f"{address[0]}:{address[1]}"


# -- processes -------------------------------------------------------------------------------------


def start_node(node: NodePlan) -> subprocess.Popen[bytes]:
    """Start the node's process in its own session (it outlives the command that started it)."""
    Path(node.log).parent.mkdir(parents=True, exist_ok=True)
    with open(node.log, "ab") as log:
        process = subprocess.Popen(node.command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    node.pid = process.pid
    return process


def is_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().split(b")")[-1].split()[0] == b"Z"
    except OSError:
        return False


def signal_node(node: NodePlan, sig: signal.Signals) -> bool:
    """Send ``sig`` to the node's process; False if it is not running."""
    if not is_alive(node.pid):
        return False
    assert node.pid is not None
    with contextlib.suppress(ProcessLookupError):
        os.kill(node.pid, sig)
    return True


def wait_exit(node: NodePlan, timeout_s: float) -> bool:
    """Wait (bounded) for the node's process to end; True if it did."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_alive(node.pid):
            return True
        with contextlib.suppress(ChildProcessError, OSError):
            if node.pid is not None:
                os.waitpid(node.pid, os.WNOHANG)
        time.sleep(0.02)
    return not is_alive(node.pid)


def stop_node(node: NodePlan, timeout_s: float = 30.0) -> None:
    """SIGTERM (after SIGCONT, so a paused node can handle it); SIGKILL if it does not end in time."""
    signal_node(node, signal.SIGCONT)
    if signal_node(node, signal.SIGTERM) and not wait_exit(node, timeout_s):
        kill_node(node)


def kill_node(node: NodePlan) -> None:
    signal_node(node, signal.SIGKILL)
    wait_exit(node, 10)


# -- readiness -----------------------------------------------------------------------------------


def metadata_view(address: str, timeout_s: float = 2.0) -> tuple[int, tuple[int, ...]] | None:
    """(controller id, broker ids) as the broker at ``address`` reports them; None if it cannot."""
    host, _, port = address.rpartition(":")
    body = build(
        request_class(3, 12),
        {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    )
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(encode_request(body, 1, "kafka-harness-cluster"))
            decoder = FrameDecoder()
            while True:
                data = sock.recv(65536)
                if not data:
                    return None
                frames = decoder.feed(data)
                if frames:
                    _corr, answer = decode_response(3, 12, frames[0])
                    break
    except (OSError, ValueError):
        return None
    response: Any = answer
    return int(response.controller_id), tuple(sorted(int(b.node_id) for b in response.brokers))


def _accepts(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def wait_ready(
    cluster: ClusterPlan, timeout_s: float, nodes: Sequence[int] | None = None
) -> dict[int, tuple[int, tuple[int, ...]]]:
    """Wait until every broker answers Metadata with every broker registered and unfenced and the
    same controller; returns each broker's view (controller-only nodes serve no Metadata: they are
    ready when the brokers are). Raises :class:`ClusterError` on timeout."""
    wanted = tuple(n.node_id for n in cluster.brokers)
    named = [cluster.node(n) for n in (nodes or wanted)]
    asked = [n for n in named if n.broker] or cluster.brokers
    controllers = [n for n in named if not n.broker]
    deadline = time.monotonic() + timeout_s
    views: dict[int, tuple[int, tuple[int, ...]] | None] = {}
    while time.monotonic() < deadline:
        if not all(_accepts(n.listen) for n in controllers):
            time.sleep(0.1)
            continue
        views = {n.node_id: metadata_view(n.listen) for n in asked}
        seen = set(views.values())
        if len(seen) == 1:
            view = next(iter(seen))
            if view is not None and view[0] >= 0 and view[1] == wanted:
                return {k: v for k, v in views.items() if v is not None}
        time.sleep(0.1)
    raise ClusterError(f"the nodes did not agree on the cluster within {timeout_s:.0f}s: {views}")


def up(cluster: ClusterPlan, timeout_s: float = 60.0) -> dict[int, subprocess.Popen[bytes]]:
    """Start every node, write ``cluster.json``, wait until all report the same metadata."""
    Path(cluster.data_dir).mkdir(parents=True, exist_ok=True)
    processes = {n.node_id: start_node(n) for n in cluster.nodes}
    cluster.save()
    try:
        wait_ready(cluster, timeout_s)
    except BaseException:
        for n in cluster.nodes:
            kill_node(n)
        raise
    return processes


def down(cluster: ClusterPlan, timeout_s: float = 30.0) -> None:
    """Stop every node cleanly, all at once (each controlled shutdown runs in parallel)."""
    for n in cluster.nodes:
        signal_node(n, signal.SIGCONT)
        signal_node(n, signal.SIGTERM)
    for n in cluster.nodes:
        if not wait_exit(n, timeout_s):
            kill_node(n)
