"""Where a KRaft node reaches its peers' controller listeners, and ``controller.quorum.bootstrap.servers``.

Kafka's sources (read, not copied):

* ``raft/src/main/java/org/apache/kafka/raft/QuorumConfig.java``: ``controller.quorum.bootstrap.servers``
  is a list of ``{host}:{port}`` entries (``parseBootstrapServers``: a host and a port each, else a
  ConfigException); with it and no ``controller.quorum.voters`` a node finds the quorum by asking
  those endpoints.
* ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java`` (constructor): the bootstrap
  servers become nodes with "decreasing negative ids" from -2, and the ``RequestManager``
  (``RequestManager.java``) sends an observer's Fetch to a random one of them until it knows the
  leader; ``UnattachedState.java``: a replica that knows no leader learns it "through random Fetch
  requests to the bootstrap servers or through BeginQuorumEpoch".
* ``FetchResponse.json`` (v16+, tagged ``NodeEndpoints``) and ``KafkaRaftClient.buildFetchResponse``:
  a Fetch answer carries the endpoint of the leader it names on the listener the request came in
  on, so an observer that asked a bootstrap server (or a follower) can fetch from the leader next.
* ``raft/src/main/java/org/apache/kafka/raft/VoterSet.java``: a voter's endpoints are part of the
  voter set (``VotersRecord``), which is how every replica reaches a voter added at run time
  (AddRaftVoter names the new voter's listeners).

So a node's peer addresses are, in order: ``controller.quorum.voters`` (the static map, which a
harness may point through per-link proxies), the latest voter set's endpoint on the controller
listener (kraft.version 1), and the leaders' endpoints learned from Fetch answers. A node started
with bootstrap servers only is a controller that is no voter yet: an observer of the metadata log
until AddRaftVoter adds it (``kafka-storage format --no-initial-controllers``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..configs.model import BOOTSTRAP_SERVERS, parse_bootstrap_servers
from ..raft.client import RaftClient

FIRST_BOOTSTRAP_ID = -2
"""KafkaRaftClient's id of the first bootstrap server; the next is -3, and so on."""
MAX_LEARNED = 1_024
"""Leader endpoints remembered at most (a Fetch answer names one; ids churn only with new nodes)."""

Address = tuple[str, int]
MAX_PORT = 65_535
MAX_NODE_ENDPOINTS = 64
"""NodeEndpoints read from one Fetch answer at most (Kafka's name one, the leader's)."""
__all__ = [
    "BOOTSTRAP_SERVERS",
    "PeerAddresses",
    "bootstrap_only",
    "bootstrap_voters",
    "parse_bootstrap_servers",
]


def bootstrap_voters(servers: list[Address]) -> dict[int, Address]:
    """The bootstrap servers as KafkaRaftClient numbers them: -2, -3, ..."""
    return {FIRST_BOOTSTRAP_ID - i: address for i, address in enumerate(servers)}


def bootstrap_only(voters: Mapping[int, object]) -> bool:
    """``voters`` came from bootstrap servers (negative ids), not controller.quorum.voters."""
    return bool(voters) and all(v <= FIRST_BOOTSTRAP_ID for v in voters)


class PeerAddresses(Mapping[int, "Address"]):
    """Node id -> its controller listener's address, as this node's replica knows it. As a mapping
    it is the quorum's current voters with a known address (``ClusterQuorum.voters``: what
    forwarding, DescribeQuorum's and DescribeCluster's node lists read); :meth:`get` answers for
    any peer, bootstrap servers and learnt leaders too."""

    def __init__(self, static: Mapping[int, Address], raft: RaftClient, listener: str) -> None:
        self.static = dict(static)
        self.raft = raft
        self.listener = listener
        """The default controller listener's name (``controller.listener.names``' first)."""
        self.learned: dict[int, Address] = {}

    def voter_ids(self) -> frozenset[int]:
        """The quorum's voters: the latest voter set once the log holds one (kraft.version 1),
        else controller.quorum.voters (none when only bootstrap servers are known)."""
        membership = self.raft.membership
        if membership.dynamic and membership.history.latest_entry is not None:
            return frozenset(membership.voters.ids)
        return frozenset(v for v in self.static if v >= 0)

    def __getitem__(self, node_id: int) -> Address:
        found = self._address(node_id) if node_id in self.voter_ids() else None
        if found is None:
            raise KeyError(node_id)
        return found

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.voter_ids() and isinstance(node_id, int) and self.get(node_id) is not None

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(v for v in self.voter_ids() if self.get(v) is not None))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def get(self, node_id: int, default: Address | None = None) -> Address | None:  # type: ignore[override]
        """``node_id``'s controller address, voter or not (``default`` when unknown)."""
        return self._address(node_id) or default

    def _address(self, node_id: int) -> Address | None:
        found = self.static.get(node_id)
        if found is not None:
            return found
        voter = self.raft.membership.voters.get(node_id) if self.raft.membership.dynamic else None
        if voter is not None and voter.endpoints:
            endpoint = next((e for e in voter.endpoints if e.name == self.listener), voter.endpoints[0])
            return endpoint.host, endpoint.port
        return self.learned.get(node_id)

    def learn(self, response: Any) -> None:
        """A Fetch answer's ``NodeEndpoints`` (v16+): where the leader it names listens."""
        for node in (getattr(response, "node_endpoints", None) or ())[:MAX_NODE_ENDPOINTS]:
            node_id = int(node.node_id)
            if node_id < 0 or not 0 < int(node.port) <= MAX_PORT:
                continue
            if node_id not in self.learned and len(self.learned) >= MAX_LEARNED:
                self.learned.pop(next(iter(self.learned)))
            self.learned[node_id] = (str(node.host), int(node.port))

    def leader_endpoints(self, leader_id: int) -> list[dict[str, Any]]:
        """``NodeEndpoints`` of a Fetch answer naming ``leader_id``: its controller address, if known."""
        if leader_id < 0:
            return []
        address = self.get(leader_id)
        if address is None:
            return []
        return [{"node_id": leader_id, "host": address[0], "port": address[1], "rack": None}]
