"""``kafka-harness cluster remove-controller|add-controller NODE --data-dir D``: change the metadata
quorum's voters of a reference cluster started with ``--config reference.kraft.version=1`` (KIP-853),
as ``kafka-metadata-quorum remove-controller`` / ``add-controller`` do.

``remove-controller`` reads the voter's directory id from DescribeQuorum v2 and asks a running
broker (which forwards to the active controller) for RemoveRaftVoter; the id is kept in
``D/voters.json`` for a later ``add-controller`` of the same node, which asks for AddRaftVoter with
the node's controller endpoint (the node must be running and caught up: it fetches as an observer
once removed). The answer is Kafka's error name; exit 0 when it is NONE, 1 otherwise, 2 when the
cluster or the node's directory id is unknown. On a kraft.version 0 cluster the answer is
UNSUPPORTED_VERSION. ``voter_change`` is the function a membership nemesis calls.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from fixtures.targets.cluster_launcher import ClusterError, ClusterPlan
from fixtures.targets.processes import is_alive
from fixtures.wire import WireClient
from fixtures.wire.voters import VoterAnswer, add_raft_voter, remove_raft_voter

METADATA = "__cluster_metadata"
CONTROLLER_LISTENER = "CONTROLLER"
TIMEOUT_MS = 30_000


def _broker(cluster: ClusterPlan) -> str:
    for node in cluster.nodes:
        if node.broker and is_alive(node.pid):
            return node.listen
    raise ClusterError("no running broker to ask")


def _directories(cluster: ClusterPlan) -> dict[str, str]:
    path = Path(cluster.data_dir) / "voters.json"
    loaded = json.loads(path.read_text()) if path.exists() else {}
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def _remember(cluster: ClusterPlan, node_id: int, directory: uuid.UUID) -> None:
    known = _directories(cluster)
    known[str(node_id)] = str(directory)
    (Path(cluster.data_dir) / "voters.json").write_text(json.dumps(known, indent=1) + "\n")


def voter_directory(wire: WireClient, node_id: int) -> uuid.UUID | None:
    """The directory id DescribeQuorum v2 gives voter ``node_id`` (None: not a voter, or none)."""
    topics = [{"topic_name": METADATA, "partitions": [{"partition_index": 0}]}]
    partition = wire.request("describe_quorum", 2, topics=topics).topics[0].partitions[0]
    for voter in partition.current_voters:
        if int(voter.replica_id) == node_id and voter.replica_directory_id is not None:
            found: uuid.UUID = voter.replica_directory_id
            return None if found.int == 0 else found
    return None


def voter_change(cluster: ClusterPlan, action: str, node_id: int) -> VoterAnswer:
    """Remove voter ``node_id`` from the quorum, or add it back (``action``: remove / add)."""
    node = next((n for n in cluster.nodes if n.node_id == node_id), None)
    if node is None or not node.controller:
        raise ClusterError(f"node {node_id} has no controller listener")
    with WireClient(_broker(cluster), timeout_s=TIMEOUT_MS / 1000 + 5) as wire:
        if action == "remove":
            directory = voter_directory(wire, node_id)
            if directory is None:
                raise ClusterError(f"node {node_id} is no voter with a directory id (kraft.version 1?)")
            _remember(cluster, node_id, directory)
            return remove_raft_voter(wire, 0, node_id, directory)
        known = _directories(cluster).get(str(node_id))
        if known is None:
            raise ClusterError(f"node {node_id}'s directory id is unknown: remove it with this command first")
        host, _, port = node.controller.rpartition(":")
        endpoint = {CONTROLLER_LISTENER: (host, int(port))}
        return add_raft_voter(wire, 0, node_id, uuid.UUID(known), endpoint, timeout_ms=TIMEOUT_MS)


def run(data_dir: str, action: str, node_id: int) -> int:
    cluster = ClusterPlan.load(data_dir)
    answer = voter_change(cluster, action, node_id)
    detail = f" ({answer.message})" if answer.message else ""
    print(f"{action}-controller {node_id}: {answer.error}{detail}")
    return 0 if answer.error == "NONE" else 1
