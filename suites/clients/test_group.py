"""Consumer groups through each client: members join and leave, partitions move."""

from __future__ import annotations

import time
from collections.abc import Callable

from fixtures.clients import Client, Member

FEATURE = "Consumer groups"
PARTITIONS = 6
PHASE_TIMEOUT_S = 120.0


def wait_balanced(members: dict[str, Member], phase: str) -> dict[str, frozenset[int]]:
    """Wait (bounded) until every member holds a non-empty share, no partition has two owners and every
    partition has one; fail with what each member held last."""
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    seen: dict[str, frozenset[int] | None] = {}
    while time.monotonic() < deadline:
        for name, m in members.items():
            assert m.error() is None, f"{phase}: member {name} failed: {m.error()}"
        seen = {name: m.assignment() for name, m in members.items()}
        shares = [s for s in seen.values() if s]
        if len(shares) == len(members):
            union = frozenset().union(*shares)
            if sum(len(s) for s in shares) == PARTITIONS and union == frozenset(range(PARTITIONS)):
                return {k: v for k, v in seen.items() if v}
        time.sleep(0.2)
    raise AssertionError(
        f"{phase}: no balanced assignment within {PHASE_TIMEOUT_S:.0f}s; members held {seen}"
    )


def test_rebalance(
    kafka_client: Client, topic_factory: Callable[..., str], unique: Callable[[str], str]
) -> None:
    """Protocol guide (group membership) and KIP-62: with two members each of the 6 partitions has exactly one
    owner; a third member joining and then one leaving each trigger a rebalance after which every member owns
    a share and no partition has two owners."""
    kafka_client.require("group")
    topic, group = topic_factory(partitions=PARTITIONS), unique("g")
    members: dict[str, Member] = {}
    try:
        members["a"] = kafka_client.group_member(group, topic)
        members["b"] = kafka_client.group_member(group, topic)
        two = wait_balanced(members, "two members")
        assert sorted(len(s) for s in two.values()) == [3, 3], f"two members: {two}"
        members["c"] = kafka_client.group_member(group, topic)
        three = wait_balanced(members, "a third member joined")
        assert sorted(len(s) for s in three.values()) == [2, 2, 2], f"three members: {three}"
        members.pop("a").close()
        after = wait_balanced(members, "member a left")
        assert set(after) == {"b", "c"}, f"after a left: {after}"
    finally:
        for m in members.values():
            m.close()
