"""``process.roles``: the roles a node takes from the setting and the quorum's voters, and the clear
errors for combinations Kafka refuses too."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reference_impl.core.configs.model import ConfigError
from reference_impl.core.kraft.roles import BROKER_ROLE, CONTROLLER_ROLE, node_roles

VOTERS = {3: ("127.0.0.1", 1), 4: ("127.0.0.1", 2)}


@pytest.mark.parametrize(
    ("value", "node", "roles"),
    [
        ("", 3, {BROKER_ROLE, CONTROLLER_ROLE}),  # a voter: combined mode
        ("", 1, {BROKER_ROLE}),  # an observer
        ("controller", 3, {CONTROLLER_ROLE}),
        (" broker , controller ", 4, {BROKER_ROLE, CONTROLLER_ROLE}),
        ("broker", 1, {BROKER_ROLE}),
    ],
)
def test_roles_from_setting_and_voters(value: str, node: int, roles: set[str]) -> None:
    assert node_roles(value, node, VOTERS) == roles


@pytest.mark.parametrize(
    ("value", "node", "says"),
    [
        ("controller", 1, "not in controller.quorum.voters"),
        ("broker", 3, "is a voter, so it must be a controller"),
        ("broker,zookeeper", 1, "unknown role(s) ['zookeeper']"),
    ],
)
def test_refused_combinations_name_the_problem(value: str, node: int, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        node_roles(value, node, VOTERS)
    assert says in str(refused.value)


def test_broker_command_refuses_a_controller_outside_the_quorum() -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "kafka_harness", "broker",
            "--node-id", "7", "--storage", "memory", "--listen", "127.0.0.1:0",
            "--controller-quorum-voters", "3@127.0.0.1:1",
            "--config", "process.roles=controller",
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "node 7 is not in controller.quorum.voters" in done.stderr
