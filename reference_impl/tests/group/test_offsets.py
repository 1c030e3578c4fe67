"""OffsetCommit, OffsetFetch, OffsetDelete and DeleteGroups through the sans-IO broker."""

from __future__ import annotations

import uuid

from reference_impl.protocol.errors import ErrorCode

from ..core.harness import request
from .helpers import (
    INITIAL_DELAY_MS,
    Client,
    commit,
    committed,
    describe,
    fetch,
    harness,
    stabilise,
    subscription,
    topic,
)


def test_simple_commit_creates_a_group_and_fetch_returns_it() -> None:
    h = harness()
    topic(h, "t", 3)
    codes = commit(h, "simple", {("t", 0): 5, ("t", 2): 9}, metadata="note")
    assert codes == {("t", 0): ErrorCode.none, ("t", 2): ErrorCode.none}
    assert committed(h, "simple", [("t", 0), ("t", 1), ("t", 2)]) == {("t", 0): 5, ("t", 1): -1, ("t", 2): 9}
    g = fetch(h, "simple", [("t", 0)])
    p = g.topics[0].partitions[0]
    assert (p.committed_leader_epoch, p.metadata) == (0, "note")
    listed = h.call(request(16, 5, states_filter=[], types_filter=[])).groups
    assert [(x.group_id, x.group_state, x.protocol_type) for x in listed] == [("simple", "Empty", "")]


def test_fetch_all_topics_and_unknown_group() -> None:
    h = harness()
    topic(h, "a", 2)
    topic(h, "b", 1)
    commit(h, "g", {("a", 1): 3, ("b", 0): 4})
    assert committed(h, "g", None) == {("a", 1): 3, ("b", 0): 4}
    assert committed(h, "nobody", None) == {}
    assert committed(h, "nobody", [("a", 0)]) == {("a", 0): -1}


def test_offset_fetch_old_versions_and_many_groups() -> None:
    h = harness()
    topic(h, "t", 2)
    commit(h, "g1", {("t", 0): 1})
    commit(h, "g2", {("t", 1): 2})
    v1 = h.call(request(9, 1, group_id="g1", topics=[{"name": "t", "partition_indexes": [0, 1]}]))
    assert [(p.partition_index, p.committed_offset) for p in v1.topics[0].partitions] == [(0, 1), (1, -1)]
    v7_all = h.call(request(9, 7, group_id="g2", topics=None, require_stable=False))
    assert v7_all.error_code == ErrorCode.none
    assert [(t.name, p.partition_index, p.committed_offset) for t in v7_all.topics for p in t.partitions] == [
        ("t", 1, 2)
    ]
    v8 = h.call(
        request(9, 8, groups=[{"group_id": "g1", "topics": None}, {"group_id": "g2", "topics": None}])
    )
    assert [
        (g.group_id, [p.committed_offset for t in g.topics for p in t.partitions]) for g in v8.groups
    ] == [
        ("g1", [1]),
        ("g2", [2]),
    ]


def test_topic_ids_in_v10() -> None:
    h = harness()
    topic(h, "t", 1)
    tid = h.broker.image.topics["t"].topic_id
    ghost = uuid.uuid4()
    r = h.call(
        request(
            8,
            10,
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                {
                    "topic_id": tid,
                    "partitions": [{"partition_index": 0, "committed_offset": 7, "committed_metadata": ""}],
                },
                {
                    "topic_id": ghost,
                    "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
                },
            ],
        )
    )
    assert [(t.topic_id, t.partitions[0].error_code) for t in r.topics] == [
        (tid, ErrorCode.none),
        (ghost, ErrorCode.unknown_topic_id),
    ]
    f = h.call(
        request(9, 10, groups=[{"group_id": "g", "topics": [{"topic_id": tid, "partition_indexes": [0]}]}])
    )
    assert (f.groups[0].topics[0].topic_id, f.groups[0].topics[0].partitions[0].committed_offset) == (tid, 7)


def test_commit_errors_per_partition() -> None:
    h = harness("offset.metadata.max.bytes=8")
    topic(h, "t", 1)
    codes = commit(h, "g", {("t", 0): 1, ("t", 5): 1, ("missing", 0): 1}, metadata="12345678")
    assert codes == {
        ("t", 0): ErrorCode.none,
        ("t", 5): ErrorCode.unknown_topic_or_partition,
        ("missing", 0): ErrorCode.unknown_topic_or_partition,
    }
    assert commit(h, "g", {("t", 0): 2}, metadata="123456789") == {
        ("t", 0): ErrorCode.offset_metadata_too_large
    }
    assert committed(h, "g", [("t", 0)]) == {("t", 0): 1}


def test_commit_generation_checks() -> None:
    h = harness()
    topic(h, "t", 1)
    a = Client(h, "g", protocols=[("range", subscription("t"))])
    stabilise(h, a)
    tp = {("t", 0): 10}
    assert commit(h, "g", tp, generation=a.generation, member_id=a.member_id) == {("t", 0): ErrorCode.none}
    assert commit(h, "g", tp, generation=a.generation - 1, member_id=a.member_id) == {
        ("t", 0): ErrorCode.illegal_generation
    }
    assert commit(h, "g", tp, generation=a.generation, member_id="other") == {
        ("t", 0): ErrorCode.unknown_member_id
    }
    assert commit(h, "g", tp) == {("t", 0): ErrorCode.unknown_member_id}  # a non-member, group not Empty
    assert commit(h, "absent", tp, generation=3, member_id="m", version=9) == {
        ("t", 0): ErrorCode.group_id_not_found
    }
    assert commit(h, "absent", tp, generation=3, member_id="m", version=8) == {
        ("t", 0): ErrorCode.illegal_generation
    }


