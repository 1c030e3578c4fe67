"""Drive the group coordinator of a sans-IO broker: one connection per member, a virtual clock."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.errors import ErrorCode

from ..core.harness import BrokerHarness, request
from ..core.test_data_path import create

GROUP_CONFIGS = (
    "group.initial.rebalance.delay.ms=100",
    "group.min.session.timeout.ms=1000",
    "offsets.topic.num.partitions=5",
    "offsets.topic.replication.factor=1",
)


INITIAL_DELAY_MS = 100


def subscription(*topics: str, version: int = 0) -> bytes:
    """A ConsumerProtocolSubscription v0 (topics, no user data), laid out by hand from Kafka's schema."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def harness(*extra: str, store: Any = None) -> BrokerHarness:
    h = BrokerHarness(*GROUP_CONFIGS, *extra, store=store)
    find(h, "any")  # creates __consumer_offsets (answered COORDINATOR_NOT_AVAILABLE)
    return h


def find(h: BrokerHarness, key: str, key_type: int = 0, version: int = 3) -> Any:
    return h.call(request(10, version, key=key, key_type=key_type))


def topic(h: BrokerHarness, name: str, partitions: int = 1) -> None:
    create(h, name, partitions)


@dataclass
class Client:
    """One group member on its own connection, remembering what the coordinator told it."""

    h: BrokerHarness
    group: str
    instance_id: str | None = None
    session_ms: int = 10_000
    rebalance_ms: int = 30_000
    protocols: list[tuple[str, bytes]] = field(default_factory=lambda: [("range", subscription("t"))])
    protocol_type: str = "consumer"
    member_id: str = ""
    generation: int = -1
    cid: int = 0
    _pending: Any = None

    def __post_init__(self) -> None:
        self.cid = self.h.connect()

    # JoinGroup is parked: send, then read when the coordinator answers.
    def send_join(self, version: int = 9) -> None:
        self._pending = request(
            11,
            version,
            group_id=self.group,
            session_timeout=self.session_ms,
            rebalance_timeout=self.rebalance_ms,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type=self.protocol_type,
            protocols=[{"name": n, "metadata": m} for n, m in self.protocols],
        )
        self.h.send(self.cid, self._pending)

    def has_answer(self) -> bool:
        return bool(self.h.responses.get(self.cid))

    def read_join(self) -> Any:
        r = self.h.take(self.cid, self._pending)
        if r.member_id:
            self.member_id = r.member_id
        if r.error_code == ErrorCode.none:
            self.generation = int(r.generation_id)
        return r

    def join(self, version: int = 9) -> Any:
        """Join, answering MEMBER_ID_REQUIRED as a client does; returns the last answer (may be parked)."""
        self.send_join(version)
        if not self.has_answer():
            return None
        r = self.read_join()
        if r.error_code == ErrorCode.member_id_required:
            return self.join(version)
        return r

    def send_sync(self, assignments: dict[str, bytes] | None = None, version: int = 5) -> None:
        self._pending = request(
            14,
            version,
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocols[0][0],
            assignments=[{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
        )
        self.h.send(self.cid, self._pending)

    def read_sync(self) -> Any:
        return self.h.take(self.cid, self._pending)

    def heartbeat(self, version: int = 4, *, new_connection: bool = False) -> ErrorCode:
        """A heartbeat (on a fresh connection if this one has a parked request, as a client's thread may)."""
        r = self.h.call(
            request(
                12,
                version,
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
            ),
            None if new_connection else self.cid,
        )
        return ErrorCode(r.error_code)

    def leave(self) -> Any:
        return self.h.call(
            request(
                13,
                5,
                group_id=self.group,
                members=[
                    {"member_id": self.member_id, "group_instance_id": self.instance_id, "reason": None}
                ],
            ),
            self.cid,
        )


def commit(
    h: BrokerHarness,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    generation: int = -1,
    member_id: str = "",
    instance_id: str | None = None,
    metadata: str | None = "",
    version: int = 9,
) -> dict[tuple[str, int], ErrorCode]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (t, p), o in offsets.items():
        by_topic.setdefault(t, []).append(
            {
                "partition_index": p,
                "committed_offset": o,
                "committed_leader_epoch": 0,
                "committed_metadata": metadata,
            }
        )
    r = h.call(
        request(
            8,
            version,
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        )
    )
    return {(t.name, int(p.partition_index)): ErrorCode(p.error_code) for t in r.topics for p in t.partitions}


def fetch(
    h: BrokerHarness, group: str, partitions: list[tuple[str, int]] | None, stable: bool = False
) -> Any:
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    r = h.call(request(9, 9, groups=[{"group_id": group, "topics": topics}], require_stable=stable))
    return r.groups[0]


def committed(
    h: BrokerHarness, group: str, partitions: list[tuple[str, int]] | None = None
) -> dict[tuple[str, int], int]:
    g = fetch(h, group, partitions)
    assert g.error_code == ErrorCode.none
    return {(t.name, int(p.partition_index)): int(p.committed_offset) for t in g.topics for p in t.partitions}


def describe(h: BrokerHarness, group: str, version: int = 5) -> Any:
    return h.call(request(15, version, groups=[group], include_authorized_operations=False)).groups[0]


def first_generation(h: BrokerHarness, a: Client, b: Client) -> tuple[Client, Client]:
    """Two new members join a new group together; returns (leader, follower), both holding generation 1."""
    for c in (a, b):
        c.join()
    h.advance(2 * INITIAL_DELAY_MS)  # the second arrival extends the initial delay once
    ra, _ = a.read_join(), b.read_join()
    return (a, b) if ra.leader == a.member_id else (b, a)


def stabilise(h: BrokerHarness, *clients: Client) -> dict[str, bytes]:
    """Everyone (re)joins and syncs; the leader assigns each member its own id as the assignment."""
    for c in clients:
        c.send_join()
    for _ in range(3):
        for c in clients:
            if c.has_answer():
                r = c.read_join()
                if r.error_code == ErrorCode.member_id_required:
                    c.send_join()
    for _ in range(20):  # a new group's first join waits out the (extended) initial rebalance delay
        if all(c.has_answer() for c in clients):
            break
        h.advance(INITIAL_DELAY_MS)
    joins = {}
    for c in clients:
        assert c.has_answer(), f"{c.member_id or c.instance_id} got no join answer"
        r = c.read_join()
        assert r.error_code == ErrorCode.none, r
        joins[c.member_id] = r
    leader = next(c for c in clients if joins[c.member_id].leader == c.member_id)
    plan = {m.member_id: m.member_id.encode() for m in joins[leader.member_id].members}
    for c in clients:
        if c is not leader:
            c.send_sync()
    leader.send_sync(plan)
    for c in clients:
        r = c.read_sync()
        assert r.error_code == ErrorCode.none, r
        assert bytes(r.assignment) == c.member_id.encode()
    return plan
