"""``kafka-harness cluster up``'s plan: per-link addresses, combined and separate controllers, and
the clear refusals of arguments that describe no cluster (exit 2, nothing started)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reference_impl.cluster.launcher import ClusterError, plan_cluster


def _option(command: list[str], name: str) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command) if word == name]


def test_every_link_takes_its_own_address(tmp_path: Path) -> None:
    """Each node has a client listener and each voter a controller listener, and every link (client,
    broker-to-broker, node-to-controller) can be pointed at a proxy of its own."""
    plan = plan_cluster(
        tmp_path,
        3,
        listen_ports=[9001, 9002, 9003],
        advertised_ports=[7001, 7002, 7003],
        peer_addresses={(2, 1): ("127.0.0.1", 8021), (3, 1): ("127.0.0.1", 8031)},
        controller_ports={1: 6001, 2: 6002, 3: 6003},
        controller_addresses={(2, 1): ("127.0.0.1", 5021)},
    )
    one, two, three = plan.nodes
    assert plan.bootstrap_servers == "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
    assert two.peers == {"1": "127.0.0.1:8021", "3": "127.0.0.1:9003"}
    assert three.peers == {"1": "127.0.0.1:8031", "2": "127.0.0.1:9002"}
    assert two.controller_peers == {"1": "127.0.0.1:5021", "3": "127.0.0.1:6003"}
    assert (one.controller, two.controller) == ("127.0.0.1:6001", "127.0.0.1:6002")
    assert _option(two.command, "--controller-quorum-voters") == [
        "1@127.0.0.1:5021,2@127.0.0.1:6002,3@127.0.0.1:6003"
    ]
    assert _option(one.command, "--listen") == ["127.0.0.1:9001"]
    assert _option(one.command, "--advertised-listener") == ["127.0.0.1:7001"]
    configs = _option(two.command, "--config")
    assert "inter.broker.addresses=1=127.0.0.1:8021,3=127.0.0.1:9003" in configs
    assert {"listeners=CONTROLLER://127.0.0.1:6002", "controller.listener.names=CONTROLLER"} <= set(configs)
    assert all(n.voter and n.broker for n in plan.nodes)


def test_separate_controllers_follow_the_brokers(tmp_path: Path) -> None:
    plan = plan_cluster(tmp_path, 2, controllers=3, separate_controllers=True)
    assert [(n.node_id, n.broker, n.voter) for n in plan.nodes] == [
        (1, True, False),
        (2, True, False),
        (3, False, True),
        (4, False, True),
        (5, False, True),
    ]
    assert len(plan.bootstrap_servers.split(",")) == 2
    for node in plan.nodes:
        configs = _option(node.command, "--config")
        roles = [c for c in configs if c.startswith("process.roles=")]
        assert roles == ([] if node.broker else ["process.roles=controller"])
        voters = _option(node.command, "--controller-quorum-voters")[0]
        assert [v.split("@")[0] for v in voters.split(",")] == ["3", "4", "5"]
        listeners = [c for c in configs if c.startswith("listeners=")]
        if node.broker:  # a client listener only: brokers reach the controllers on theirs
            assert listeners == [] and _option(node.command, "--listen") == [node.listen]
        else:  # a controller listener only, which is the node's one address
            assert listeners == [f"listeners=CONTROLLER://{node.controller}"]
            assert node.listen == node.controller
            assert "--listen" not in node.command


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"listen_ports": [9001, 9002]}, "3 nodes need 3 listen and advertised ports each"),
        ({"peer_addresses": {(1, 4): ("h", 1)}}, "not between two of nodes 1..3: ['1:4']"),
        ({"peer_addresses": {(2, 2): ("h", 1)}}, "['2:2']"),
        ({"controllers": 4}, "--controllers must be 1..3"),
        ({"controllers": 7, "separate_controllers": True}, "must be 1..5 with separate controllers"),
    ],
)
def test_refused_plans_say_why(tmp_path: Path, kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(ClusterError) as refused:
        plan_cluster(tmp_path, 3, **kwargs)  # type: ignore[arg-type]
    assert says in str(refused.value)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--peer-address", "1-2=x"], "'1-2=x' is not A:B[/CONTROLLER]=HOST:PORT"),
        (["--peer-address", "1:2/SSL=h:1"], "the listener is PLAINTEXT or CONTROLLER"),
        (["--peer-address", "1:4/CONTROLLER=h:1"], "not between two of nodes 1..3: ['1:4']"),
        (["--controller-ports", "6001,6002"], "3 voters need 3 controller ports"),
        (["--listen-ports", "9001,x"], "is not a comma-separated list of ports"),
        (["--advertised-ports", "0,1,2"], "a port is 1..65535"),
        (["--listen-ports", "9001"], "3 nodes need 3 listen and advertised ports each"),
    ],
)
def test_cluster_up_refuses_bad_addresses(tmp_path: Path, args: list[str], says: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_harness",
            "cluster",
            "up",
            "--brokers",
            "3",
            "--data-dir",
            str(tmp_path),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
    assert not (tmp_path / "cluster.json").exists()