def test_commit_while_completing_rebalance_is_rebalance_in_progress() -> None:
    h = harness()
    topic(h, "t", 1)
    a = Client(h, "g")
    a.join()
    h.advance(INITIAL_DELAY_MS)
    a.read_join()
    codes = commit(h, "g", {("t", 0): 1}, generation=a.generation, member_id=a.member_id)
    assert codes == {("t", 0): ErrorCode.rebalance_in_progress}


def test_commit_keeps_the_session_alive() -> None:
    h = harness()
    topic(h, "t", 1)
    a = Client(h, "g", session_ms=3000)
    stabilise(h, a)
    for i in range(5):
        h.advance(2000)
        assert commit(h, "g", {("t", 0): i}, generation=a.generation, member_id=a.member_id) == {
            ("t", 0): ErrorCode.none
        }
    assert a.heartbeat() == ErrorCode.none


def test_offset_delete_refuses_subscribed_topics() -> None:
    h = harness()
    topic(h, "t", 1)
    topic(h, "u", 1)
    a = Client(h, "g", protocols=[("range", subscription("t"))])
    stabilise(h, a)
    commit(h, "g", {("t", 0): 1, ("u", 0): 2}, generation=a.generation, member_id=a.member_id)
    r = h.call(
        request(
            47,
            0,
            group_id="g",
            topics=[
                {"name": "t", "partitions": [{"partition_index": 0}]},
                {"name": "u", "partitions": [{"partition_index": 0}]},
            ],
        )
    )
    assert r.error_code == ErrorCode.none
    assert {(t.name, t.partitions[0].error_code) for t in r.topics} == {
        ("t", ErrorCode.group_subscribed_to_topic),
        ("u", ErrorCode.none),
    }
    assert committed(h, "g", [("t", 0), ("u", 0)]) == {("t", 0): 1, ("u", 0): -1}
    missing = h.call(request(47, 0, group_id="nope", topics=[]))
    assert missing.error_code == ErrorCode.group_id_not_found


def test_offset_delete_on_a_non_consumer_group_with_members_is_non_empty() -> None:
    h = harness()
    a = Client(h, "connect-group", protocol_type="connect", protocols=[("default", b"")])
    stabilise(h, a)
    r = h.call(request(47, 0, group_id="connect-group", topics=[]))
    assert r.error_code == ErrorCode.non_empty_group


def test_delete_groups() -> None:
    h = harness()
    topic(h, "t", 1)
    commit(h, "empty", {("t", 0): 4})
    busy = Client(h, "busy")
    stabilise(h, busy)
    r = h.call(request(42, 2, groups_names=["empty", "busy", "unknown"]))
    assert [(x.group_id, x.error_code) for x in r.results] == [
        ("empty", ErrorCode.none),
        ("busy", ErrorCode.non_empty_group),
        ("unknown", ErrorCode.group_id_not_found),
    ]
    assert committed(h, "empty", [("t", 0)]) == {("t", 0): -1}
    assert describe(h, "empty", version=6).error_code == ErrorCode.group_id_not_found


def test_offsets_of_an_empty_group_expire_after_retention_and_the_group_goes() -> None:
    h = harness("offsets.retention.minutes=1", "offsets.retention.check.interval.ms=1000")
    topic(h, "t", 1)
    a = Client(h, "g", session_ms=2000)
    stabilise(h, a)
    commit(h, "g", {("t", 0): 3}, generation=a.generation, member_id=a.member_id)
    h.advance(2001)  # the member expires: the group is Empty from now
    assert describe(h, "g").group_state == "Empty"
    for _ in range(55):
        h.advance(1000)
    assert committed(h, "g", [("t", 0)]) == {("t", 0): 3}  # not yet a minute since the group emptied
    for _ in range(10):
        h.advance(1000)
    assert committed(h, "g", [("t", 0)]) == {("t", 0): -1}
    assert "g" not in h.broker.group_coordinator.groups


def test_stable_group_offsets_of_unsubscribed_topics_expire_but_subscribed_ones_stay() -> None:
    h = harness("offsets.retention.minutes=1", "offsets.retention.check.interval.ms=1000")
    topic(h, "t", 1)
    topic(h, "old", 1)
    a = Client(h, "g", session_ms=30_000, protocols=[("range", subscription("t"))])
    stabilise(h, a)
    commit(h, "g", {("t", 0): 1, ("old", 0): 2}, generation=a.generation, member_id=a.member_id)
    for _ in range(70):
        h.advance(1000)
        assert a.heartbeat() == ErrorCode.none
    assert committed(h, "g", [("t", 0), ("old", 0)]) == {("t", 0): 1, ("old", 0): -1}


def test_retention_time_of_old_commit_versions_sets_an_expire_timestamp() -> None:
    h = harness("offsets.retention.check.interval.ms=1000")
    topic(h, "t", 1)
    r = h.call(
        request(
            8,
            3,
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time=5000,
            topics=[
                {
                    "name": "t",
                    "partitions": [{"partition_index": 0, "committed_offset": 8, "committed_metadata": ""}],
                }
            ],
        )
    )
    assert r.topics[0].partitions[0].error_code == ErrorCode.none
    stored = h.broker.group_coordinator.offsets.get("g", ("t", 0))
    assert stored is not None and stored.expire_timestamp_ms == h.now_ms + 5000
    h.advance(4000)
    assert committed(h, "g", [("t", 0)]) == {("t", 0): 8}
    h.advance(2000)  # the explicit expiry passed, long before offsets.retention.minutes
    assert committed(h, "g", [("t", 0)]) == {("t", 0): -1}
