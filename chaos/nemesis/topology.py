"""Where the proxies sit: one in front of every broker for clients, one per direction and broker pair.

Clients must not bypass the proxies, so each broker listens on a private port and advertises
its proxy's port (Tansu ``--advertised-listener-url``, the reference broker
``--advertised-listener``; :func:`fixtures.targets.launch` takes ``listen_ports`` and
``advertised_ports``). Broker-to-broker proxies are named ``broker-A-to-B`` (traffic A sends to
B) so a partition can cut one direction; they are created only for targets whose brokers can be
told to reach their peers through given addresses (the replicated reference cluster), and the
names and selections below already cover them. Such a cluster's voters also listen on a
controller listener (the quorum, registrations and heartbeats, forwarded admin requests), reached
through ``controller-A-to-B`` proxies: a partition cuts those links as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import requests

from fixtures.targets import free_port

K = TypeVar("K")

CREATE_ATTEMPTS = 3
"""How many times :meth:`Topology.create` plans fresh ports after one was taken under it."""


def client_proxy(node_id: int) -> str:
    return f"client-to-{node_id}"


def broker_proxy(source: int, dest: int) -> str:
    return f"broker-{source}-to-{dest}"


def controller_proxy(source: int, dest: int) -> str:
    return f"controller-{source}-to-{dest}"


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
    controller_ports: dict[int, int] = field(default_factory=dict)
    """Voter id -> the port its controller listener listens on (the controller proxies' upstream)."""
    controller_peer_ports: dict[tuple[int, int], int] = field(default_factory=dict)
    """(source, voter) -> the port source uses to reach the voter's controller listener."""
    proxied: bool = True
    """False for a target no proxy can front (it advertises the port it listens on): clients
    reach the brokers directly, and there are no links to cut."""
    addresses: dict[int, str] = field(default_factory=dict)
    """Broker id -> HOST:PORT clients bootstrap from, for a cluster started elsewhere (node spec)."""
    existing: list[str] = field(default_factory=list)
    """Proxies that were already on the Toxiproxy server (a node spec's): nothing here creates them."""

    @classmethod
    def plan(
        cls, api_url: str, node_ids: list[int], *, broker_links: bool = False, voters: list[int] | None = None
    ) -> Topology:
        """``voters`` (default: the first three nodes, as the reference cluster plans them) get a
        controller listener and, with ``broker_links``, a proxy from every other node to it."""
        topology = cls(api_url, list(node_ids), broker_links=broker_links)
        for node in node_ids:
            topology.listen_ports[node] = free_port()
            topology.advertised_ports[node] = free_port()
        if broker_links:
            for a in node_ids:
                for b in node_ids:
                    if a != b:
                        topology.peer_ports[(a, b)] = free_port()
            for v in node_ids[:3] if voters is None else voters:
                topology.controller_ports[v] = free_port()
                for a in node_ids:
                    if a != v:
                        topology.controller_peer_ports[(a, v)] = free_port()
        return topology

    @classmethod
    def direct(cls, node_ids: list[int]) -> Topology:
        """No proxies: each broker listens on, and advertises, one free port."""
        topology = cls("", list(node_ids), proxied=False)
        for node in node_ids:
            topology.listen_ports[node] = topology.advertised_ports[node] = free_port()
        return topology

    @classmethod
    def existing_on(cls, api_url: str | None, node_ids: list[int], addresses: dict[int, str]) -> Topology:
        """A cluster started elsewhere (:mod:`chaos.nodes`): clients use ``addresses``; with a Toxiproxy
        server, the proxies already on it named as this module names them are the links to cut."""
        if api_url is None:
            return cls("", list(node_ids), proxied=False, addresses=dict(addresses))
        answer = requests.get(f"{api_url}/proxies", timeout=10)
        answer.raise_for_status()
        names = sorted(answer.json())
        topology = cls(api_url, list(node_ids), addresses=dict(addresses), existing=names)
        pairs = [(a, b) for a in node_ids for b in node_ids if a != b]
        topology.broker_links = any(broker_proxy(a, b) in names for a, b in pairs)
        topology.controller_peer_ports = {(a, b): 0 for a, b in pairs if controller_proxy(a, b) in names}
        return topology

    def proxies(self) -> list[dict[str, Any]]:
        """The /populate body for this topology."""
        if self.existing:
            return [{"name": name} for name in self.existing]
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
        for (a, v), port in sorted(self.controller_peer_ports.items()):
            out.append(
                {
                    "name": controller_proxy(a, v),
                    "listen": f"127.0.0.1:{port}",
                    "upstream": f"127.0.0.1:{self.controller_ports[v]}",
                    "enabled": True,
                }
            )
        return out

    def create(self) -> None:
        """Create every proxy. Nothing listens on the planned ports yet (brokers start after this),
        so a port taken since it was planned is survivable: the ports are planned afresh and the
        proxies created again, a bounded number of times."""
        if not self.proxied:
            return
        for attempt in range(CREATE_ATTEMPTS):
            answer = requests.post(f"{self.api_url}/populate", json=self.proxies(), timeout=10)
            if answer.status_code == 201:
                return
            if "address already in use" not in answer.text or self.existing or attempt + 1 == CREATE_ATTEMPTS:
                break
            self.delete()
            self._plan_ports_afresh()
        raise RuntimeError(f"Toxiproxy refused the proxies: {answer.status_code} {answer.text}")

    def _plan_ports_afresh(self) -> None:
        _fresh_ports(self.listen_ports)
        _fresh_ports(self.advertised_ports)
        _fresh_ports(self.peer_ports)
        _fresh_ports(self.controller_ports)
        _fresh_ports(self.controller_peer_ports)

    def delete(self) -> None:
        for proxy in self.proxies():
            requests.delete(f"{self.api_url}/proxies/{proxy['name']}", timeout=10)

    def ports_of(self, nodes: list[int]) -> list[int]:
        """Every port the nodes themselves listen on: client listeners and controller listeners."""
        return [self.listen_ports[n] for n in nodes] + [
            self.controller_ports[n] for n in nodes if n in self.controller_ports
        ]

    @property
    def bootstrap(self) -> str:
        if self.addresses:
            return ",".join(self.addresses[n] for n in self.node_ids)
        return ",".join(f"127.0.0.1:{self.advertised_ports[n]}" for n in self.node_ids)

    # --- selections used by partitions -------------------------------------------------------

    def client_links(self, nodes: list[int] | None = None) -> list[str]:
        return [client_proxy(n) for n in (self.node_ids if nodes is None else nodes)]

    def links_between(self, side_a: list[int], side_b: list[int]) -> list[str]:
        """Broker and controller links crossing from one side to the other, both directions."""
        if not self.broker_links:
            return []
        pairs = [(a, b) for a in side_a for b in side_b if a != b] + [
            (b, a) for a in side_a for b in side_b if a != b
        ]
        return [broker_proxy(a, b) for a, b in pairs] + self._controller_links(pairs)

    def replication_links(self, node: int) -> list[str]:
        """The broker links between ``node`` and every other node, both ways (replica fetches), not
        the controller links: it still heartbeats and changes its ISR."""
        if not self.broker_links:
            return []
        others = [n for n in self.node_ids if n != node]
        return [broker_proxy(node, b) for b in others] + [broker_proxy(b, node) for b in others]

    def _controller_links(self, pairs: list[tuple[int, int]]) -> list[str]:
        return [controller_proxy(a, b) for a, b in pairs if (a, b) in self.controller_peer_ports]

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
            far = [(a, b) for b in self.node_ids if b != a and b not in neighbours]
            cut += [broker_proxy(a, b) for a, b in far] + self._controller_links(far)
        return cut


def _fresh_ports(ports: dict[K, int]) -> None:
    for key in ports:
        ports[key] = free_port()
