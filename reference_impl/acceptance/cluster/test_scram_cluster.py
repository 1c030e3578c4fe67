"""Issue 18: SCRAM credentials on a 3-node combined reference cluster, kept as Kafka keeps them.

AlterUserScramCredentials sent to any broker is forwarded to the active controller (KIP-590,
``KafkaApis`` ``maybeForwardToController``), which writes ``UserScramCredentialRecord`` /
``RemoveUserScramCredentialRecord`` (``metadata/src/main/java/org/apache/kafka/controller/
ScramControlManager.java``) to the metadata log; every broker replays them
(``metadata/src/main/java/org/apache/kafka/image/ScramImage.java``) and answers
DescribeUserScramCredentials alike; the credentials survive the restart of a node and the loss
of the active controller. Figures (seconds until every node agrees) are printed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.targets import Target, launch
from fixtures.wire import WireClient
from fixtures.wire import scram_admin as scram

from .workload import CLUSTER_CONFIGS, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.cluster_full]  # on demand (KH_CLUSTER_FULL=1): ~20 s

NODES = [1, 2, 3]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir = tmp_path_factory.mktemp("scram-cluster")
    with launch("reference", workdir=workdir, brokers=len(NODES), broker_configs=CLUSTER_CONFIGS) as target:
        yield target


def _client(target: Target, node: int) -> WireClient:
    return WireClient(f"127.0.0.1:{target.node(node).advertised_port}", timeout_s=20)


def _users(target: Target, node: int) -> dict[str, tuple[tuple[str, int], ...]]:
    with _client(target, node) as client:
        _top, described = scram.describe(client, None)
    return {u: r.credentials for u, r in described.items()}


def _agree(target: Target, nodes: list[int], expected: dict[str, tuple[tuple[str, int], ...]]) -> bool:
    return all(_users(target, n) == expected for n in nodes)


def test_credentials_replicate_and_survive_restarts(cluster: Target) -> None:
    for node in NODES:  # each through another broker: forwarded to the controller
        with _client(cluster, node) as client:
            done = scram.alter(client, upsertions=[scram.upsertion(f"u{node}", "SCRAM-SHA-512", "pw", 8192)])
        assert done[f"u{node}"].error == "NONE", done
    expected: dict[str, tuple[tuple[str, int], ...]] = {f"u{n}": (("SCRAM-SHA-512", 8192),) for n in NODES}
    took = wait_for(lambda: _agree(cluster, NODES, expected), 30, "every broker lists the three users")
    print(f"FIGURE scram-replicated-s={took:.2f}")
    with _client(cluster, 2) as client:
        assert scram.alter(client, deletions=[scram.deletion("u1", "SCRAM-SHA-512")])["u1"].error == "NONE"
    expected.pop("u1")
    wait_for(lambda: _agree(cluster, NODES, expected), 30, "every broker forgot u1")
    cluster.node(3).restart()
    took = wait_for(lambda: _agree(cluster, NODES, expected), 60, "the restarted node replays the users")
    print(f"FIGURE scram-after-restart-s={took:.2f}")
