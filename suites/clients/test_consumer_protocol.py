"""KIP-848 consumer-protocol groups through real clients (``group.protocol=consumer``).

A group of three members consumes a topic of six partitions; one member leaves halfway. Each
member commits what it processed before giving a partition up (its revoke callback), and the
coordinator hands a partition to another member only after its owner revoked it (KIP-848's
revoke-before-assign), so every record is processed exactly once across the leave.
Clients without the protocol (the ``consumer_protocol`` feature) and targets that do not
advertise ConsumerGroupHeartbeat (API 68) skip.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from fixtures.clients import CONSUMER_PROTOCOL, Client, ConsumingMember
from fixtures.wire import Capabilities

FEATURE = "Consumer groups (KIP-848)"
PARTITIONS = 6
RECORDS = 3000
PHASE_TIMEOUT_S = 120.0


def _wait(members: dict[str, ConsumingMember], done: Callable[[], bool], phase: str) -> None:
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    while time.monotonic() < deadline:
        for name, m in members.items():
            assert m.error() is None, f"{phase}: member {name} failed: {m.error()}"
        if done():
            return
        time.sleep(0.2)
    held = {name: m.assignment() for name, m in members.items()}
    raise AssertionError(f"{phase}: not reached within {PHASE_TIMEOUT_S:.0f}s; members held {held}")


@pytest.mark.requires("consumer_group_heartbeat")
def test_exactly_once_across_a_member_leaving(
    kafka_client: Client, caps: Capabilities, topic_factory: Callable[..., str], unique: Callable[[str], str]
) -> None:
    """KIP-848: three consumer-protocol members split six partitions (each holds some, none twice);
    after one leaves, the other two take its partitions from its committed positions: every
    record of both halves is processed once, none twice."""
    kafka_client.require("group", CONSUMER_PROTOCOL)
    topic, group = topic_factory(partitions=PARTITIONS), unique("g")
    half = RECORDS // 2
    kafka_client.produce(topic, [(i % PARTITIONS, None, b"a%d" % i) for i in range(half)])
    members: dict[str, ConsumingMember] = {}
    all_seen: list[tuple[int, int]] = []

    def total() -> list[tuple[int, int]]:
        return all_seen + [r for m in members.values() for r in m.seen()]

    def balanced() -> bool:
        shares = [m.assignment() or frozenset() for m in members.values()]
        union = frozenset().union(*shares)
        return all(shares) and len(union) == PARTITIONS and sum(len(s) for s in shares) == PARTITIONS

    started = time.monotonic()
    try:
        for name in ("a", "b", "c"):
            members[name] = kafka_client.consuming_member(group, topic, group_protocol="consumer")
        _wait(members, lambda: balanced() and len(total()) >= half, "three members consume the first half")
        balanced_s = time.monotonic() - started
        leaving = members.pop("a")
        leaving.close()
        all_seen.extend(leaving.seen())
        kafka_client.produce(topic, [(i % PARTITIONS, None, b"b%d" % i) for i in range(half, RECORDS)])
        _wait(members, lambda: balanced() and len(set(total())) >= RECORDS, "two members consume the rest")
    finally:
        for m in members.values():
            m.close()
    seen = total()
    duplicates = len(seen) - len(set(seen))
    per_partition = {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
    wanted = {(p, o) for p, n in per_partition.items() for o in range(n)}
    print(
        f"consumer protocol: {RECORDS} records, 3 members then 2, first half + balance in {balanced_s:.1f}s, "
        f"all in {time.monotonic() - started:.1f}s, duplicates {duplicates}"
    )
    assert set(seen) == wanted, (
        f"missing {sorted(wanted - set(seen))[:5]}, extra {sorted(set(seen) - wanted)[:5]}"
    )
    assert duplicates == 0, f"{duplicates} records processed twice"
