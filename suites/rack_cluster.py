"""A cluster for follower fetching (KIP-392): brokers in at least two racks with a leader that
names a preferred read replica (Kafka's ``replica.selector.class``).

On ``--target reference`` the cases launch one shaped for them, with the run's security: 3 brokers in
racks a, b, c with Kafka's ``RackAwareReplicaSelector`` (``broker.rack`` per node through
``launch_fresh(node_configs=...)``). Any other target is used as it is: its racks come from Metadata,
and a target whose brokers declare fewer than two racks skips the cases (follower fetching cannot
be observed there; configure ``broker.rack`` and ``replica.selector.class`` to check it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.targets import TargetUnavailableError
from fixtures.targets.session import TargetSession
from fixtures.wire import Capabilities, Router, WireClient, ops

SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
RACKS = {1: "a", 2: "b", 3: "c"}
"""The racks of the launched reference."""
RECORDS = 5


class RackCluster:
    """The launched cluster: a router over it and its capabilities."""

    def __init__(self, bootstrap: str, configured: dict[int, str] | None = None) -> None:
        self.bootstrap = bootstrap
        self.configured = configured
        """The racks the cluster was launched with (None: a target as it is)."""
        self.clients: list[WireClient] = []
        first = self._open(bootstrap.split(",")[0])
        self.caps = Capabilities(first.api_versions())
        answer = first.request("metadata", self.caps.best("metadata", lo=1), topics=[])
        brokers = {int(b.node_id): f"{b.host}:{int(b.port)}" for b in answer.brokers}
        self.racks: dict[int, str | None] = {int(b.node_id): b.rack for b in answer.brokers}
        """Each broker's rack as Metadata lists it."""
        self.router = Router(first, self._open, brokers, self.caps)
        self.fetch_version = self.caps.best("fetch", lo=11)
        self.count = 0

    def _open(self, address: str) -> WireClient:
        client = WireClient(address)
        self.clients.append(client)
        return client

    def rack(self, node: int) -> str:
        rack = self.racks.get(node)
        assert rack, f"broker {node} lists no rack"
        return rack

    def topic_with_records(self) -> tuple[str, int, int]:
        """A fresh 3-replica topic holding RECORDS records (acks=all, so every follower fetched them):
        its name, leader and one follower in another rack than the leader's."""
        self.count += 1
        name = f"kip392-{self.count}-{int(time.time() * 1000)}"
        ops.check(
            ops.create_topic(self.router, self.caps, name, 1, replication_factor=3).error_code,
            f"CreateTopics {name}",
        )
        self.router.wait_for_topic(name, 1)
        answer = ops.produce_values(self.router, self.caps, name, [b"v%d" % i for i in range(RECORDS)])
        ops.check(answer.error_code, f"Produce acks=all to {name}")
        leader = self.router.leader_of(name)
        assert leader is not None, f"{name} has no leader"
        described = ops.metadata(self.router, self.caps, [name])
        replicas = [int(n) for n in described.topics[0].partitions[0].replica_nodes]
        others = [n for n in replicas if self.racks.get(n) and self.racks.get(n) != self.racks.get(leader)]
        assert others, f"{name}-0: no replica outside the leader's rack ({replicas}, racks {self.racks})"
        return name, leader, min(others)

    def fetch(self, node: int, topic: str, offset: int = 0, **options: Any) -> Any:
        options.setdefault("version", self.fetch_version)
        options.setdefault("max_wait_ms", 0)
        _r, part = ops.fetch(self.router.node(node), self.caps, topic, offset, **options)
        assert part is not None, f"broker {node} left {topic}-0 out of its answer"
        return part

    def close(self) -> None:
        for client in self.clients:
            client.close()


def rack_cluster(session: TargetSession) -> Iterator[RackCluster]:
    """The body of a module-scoped fixture: the cluster (launched on a reference run, else the run's
    target), closed after; skips when a reference cluster cannot run here or the target's brokers
    are in fewer than two racks."""
    if session.spec.kind != "reference":
        try:
            cluster = RackCluster(session.target().bootstrap_servers)
        except TargetUnavailableError as exc:
            pytest.skip(f"target unavailable: {exc}")
        try:
            if len({r for r in cluster.racks.values() if r}) < 2:
                pytest.skip(f"the target's brokers are in fewer than two racks ({cluster.racks}): follower "
                            "fetching needs broker.rack (and replica.selector.class on leaders)")  # fmt: skip
            yield cluster
        finally:
            cluster.close()
        return
    try:
        target = session.launch_fresh(
            [f"replica.selector.class={SELECTOR}"],
            brokers=len(RACKS),
            node_configs={n: [f"broker.rack={rack}"] for n, rack in RACKS.items()},
        )
    except TargetUnavailableError as exc:
        pytest.skip(f"a reference cluster cannot run here: {exc}")
    with target:
        cluster = RackCluster(target.bootstrap_servers, dict(RACKS))
        try:
            yield cluster
        finally:
            cluster.close()
