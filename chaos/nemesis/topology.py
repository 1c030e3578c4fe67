"""Where the proxies sit: one in front of every broker for clients, one per direction and broker pair.

Clients must not bypass the proxies, so each broker listens on a private port and advertises
its proxy's port (Tansu ``--advertised-listener-url``, the reference broker
``--advertised-listener``; :func:`fixtures.targets.launch` takes ``listen_ports`` and
``advertised_ports``). Broker-to-broker proxies are named ``broker-A-to-B`` (traffic A sends to
B) so a partition can cut one direction; they are created only for targets whose brokers can be
told to reach their peers through given addresses (the replicated reference cluster), and the
names and selections below already cover them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import requests

from fixtures.targets import free_port


def client_proxy(node_id: int) -> str:
    return f"client-to-{node_id}"


def broker_proxy(source: int, dest: int) -> str:
    return f"broker-{source}-to-{dest}"


@dataclass
class Topology:
    """Proxy names and addresses for a target of ``node_ids``, created on one Toxiproxy server."""

    api_url: str
    node_ids: list[int]
    listen_ports: dict[int, int] = field(default_factory=dict)
    """Broker id -> the port the broker itself listens on (the proxies' upstream)."""
    advertised_ports: dict[int, int] = field(default_factory=dict)
    """Broker id -> the client proxy's port, which the broker advertises."""
    broker_links: bool = False
    peer_ports: dict[tuple[int, int], int] = field(default_factory=dict)
    """(source, dest) -> the port source uses to reach dest, when broker links are proxied."""
    proxied: bool = True
    """False for a target no proxy can front (it advertises the port it listens on): clients
    reach the brokers directly, and there are no links to cut."""

    @classmethod
    def plan(cls, api_url: str, node_ids: list[int], *, broker_links: bool = False) -> Topology:
        topology = cls(api_url, list(node_ids), broker_links=broker_links)
        for node in node_ids:
            topology.listen_ports[node] = free_port()
            topology.advertised_ports[node] = free_port()
        if broker_links:
            for a in node_ids:
                for b in node_ids:
                    if a != b:
                        topology.peer_ports[(a, b)] = free_port()
        return topology

    @classmethod
    def direct(cls, node_ids: list[int]) -> Topology:
        """No proxies: each broker listens on, and advertises, one free port."""
        topology = cls("", list(node_ids), proxied=False)
        for node in node_ids:
            topology.listen_ports[node] = topology.advertised_ports[node] = free_port()
        return topology

    def proxies(self) -> list[dict[str, Any]]:
        """The /populate body for this topology."""
        if not self.proxied:
            return []
        out: list[dict[str, Any]] = [
            {
                "name": client_proxy(n),
                "listen": f"127.0.0.1:{self.advertised_ports[n]}",
                "upstream": f"127.0.0.1:{self.listen_ports[n]}",
                "enabled": True,
            }
            for n in self.node_ids
        ]
        for (a, b), port in sorted(self.peer_ports.items()):
            out.append(
                {
                    "name": broker_proxy(a, b),
                    "listen": f"127.0.0.1:{port}",
                    "upstream": f"127.0.0.1:{self.listen_ports[b]}",
                    "enabled": True,
                }
            )
        return out

    def create(self) -> None:
        if not self.proxied:
            return
        answer = requests.post(f"{self.api_url}/populate", json=self.proxies(), timeout=10)
        if answer.status_code != 201:
            raise RuntimeError(f"Toxiproxy refused the proxies: {answer.status_code} {answer.text}")

    def delete(self) -> None:
        for proxy in self.proxies():
            requests.delete(f"{self.api_url}/proxies/{proxy['name']}", timeout=10)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.advertised_ports[n]}" for n in self.node_ids)

    # --- selections used by partitions -------------------------------------------------------

    def client_links(self, nodes: list[int] | None = None) -> list[str]:
        return [client_proxy(n) for n in (self.node_ids if nodes is None else nodes)]

    def links_between(self, side_a: list[int], side_b: list[int]) -> list[str]:
        """Broker links crossing from one side to the other, both directions."""
        if not self.broker_links:
            return []
        return [broker_proxy(a, b) for a in side_a for b in side_b if a != b] + [
            broker_proxy(b, a) for a in side_a for b in side_b if a != b
        ]

    def isolate(self, nodes: list[int]) -> list[str]:
        """Every link that reaches ``nodes``: their client proxies and their broker links."""
        others = [n for n in self.node_ids if n not in nodes]
        return self.client_links(nodes) + self.links_between(nodes, others)

    def ring(self) -> list[str]:
        """Jepsen's majority ring: each node sees only its neighbours (a majority for 5 nodes)."""
        if not self.broker_links or len(self.node_ids) < 3:
            return []
        n = len(self.node_ids)
        cut = []
        for i, a in enumerate(self.node_ids):
            neighbours = {self.node_ids[(i - 1) % n], self.node_ids[(i + 1) % n]}
            cut += [broker_proxy(a, b) for b in self.node_ids if b != a and b not in neighbours]
        return cut
