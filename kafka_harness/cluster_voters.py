"""``kafka-harness cluster remove-controller|add-controller NODE --data-dir D``: change the metadata
quorum's voters of a reference cluster started with ``--config reference.kraft.version=1`` (KIP-853),
as ``kafka-metadata-quorum remove-controller`` / ``add-controller`` do.

``remove-controller`` reads the voter's directory id from DescribeQuorum v2 and asks a running
broker (which forwards to the active controller) for RemoveRaftVoter; the id is kept in
``D/voters.json`` for a later ``add-controller`` of the same node, which asks for AddRaftVoter with
the node's controller endpoint (the node must be running and caught up: it fetches as an observer
once removed). The answer is Kafka's error name; exit 0 when it is NONE, 1 otherwise, 2 when the
cluster or the node's directory id is unknown. On a kraft.version 0 cluster the answer is
UNSUPPORTED_VERSION. The requests and the DescribeQuorum reading are the harness library's
(``fixtures/wire/voters.py``), which the membership nemesis uses too.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from fixtures.targets.cluster_launcher import ClusterError, ClusterPlan
from fixtures.targets.processes import is_alive
from fixtures.wire.voters import (
    VoterAnswer,
    VoterChangeError,
    add_voter,
    quorum_of,
    remove_voter,
)

TIMEOUT_S = 60.0


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
        return remove_voter(brokers, node_id, voter.directory_id, timeout_s=TIMEOUT_S, attempts=1)
    known = _directories(cluster).get(str(node_id))
    if known is None:
        raise ClusterError(f"node {node_id}'s directory id is unknown: remove it with this command first")
    host, _, port = node.controller.rpartition(":")
    return add_voter(brokers, node_id, uuid.UUID(known), (host, int(port)), timeout_s=TIMEOUT_S, attempts=1)


def run(data_dir: str, action: str, node_id: int) -> int:
    cluster = ClusterPlan.load(data_dir)
    answer = voter_change(cluster, action, node_id)
    detail = f" ({answer.message})" if answer.message else ""
    print(f"{action}-controller {node_id}: {answer.error}{detail}")
    return 0 if answer.error == "NONE" else 1
