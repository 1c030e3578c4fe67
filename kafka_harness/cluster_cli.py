"""``kafka-harness cluster``: start a reference cluster and act on its nodes.

    kafka-harness cluster up --brokers 3 [--controllers 3 [--separate-controllers]] --data-dir D
                             [--config k=v ...] [--listen-ports P,...] [--advertised-ports P,...]
                             [--controller-ports P,...] [--peer-address A:B[/CONTROLLER]=HOST:PORT ...]
                             [--security ssl|sasl_ssl|sasl_plaintext]
    kafka-harness cluster kill|restart|pause|resume|stop NODE --data-dir D
    kafka-harness cluster status|down --data-dir D
    kafka-harness cluster add-broker --data-dir D [--node-id N]      (kafka_harness/cluster_membership.py)
    kafka-harness cluster remove-broker --node-id N --data-dir D
    kafka-harness cluster remove-controller|add-controller NODE --data-dir D   (KIP-853: cluster_voters.py)
    kafka-harness cluster add-controller [--new] --data-dir D   (a new controller, bootstrap servers)

Each node has a client (PLAINTEXT) listener and each voter a CONTROLLER listener, which alone
serves the quorum, the brokers' registrations and heartbeats and forwarded admin requests.
Every link can have a proxy on it: ``--listen-ports`` are where the nodes' client listeners
listen (a controller-only node's controller listener), ``--advertised-ports`` what they tell
clients (a proxy's port in front of each), ``--controller-ports`` where the voters' controller
listeners listen, ``--peer-address A:B=HOST:PORT`` where node A reaches node B's client listener
(replica fetches) and ``--peer-address A:B/CONTROLLER=HOST:PORT`` where it reaches voter B's
controller listener. ``--security`` makes every listener and link of that protocol instead
(``fixtures/targets/secured.py``: certificates and ``client.properties`` in D; ``status`` and
``restart`` connect with them).

``up`` starts the broker processes (the first ``--controllers`` are metadata
quorum voters; with ``--separate-controllers`` the voters are that many more
nodes, controllers only, numbered after the brokers), waits until every
broker reports the same metadata, writes
``D/cluster.json`` and prints the bootstrap servers. ``kill`` is SIGKILL,
``pause``/``resume`` SIGSTOP/SIGCONT, ``stop`` SIGTERM (a controlled
shutdown), ``restart`` starts a stopped or killed node again on its data.
Exit codes: 0 done, 1 the cluster did not come up or agree, 2 bad arguments
or no cluster at D.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from fixtures.targets.cluster_launcher import (
    ClusterError,
    ClusterPlan,
    NodePlan,
    down,
    kill_node,
    metadata_view,
    plan_cluster,
    plan_security,
    signal_node,
    start_node,
    stop_node,
    up,
    wait_ready,
)
from fixtures.targets.processes import is_alive
from fixtures.targets.secured import SECURITY_CHOICES, security_configs

from . import cluster_membership

NODE_ACTIONS = ("kill", "restart", "pause", "resume", "stop")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kafka-harness cluster", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    start = sub.add_parser("up", help="start a cluster and wait until it agrees")
    start.add_argument("--brokers", type=int, default=3)
    start.add_argument("--controllers", type=int, help="metadata quorum voters (default: up to 3)")
    start.add_argument(
        "--separate-controllers",
        action="store_true",
        help="the voters are controller-only nodes (process.roles=controller) after the brokers",
    )
    start.add_argument("--data-dir", required=True)
    start.add_argument("--cluster-id")
    start.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    start.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for agreement")
    start.add_argument(
        "--security",
        choices=SECURITY_CHOICES,
        help="secure every listener and link (certificates and client.properties in --data-dir)",
    )
    start.add_argument("--listen-ports", type=_ports, help="one port per node, in node order")
    start.add_argument("--advertised-ports", type=_ports, help="one port per node: what clients are told")
    start.add_argument(
        "--controller-ports", type=_ports, help="one port per voter, in node order: its controller listener"
    )
    start.add_argument(
        "--peer-address",
        type=_peer_address,
        action="append",
        default=[],
        metavar="A:B[/CONTROLLER]=HOST:PORT",
        help="where node A reaches node B's client listener, or with /CONTROLLER voter B's controller "
        "listener (repeatable; default: B's own port)",
    )
    for action in NODE_ACTIONS:
        one = sub.add_parser(action, help=f"{action} one node")
        one.add_argument("node", type=int)
        one.add_argument("--data-dir", required=True)
    for action in ("remove-controller", "add-controller"):
        voters = sub.add_parser(action, help=f"{action.split('-')[0]} a metadata quorum voter (KIP-853)")
        voters.add_argument("node", type=int, nargs="?" if action == "add-controller" else None)
        voters.add_argument("--data-dir", required=True)
        if action == "add-controller":
            voters.add_argument(
                "--new",
                action="store_true",
                help="start a new controller (controller.quorum.bootstrap.servers) and add it "
                "(the default when no NODE is given)",
            )
    for action in ("down", "status"):
        sub.add_parser(action).add_argument("--data-dir", required=True)
    cluster_membership.add_parsers(sub)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        if args.action == "up":
            return _up(args)
        if args.action in ("add-broker", "remove-broker"):
            return cluster_membership.run(args)
        if args.action in ("remove-controller", "add-controller"):
            from .cluster_voters import run

            return run(args.data_dir, args.action.split("-")[0], args.node, getattr(args, "new", False))
        cluster = ClusterPlan.load(args.data_dir)
        if args.action == "down":
            down(cluster)
            print(f"cluster at {cluster.data_dir} stopped")
            return 0
        if args.action == "status":
            security = plan_security(cluster)
            for n in cluster.nodes:
                state = "running" if is_alive(n.pid) else "down"
                view = (
                    metadata_view(n.listen, security=security)
                    if n.broker
                    else "(controller only: no Metadata)"
                )
                quorum = f" controller listener {n.controller}" if n.controller else ""
                print(f"node {n.node_id} pid {n.pid} {_role(n)} {state} {n.advertised}{quorum} view {view}")
            return 0
        return _act(cluster, args.action, args.node)
    except ClusterError as exc:
        print(f"kafka-harness cluster: {exc}", file=sys.stderr)
        return 1 if args.action == "up" else 2


def _ports(value: str) -> list[int]:
    try:
        ports = [int(p) for p in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of ports") from None
    if not all(0 < p < 65536 for p in ports):
        raise argparse.ArgumentTypeError(f"{value!r}: a port is 1..65535")
    return ports


def _peer_address(value: str) -> tuple[tuple[int, int], tuple[str, int], bool]:
    """(link, address, whether the link reaches the controller listener)."""
    link, _, address = value.partition("=")
    link, slash, listener = link.partition("/")
    source, _, dest = link.partition(":")
    host, _, port = address.rpartition(":")
    if not (source.isdigit() and dest.isdigit() and host and port.isdigit() and 0 < int(port) < 65536):
        raise argparse.ArgumentTypeError(f"{value!r} is not A:B[/CONTROLLER]=HOST:PORT")
    if slash and listener.upper() not in ("CONTROLLER", "PLAINTEXT"):
        raise argparse.ArgumentTypeError(f"{value!r}: the listener is PLAINTEXT or CONTROLLER")
    return (int(source), int(dest)), (host, int(port)), listener.upper() == "CONTROLLER"


def _up(args: argparse.Namespace) -> int:
    try:
        secured = (
            security_configs(args.security, Path(args.data_dir).resolve(), cluster=True)
            if args.security
            else None
        )
        cluster = plan_cluster(
            args.data_dir,
            args.brokers,
            controllers=args.controllers,
            separate_controllers=args.separate_controllers,
            listen_ports=args.listen_ports,
            advertised_ports=args.advertised_ports,
            peer_addresses={link: address for link, address, ctrl in args.peer_address if not ctrl},
            configs=args.config,
            cluster_id=args.cluster_id,
            controller_ports=_voter_ports(args),
            controller_addresses={link: address for link, address, ctrl in args.peer_address if ctrl},
            secured=secured,
        )
    except ClusterError as exc:
        print(f"kafka-harness cluster: {exc}", file=sys.stderr)
        return 2
    up(cluster, args.timeout)
    for n in cluster.nodes:
        quorum = f" controller listener {n.controller}" if n.controller else ""
        print(f"node {n.node_id} pid {n.pid} {_role(n)} {n.advertised}{quorum}")
    print(cluster.bootstrap_servers)
    if secured is not None:
        print(f"client properties ({secured.protocol}): {secured.properties}")
    return 0


def _voter_ports(args: argparse.Namespace) -> dict[int, int] | None:
    """``--controller-ports``, one per voter in node order, as voter id -> port."""
    if not args.controller_ports:
        return None
    first = args.brokers + 1 if args.separate_controllers else 1
    count = min(args.brokers, 3) if args.controllers is None else args.controllers
    if len(args.controller_ports) != count:
        raise ClusterError(f"{count} voters need {count} controller ports")
    return {first + i: port for i, port in enumerate(args.controller_ports)}


def _role(node: NodePlan) -> str:
    if not node.broker:
        return "controller"
    return "broker+controller" if node.voter else "broker"


def _act(cluster: ClusterPlan, action: str, node_id: int) -> int:
    target = cluster.node(node_id)
    if action == "kill":
        kill_node(target)
    elif action == "pause":
        signal_node(target, signal.SIGSTOP)
    elif action == "resume":
        signal_node(target, signal.SIGCONT)
    elif action == "stop":
        stop_node(target)
    else:
        if is_alive(target.pid):
            stop_node(target)
        start_node(target)
        cluster.save()
        wait_ready(cluster, 60.0, [target.node_id])
    print(f"node {target.node_id}: {action} done (pid {target.pid})")
    return 0
