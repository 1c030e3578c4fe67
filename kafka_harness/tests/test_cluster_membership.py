"""``kafka-harness cluster add-broker/remove-broker``: the added broker's command, the refusals (no
processes), and one run against a real three-node reference cluster: add a broker, move a
partition onto it, remove it (moved away, stopped, unregistered)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fixtures.targets.cluster_launcher import plan_cluster
from fixtures.targets.membership import MembershipPlanError, added_broker_command
from kafka_harness.cluster_cli import main as cluster_main
from kafka_harness.cluster_membership import plan_added_broker


def test_the_added_broker_takes_a_brokers_command_with_its_own_parts(tmp_path: Path) -> None:
    cluster = plan_cluster(tmp_path, 3, configs=["num.partitions=4"], node_configs={1: ["broker.rack=a"]})
    node = plan_added_broker(cluster)
    command = node.command
    assert node.node_id == 4 and not node.voter and node.broker
    assert command[command.index("--node-id") + 1] == "4"
    assert command[command.index("--listen") + 1] == node.listen
    assert command[command.index("--data-dir") + 1] == str(tmp_path.resolve() / "node-4")
    configs = [command[i + 1] for i, word in enumerate(command) if word == "--config"]
    assert "num.partitions=4" in configs and "controller.listener.names=CONTROLLER" in configs
    assert not any(c.startswith(("listeners=", "broker.rack=")) for c in configs)  # node 1's own
    peers = next(c for c in configs if c.startswith("inter.broker.addresses="))
    assert peers == "inter.broker.addresses=" + ",".join(f"{n.node_id}={n.listen}" for n in cluster.nodes)
    voters = command[command.index("--controller-quorum-voters") + 1]
    assert (
        voters == cluster.nodes[0].command[cluster.nodes[0].command.index("--controller-quorum-voters") + 1]
    )
    with pytest.raises(MembershipPlanError, match="secured"):
        added_broker_command(
            [*command, "--config", "advertised.listeners=SSL://h:1"], 5, "h", 1, tmp_path, {}
        )
    with pytest.raises(MembershipPlanError):
        added_broker_command(["python", "-m", "kafka_harness", "broker"], 5, "h", 1, tmp_path, {})


def test_cli_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cluster_main(["add-broker", "--data-dir", str(tmp_path / "none")]) == 2
    cluster = plan_cluster(tmp_path, 3)
    cluster.save()
    assert cluster_main(["remove-broker", "--node-id", "2", "--data-dir", str(tmp_path)]) == 2
    assert "RemoveRaftVoter" in capsys.readouterr().out
    assert cluster_main(["remove-broker", "--node-id", "9", "--data-dir", str(tmp_path)]) == 2
    assert cluster_main(["add-broker", "--node-id", "3", "--data-dir", str(tmp_path)]) == 2
    for bad in ("-1", "x", str(2**31)):
        with pytest.raises(SystemExit):
            cluster_main(["remove-broker", "--node-id", bad, "--data-dir", str(tmp_path)])


def test_add_move_onto_and_remove_a_broker_of_a_running_cluster(tmp_path: Path) -> None:
    """End to end on three reference nodes: add-broker, a partition moved onto it, remove-broker
    (moved away, stopped, unregistered: Metadata lists 1-3 again)."""
    from fixtures.wire import WireClient
    from fixtures.wire.membership import reassign, view, wait_moved

    started = time.monotonic()
    assert cluster_main(["up", "--brokers", "3", "--data-dir", str(tmp_path), "--timeout", "90"]) == 0
    try:
        assert cluster_main(["add-broker", "--data-dir", str(tmp_path), "--timeout", "60"]) == 0
        plan = json.loads((tmp_path / "cluster.json").read_text())
        addresses = [n["listen"] for n in plan["nodes"]]
        placed = [{"partition_index": 0, "broker_ids": [1, 2, 3]}]
        topic = {
            "name": "m",
            "num_partitions": -1,
            "replication_factor": -1,
            "assignments": placed,
            "configs": [],
        }
        with WireClient(addresses[0]) as conn:
            answer = conn.request("create_topics", 4, topics=[topic], timeout=15_000, validate_only=False)
            assert answer.topics[0].error_code.value == 0
        moves = {("m", 0): (1, 2, 4)}
        assert {k: c.value for k, c in reassign(addresses, moves).items()} == {("m", 0): 0}
        wait_moved(addresses, moves, 60)
        assert cluster_main(["remove-broker", "--node-id", "4", "--data-dir", str(tmp_path)]) == 0
        after = view(addresses[:3])
        assert after.brokers == (1, 2, 3)
        assert all(4 not in p.replicas for p in after.placements)
        assert [n["node_id"] for n in json.loads((tmp_path / "cluster.json").read_text())["nodes"]] == [
            1,
            2,
            3,
        ]
    finally:
        cluster_main(["down", "--data-dir", str(tmp_path)])
    print(f"add, move onto, remove on a 3-node cluster: {time.monotonic() - started:.1f} s")
