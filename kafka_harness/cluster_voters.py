"""``kafka-harness cluster remove-controller|add-controller NODE --data-dir D``: change the metadata
quorum's voters of a reference cluster started with ``--config reference.kraft.version=1`` (KIP-853),
as ``kafka-metadata-quorum remove-controller`` / ``add-controller`` do.

``remove-controller`` reads the voter's directory id from DescribeQuorum v2 and asks a running
broker (which forwards to the active controller) for RemoveRaftVoter; the id is kept in
``D/voters.json`` for a later ``add-controller`` of the same node, which asks for AddRaftVoter with
the node's controller endpoint (the node must be running and caught up: it fetches as an observer
once removed; the command waits, bounded, until DescribeQuorum shows it caught up). Both are
asked again while the leadership moves. The answer is Kafka's error name; exit 0 when it is NONE,
1 otherwise, 2 when the cluster or the node's directory id is unknown. On a kraft.version 0
cluster the answer is UNSUPPORTED_VERSION. The requests and the DescribeQuorum reading are the
harness library's (``fixtures/wire/voters.py``), which the membership nemesis uses too.

``add-controller --new [NODE]`` (or without NODE) adds a controller that was never one: a new
controller-only process (the next free id) started with ``controller.quorum.bootstrap.servers``
naming the voters' controller listeners instead of ``controller.quorum.voters`` (KIP-853), which
observes the metadata log; once DescribeQuorum shows it caught up, AddRaftVoter adds it and it joins
``D/cluster.json`` as a voter. ``remove-controller`` removes it again like any voter (its process
keeps running as an observer until stopped: ``kafka-harness cluster stop``).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from pathlib import Path

from fixtures.targets.cluster_launcher import HOST, ClusterError, ClusterPlan, NodePlan, start_node
from fixtures.targets.membership import MembershipPlanError, added_controller_command, reference_directory_id
from fixtures.targets.processes import free_port, is_alive
from fixtures.wire.voters import (
    VoterAnswer,
    VoterChangeError,
    add_voter,
    quorum_of,
    remove_voter,
    wait_caught_up,
)

from .cluster_membership import new_node_id

TIMEOUT_S = 60.0
"""A change is asked again while the leadership moves (NOT_CONTROLLER, REQUEST_TIMED_OUT: a new
leader that has not committed in its epoch yet), for at most this long."""
CATCH_UP_S = 15.0


def _brokers(cluster: ClusterPlan) -> list[str]:
    found = [node.listen for node in cluster.nodes if node.broker and is_alive(node.pid)]
    if not found:
        raise ClusterError("no running broker to ask")
    return found


def _directories(cluster: ClusterPlan) -> dict[str, str]:
    path = Path(cluster.data_dir) / "voters.json"
    loaded = json.loads(path.read_text()) if path.exists() else {}
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def _remember(cluster: ClusterPlan, node_id: int, directory: uuid.UUID) -> None:
    known = _directories(cluster)
    known[str(node_id)] = str(directory)
    (Path(cluster.data_dir) / "voters.json").write_text(json.dumps(known, indent=1) + "\n")


def voter_change(cluster: ClusterPlan, action: str, node_id: int) -> VoterAnswer:
    """Remove voter ``node_id`` from the quorum, or add it back (``action``: remove / add)."""
    node = next((n for n in cluster.nodes if n.node_id == node_id), None)
    if node is None or not node.controller:
        raise ClusterError(f"node {node_id} has no controller listener")
    brokers = _brokers(cluster)
    if action == "remove":
        try:
            voter = next((v for v in quorum_of(brokers).voters if v.replica_id == node_id), None)
        except VoterChangeError as exc:
            raise ClusterError(str(exc)) from None
        if voter is None or voter.directory_id is None:
            raise ClusterError(f"node {node_id} is no voter with a directory id (kraft.version 1?)")
        _remember(cluster, node_id, voter.directory_id)
        return remove_voter(brokers, node_id, voter.directory_id, timeout_s=TIMEOUT_S)
    known = _directories(cluster).get(str(node_id))
    if known is None:
        raise ClusterError(f"node {node_id}'s directory id is unknown: remove it with this command first")
    host, _, port = node.controller.rpartition(":")
    with contextlib.suppress(VoterChangeError):  # the leader decides; its answer says why not
        wait_caught_up(brokers, node_id, CATCH_UP_S)
    return add_voter(brokers, node_id, uuid.UUID(known), (host, int(port)), timeout_s=TIMEOUT_S)


def run(data_dir: str, action: str, node_id: int | None, new: bool = False) -> int:
    cluster = ClusterPlan.load(data_dir)
    if action == "add" and (new or node_id is None):
        try:
            return add_new_controller(cluster, node_id)
        except MembershipPlanError as exc:
            raise ClusterError(str(exc)) from None
    if node_id is None:
        raise ClusterError(f"{action}-controller needs a node id")
    answer = voter_change(cluster, action, node_id)
    detail = f" ({answer.message})" if answer.message else ""
    print(f"{action}-controller {node_id}: {answer.error}{detail}")
    return 0 if answer.error == "NONE" else 1


def plan_new_controller(cluster: ClusterPlan, node_id: int | None = None) -> NodePlan:
    """A new controller-only node (not yet started nor in the plan) that finds the quorum through
    ``controller.quorum.bootstrap.servers`` (the voters' controller listeners), made from a voter's
    command (:func:`fixtures.targets.membership.added_controller_command`)."""
    new_id = new_node_id(cluster, node_id, "controller")
    voters = [n for n in cluster.nodes if n.voter and n.controller]
    if not voters:
        raise ClusterError(f"the cluster at {cluster.data_dir} has no voter to copy")
    port = free_port()
    root = Path(cluster.data_dir)
    bootstrap = [n.controller for n in voters]
    command = added_controller_command(
        voters[0].command, new_id, HOST, port, root / f"node-{new_id}", bootstrap
    )
    return NodePlan(
        node_id=new_id,
        listen=f"{HOST}:{port}",
        advertised=f"{HOST}:{port}",
        peers={},
        voter=False,
        command=command,
        log=str(root / f"node-{new_id}.log"),
        broker=False,
        controller=f"{HOST}:{port}",
        controller_peers={},
    )


def add_new_controller(cluster: ClusterPlan, node_id: int | None, timeout_s: float = TIMEOUT_S) -> int:
    """``add-controller --new``: start a new controller process, wait until it observes the quorum
    caught up, and add it with AddRaftVoter (Kafka's documented order: ``kafka-storage format
    --no-initial-controllers``, start, ``kafka-metadata-quorum add-controller``)."""
    node = plan_new_controller(cluster, node_id)
    brokers = _brokers(cluster)
    started = time.monotonic()
    start_node(node)
    cluster.nodes.append(node)
    cluster.save()
    print(f"node {node.node_id} pid {node.pid} controller {node.controller} (bootstrap servers)")
    try:
        caught_up = wait_caught_up(brokers, node.node_id, timeout_s)
    except VoterChangeError as exc:
        print(f"add-controller {node.node_id}: {exc}")
        return 1
    directory = reference_directory_id(cluster.cluster_id, node.node_id)
    host, _, port = node.controller.rpartition(":")
    answer = add_voter(brokers, node.node_id, directory, (host, int(port)), timeout_s=timeout_s)
    detail = f" ({answer.message})" if answer.message else ""
    print(f"observer caught up {caught_up:.2f} s after start")
    print(f"add-controller {node.node_id}: {answer.error}{detail}")
    print(f"{time.monotonic() - started:.2f} s in all")
    if answer.error != "NONE":
        return 1
    node.voter = True
    _remember(cluster, node.node_id, directory)
    cluster.save()
    return 0
