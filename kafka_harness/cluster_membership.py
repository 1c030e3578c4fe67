"""``kafka-harness cluster add-broker`` and ``remove-broker``: change a running cluster's brokers.

    kafka-harness cluster add-broker --data-dir D [--node-id N] [--timeout S]
    kafka-harness cluster remove-broker --node-id N --data-dir D [--timeout S]

``add-broker`` starts a broker-only node (the next free id unless ``--node-id``) made from one of
the cluster's brokers (:mod:`fixtures.targets.membership`), adds it to ``D/cluster.json`` and waits
until the cluster lists it. No partition moves to it by itself (as in Kafka): reassign some onto
it (AlterPartitionReassignments), as the membership nemesis does.

``remove-broker`` is Kafka's documented decommission: every replica of the broker is reassigned to
the remaining brokers (AlterPartitionReassignments; the broker holding the fewest replicas takes
each), the command waits until the moves are done, stops the broker (SIGTERM, a controlled
shutdown), sends UnregisterBroker (``kafka-cluster remove-broker``) and waits until Metadata no
longer lists it; the node leaves ``cluster.json`` (its data directory stays). A voter is refused:
removing a controller from the quorum is RemoveRaftVoter's (KIP-853), which this command does not
send (:data:`REMOVE_VOTER_HOOK`).

Exit codes: 0 done, 1 a step failed or overran ``--timeout``, 2 bad arguments or no cluster at D.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fixtures.targets.cluster_launcher import HOST, ClusterError, ClusterPlan, NodePlan, start_node, stop_node
from fixtures.targets.membership import MembershipPlanError, added_broker_command
from fixtures.targets.processes import free_port
from fixtures.wire.membership import MembershipError, decommission, wait_registered

REMOVE_VOTER_HOOK = "RemoveRaftVoter (KIP-853)"
"""What removing a voter needs first; the quorum's own membership change, not built here."""
MAX_NODE_ID = 2**31 - 1


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add = sub.add_parser("add-broker", help="start a new broker that joins the running cluster")
    add.add_argument("--data-dir", required=True)
    add.add_argument("--node-id", type=_node_id, help="default: one above the highest node id")
    add.add_argument("--timeout", type=float, default=60.0, help="seconds to wait until it is listed")
    remove = sub.add_parser("remove-broker", help="move a broker's replicas away, stop and unregister it")
    remove.add_argument("--data-dir", required=True)
    remove.add_argument("--node-id", type=_node_id, required=True)
    remove.add_argument("--timeout", type=float, default=120.0, help="seconds for each wait")


def _node_id(value: str) -> int:
    try:
        node = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a node id") from None
    if not 0 <= node <= MAX_NODE_ID:
        raise argparse.ArgumentTypeError(f"a node id is 0..{MAX_NODE_ID}")
    return node


def run(args: argparse.Namespace) -> int:
    try:
        cluster = ClusterPlan.load(args.data_dir)
    except ClusterError as exc:
        print(f"kafka-harness cluster: {exc}")
        return 2
    if not 0 < args.timeout <= 3600:
        print("kafka-harness cluster: --timeout is 0..3600 seconds")
        return 2
    try:
        if args.action == "add-broker":
            return add_broker(cluster, args.node_id, args.timeout)
        return remove_broker(cluster, args.node_id, args.timeout)
    except (ClusterError, MembershipPlanError) as exc:
        print(f"kafka-harness cluster: {exc}")
        return 2
    except MembershipError as exc:
        print(f"kafka-harness cluster {args.action}: {exc}")
        return 1


def new_node_id(cluster: ClusterPlan, node_id: int | None, what: str) -> int:
    """The id a node added to ``cluster`` takes: ``node_id``, or one above the highest; refused on a
    secured cluster (the new node would need its own certificates) or when the id is taken."""
    if cluster.client_properties:
        raise MembershipPlanError(f"adding a {what} to a secured cluster is not supported")
    taken = {n.node_id for n in cluster.nodes}
    new_id = max(taken, default=0) + 1 if node_id is None else node_id
    if new_id in taken:
        raise ClusterError(f"node {new_id} is already in the cluster at {cluster.data_dir}")
    return new_id


def plan_added_broker(cluster: ClusterPlan, node_id: int | None = None) -> NodePlan:
    """The new broker-only node (not yet started nor in the plan), made from a broker of the plan."""
    new_id = new_node_id(cluster, node_id, "broker")
    brokers = cluster.brokers
    if not brokers:
        raise ClusterError(f"the cluster at {cluster.data_dir} has no broker to copy")
    template = next((n for n in brokers if not n.voter), brokers[0])
    port = free_port()
    peers = {n.node_id: n.listen for n in brokers}
    root = Path(cluster.data_dir)
    command = added_broker_command(template.command, new_id, HOST, port, root / f"node-{new_id}", peers)
    return NodePlan(
        node_id=new_id,
        listen=f"{HOST}:{port}",
        advertised=f"{HOST}:{port}",
        peers={str(k): v for k, v in peers.items()},
        voter=False,
        command=command,
        log=str(root / f"node-{new_id}.log"),
        controller_peers={str(n.node_id): n.controller for n in cluster.nodes if n.voter},
    )


def add_broker(cluster: ClusterPlan, node_id: int | None, timeout_s: float) -> int:
    node = plan_added_broker(cluster, node_id)
    started = time.monotonic()
    start_node(node)
    cluster.nodes.append(node)
    cluster.save()
    addresses = [n.listen for n in cluster.brokers]
    waited = wait_registered(addresses, node.node_id, timeout_s)
    print(f"node {node.node_id} pid {node.pid} broker {node.advertised}")
    print(f"registered and listed {waited:.2f} s after start ({time.monotonic() - started:.2f} s in all)")
    print(cluster.bootstrap_servers)
    return 0


def remove_broker(cluster: ClusterPlan, node_id: int, timeout_s: float) -> int:
    node = cluster.node(node_id)
    if node.voter:
        raise ClusterError(
            f"node {node_id} is a metadata quorum voter: remove it from the quorum first "
            f"({REMOVE_VOTER_HOOK}, not sent by this command)"
        )
    if not node.broker:
        raise ClusterError(f"node {node_id} is not a broker")
    addresses = [n.listen for n in cluster.brokers if n.node_id != node_id]
    if not addresses:
        raise ClusterError("no other broker would remain")
    done = decommission(addresses, node_id, lambda: stop_node(node), timeout_s)
    cluster.nodes.remove(node)
    cluster.save()
    figures = done.figures()
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    print(f"node {node_id} removed; its data stays in {Path(cluster.data_dir) / f'node-{node_id}'}")
    return 0
