"""The node-control spec (``--nodes``, :mod:`chaos.nodes`): what a spec must say, and a campaign that
drives a three-broker reference cluster started by hand (the test starts it, behind a Toxiproxy
holding the harness's proxy names) through the spec's shell commands only: kill, pause and a
partition of the leader, with the history valid and every command recorded."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from chaos.nemesis.topology import Topology
from chaos.nodes import NodeSpecError, load_nodes, missing_for, parse_nodes
from chaos.runner import Campaign, CampaignError, run
from chaos.toxiproxy.server import ServerThread
from fixtures.targets import launch


def _node(i: int, **commands: str) -> dict[str, Any]:
    return {"id": i, "address": f"127.0.0.1:{9000 + i}", **commands}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, '"nodes" list'),
        ({"nodes": []}, "1 to 64 nodes"),
        ({"nodes": [{"id": "1", "address": "h:1"}]}, '"id" is the broker id'),
        ({"nodes": [{"id": 1, "address": "h"}]}, "HOST:PORT"),
        ({"nodes": [_node(1, reboot="x")]}, "unknown keys ['reboot']"),
        ({"nodes": [_node(1, kill="kill {pidfile}")]}, "bad placeholder"),
        ({"nodes": [_node(1, kill="x" * 2001)]}, "1 to 2000 characters"),
        ({"nodes": [_node(1), _node(1)]}, "ids repeat"),
        ({"nodes": [_node(1)], "toxiproxy": "localhost:8474"}, "URL of a Toxiproxy"),
    ],
)
def test_a_bad_spec_says_what_is_wrong(raw: Any, message: str) -> None:
    with pytest.raises(NodeSpecError, match=re.escape(message)):
        parse_nodes(raw)


def test_a_spec_names_what_each_fault_lacks_and_fills_placeholders(tmp_path: Path) -> None:
    echo = "echo {id} {host} {port} {address} > " + str(tmp_path / "out")
    spec = parse_nodes({"nodes": [_node(1, kill=echo), _node(2, kill="true", start="true")]})
    assert sorted(missing_for(spec, ["kill", "pause"])) == [
        "kill needs 'start' for node 1",
        "pause needs 'pause' for node 1",
        "pause needs 'pause' for node 2",
        "pause needs 'resume' for node 1",
        "pause needs 'resume' for node 2",
    ]
    spec.nodes[0].kill()
    assert (tmp_path / "out").read_text() == "1 127.0.0.1 9001 127.0.0.1:9001\n"
    with pytest.raises(RuntimeError, match="no 'pause' command"):
        spec.nodes[0].pause()
    failing = parse_nodes({"nodes": [_node(3, kill="exit 3")]})
    with pytest.raises(RuntimeError, match="kill exited 3"):
        failing.nodes[0].kill()
    (tmp_path / "spec.json").write_text("{not json")
    with pytest.raises(NodeSpecError, match="not JSON"):
        load_nodes(tmp_path / "spec.json")


def test_nodes_needs_a_bootstrap_target_and_the_commands_its_faults_use(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"nodes": [_node(1, kill="true")]}))
    with pytest.raises(CampaignError, match="use --target bootstrap"):
        run(Campaign(target="reference", nodes_file=path, faults=["kill"]), progress=lambda _: None)
    with pytest.raises(CampaignError, match="kill needs 'start' for node 1"):
        run(
            Campaign(target="bootstrap:127.0.0.1:9001", nodes_file=path, faults=["kill"]),
            progress=lambda _: None,
        )
    with pytest.raises(CampaignError, match="need a Toxiproxy"):
        run(Campaign(target="bootstrap:127.0.0.1:9001", nodes_file=path, faults=["partition-leader"]),
            progress=lambda _: None)  # fmt: skip


def _scripts(directory: Path, node: Any) -> dict[str, str]:
    """Shell commands that control one hand-started broker through a pid file, as an operator's
    scripts would (the harness never sees the process, only these commands)."""
    pid, log = directory / f"node-{node.node_id}.pid", directory / f"node-{node.node_id}.log"
    pid.write_text(f"{node.pid}\n")
    command = " ".join(shlex.quote(part) for part in node.command)
    return {
        "kill": f"kill -KILL $(cat {pid})",
        "start": f"setsid {command} >> {log} 2>&1 < /dev/null & echo $! > {pid}",
        "stop": f"kill -CONT $(cat {pid}); kill -TERM $(cat {pid})",
        "pause": f"kill -STOP $(cat {pid})",
        "resume": f"kill -CONT $(cat {pid})",
        "running": f"kill -0 $(cat {pid})",
    }


@pytest.mark.chaos_full  # about 57 s: on demand (tox -e chaos, KH_CHAOS_FULL=1)
@pytest.mark.slow
def test_a_campaign_drives_a_hand_started_cluster_through_the_spec(tmp_path: Path) -> None:
    with ServerThread() as toxiproxy:
        topology = Topology.plan(toxiproxy.url, [1, 2, 3], broker_links=True)
        topology.create()
        with launch("reference", brokers=3, listen_ports=[topology.listen_ports[n] for n in (1, 2, 3)],
                    advertised_ports=[topology.advertised_ports[n] for n in (1, 2, 3)],
                    peer_ports=topology.peer_ports, controller_ports=topology.controller_ports,
                    controller_peer_ports=topology.controller_peer_ports,
                    broker_configs=["broker.session.timeout.ms=3000"]) as cluster:  # fmt: skip
            nodes = [{"id": n.node_id, "address": f"127.0.0.1:{topology.advertised_ports[n.node_id]}",
                      **_scripts(tmp_path, n)} for n in cluster.nodes]  # fmt: skip
            path = tmp_path / "nodes.json"
            path.write_text(json.dumps({"toxiproxy": toxiproxy.url, "nodes": nodes}))
            spec = load_nodes(path)
            campaign = Campaign(
                target=f"bootstrap:{nodes[0]['address']}", nodes_file=path, workload="queue",
                faults=["kill", "pause", "partition-leader"], time_s=36, rate=300, seed=63, rf=3, brokers=3,
                min_isr=2, partitions=2, restart_check=False, out_dir=tmp_path / "campaign",
            )  # fmt: skip
            lines: list[str] = []
            try:
                outcome = run(campaign, progress=lines.append)
            finally:
                for node in load_nodes(path).nodes:  # the processes the spec started are the test's to end
                    if node.is_running:
                        node.kill()
    print("\n".join(lines[-8:]))
    events = [e for e in outcome.nemesis_events if e["f"] == "start"]
    assert [e["fault"] for e in events] == ["pause", "partition-leader", "kill"], events  # seed 63's plan
    assert all("error" not in e for e in outcome.nemesis_events), outcome.nemesis_events
    assert outcome.result.valid is True, outcome.result.verdict_line()
    assert spec.node_ids == [1, 2, 3]
