"""Issue 20: client quotas on a 3-node combined reference cluster, kept as Kafka keeps them.

AlterClientQuotas sent to any broker is forwarded to the active controller (KIP-590; Kafka 4's
``KafkaApis`` always forwards it), which writes ``ClientQuotaRecord``
(``metadata/src/main/java/org/apache/kafka/controller/ClientQuotaControlManager.java``) to the
metadata log; every broker replays it (``metadata/src/main/java/org/apache/kafka/image/
ClientQuotasImage.java``) and answers DescribeClientQuotas alike; the quotas survive the restart
of a node. Figures (seconds until every node agrees) are printed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.targets import Target, launch
from fixtures.wire import WireClient
from fixtures.wire import client_quotas as cq

from .workload import CLUSTER_CONFIGS, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.cluster_full]  # on demand (KH_CLUSTER_FULL=1): ~20 s

NODES = [1, 2, 3]
Quotas = dict[cq.Entity, dict[str, float]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir = tmp_path_factory.mktemp("quotas-cluster")
    with launch("reference", workdir=workdir, brokers=len(NODES), broker_configs=CLUSTER_CONFIGS) as target:
        yield target


def _client(target: Target, node: int) -> WireClient:
    return WireClient(f"127.0.0.1:{target.node(node).advertised_port}", timeout_s=20)


def _quotas(target: Target, node: int) -> Quotas:
    with _client(target, node) as client:
        top, found = cq.describe(client, [], version=1)
    assert top == "NONE", top
    return found


def _agree(target: Target, expected: Quotas) -> bool:
    return all(_quotas(target, n) == expected for n in NODES)


def test_quotas_replicate_and_survive_restarts(cluster: Target) -> None:
    for node in NODES:  # each through another broker: forwarded to the controller
        with _client(cluster, node) as client:
            done = cq.alter(
                client, [(cq.entity(user=f"u{node}"), {"producer_byte_rate": 1024 * node})], version=1
            )
        assert [r.error for r in done] == ["NONE"], done
    expected: Quotas = {cq.entity(user=f"u{n}"): {"producer_byte_rate": 1024.0 * n} for n in NODES}
    took = wait_for(lambda: _agree(cluster, expected), 30, "every broker lists the three quotas")
    print(f"FIGURE quotas-replicated-s={took:.2f}")
    with _client(cluster, 2) as client:
        gone = cq.alter(client, [(cq.entity(user="u1"), {"producer_byte_rate": None})], version=0)
    assert [r.error for r in gone] == ["NONE"], gone
    expected.pop(cq.entity(user="u1"))
    wait_for(lambda: _agree(cluster, expected), 30, "every broker forgot u1's quota")
    cluster.node(3).restart()
    took = wait_for(lambda: _agree(cluster, expected), 60, "the restarted node replays the quotas")
    print(f"FIGURE quotas-after-restart-s={took:.2f}")
