"""A reference cluster for follower fetching (KIP-392): 3 brokers in racks a, b, c with Kafka's
``RackAwareReplicaSelector`` (``replica.selector.class``), launched by the cases that need it
whatever the run's ``--target`` (``broker.rack`` per node through ``launch(node_configs=...)``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.targets import TargetUnavailableError, launch
from fixtures.wire import Capabilities, Router, WireClient, ops

SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
RACKS = {1: "a", 2: "b", 3: "c"}
RECORDS = 5


class RackCluster:
    """The launched cluster: a router over it and its capabilities."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.clients: list[WireClient] = []
        first = self._open(bootstrap.split(",")[0])
        self.caps = Capabilities(first.api_versions())
        answer = first.request("metadata", self.caps.best("metadata", lo=1), topics=[])
        brokers = {int(b.node_id): f"{b.host}:{int(b.port)}" for b in answer.brokers}
        self.router = Router(first, self._open, brokers, self.caps)
        self.fetch_version = self.caps.best("fetch", lo=11)
        self.count = 0

    def _open(self, address: str) -> WireClient:
        client = WireClient(address)
        self.clients.append(client)
        return client

    def topic_with_records(self) -> tuple[str, int, int]:
        """A fresh 3-replica topic holding RECORDS records (acks=all, so every follower fetched them):
        its name, leader and one follower."""
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
        follower = min(n for n in RACKS if n != leader)
        return name, leader, follower

    def fetch(self, node: int, topic: str, offset: int = 0, **options: Any) -> Any:
        options.setdefault("version", self.fetch_version)
        options.setdefault("max_wait_ms", 0)
        _r, part = ops.fetch(self.router.node(node), self.caps, topic, offset, **options)
        assert part is not None, f"broker {node} left {topic}-0 out of its answer"
        return part

    def close(self) -> None:
        for client in self.clients:
            client.close()


def rack_cluster() -> Iterator[RackCluster]:
    """The body of a module-scoped fixture: the launched cluster, closed after; skips when a reference
    cluster cannot run here."""
    try:
        target = launch(
            "reference",
            brokers=3,
            broker_configs=[f"replica.selector.class={SELECTOR}"],
            node_configs={n: [f"broker.rack={rack}"] for n, rack in RACKS.items()},
        )
    except TargetUnavailableError as exc:
        pytest.skip(f"a reference cluster cannot run here: {exc}")
    with target:
        cluster = RackCluster(target.bootstrap_servers)
        try:
            yield cluster
        finally:
            cluster.close()
