"""Share-group membership (KIP-932): epochs, the simple assignment, errors."""

from __future__ import annotations

import uuid

import pytest

from reference_impl.core.group.share_group import HeartbeatReply, ShareGroup, ShareGroupConfig, simple_assign
from reference_impl.protocol.errors import ErrorCode, KafkaError

T = uuid.UUID(int=1)
TOPICS = {"t": (T, 2)}


def _hb(
    g: ShareGroup, member: str, epoch: int, subs: list[str] | None = None, now: int = 0
) -> HeartbeatReply:
    return g.heartbeat(
        member_id=member,
        member_epoch=epoch,
        rack_id=None,
        subscribed_topic_names=subs,
        topics=TOPICS,
        mono_ms=now,
    )


def test_join_gets_every_partition_then_split_with_second_member() -> None:
    g = ShareGroup("g")
    r = _hb(g, "a", 0, ["t"])
    assert r.member_epoch == 1 and r.assignment == frozenset({(T, 0), (T, 1)})
    r = _hb(g, "b", 0, ["t"])
    assert r.member_epoch == 2 and r.assignment == frozenset({(T, 1)})
    assert g.state == "Reconciling"
    r = _hb(g, "a", 1)
    assert r.member_epoch == 2 and r.assignment == frozenset({(T, 0)})
    assert g.state == "Stable"
    assert _hb(g, "a", 2).assignment is None


def test_more_members_than_partitions_share_partitions() -> None:
    a = simple_assign(["a", "b", "c"], [(T, 0), (T, 1)])
    assert all(a.values()) and set().union(*a.values()) == {(T, 0), (T, 1)}


def test_errors() -> None:
    g = ShareGroup("g", ShareGroupConfig(max_size=1))
    _hb(g, "a", 0, ["t"])
    for member, epoch, subs, code in (
        ("a", 7, None, ErrorCode.fenced_member_epoch),
        ("z", 3, None, ErrorCode.unknown_member_id),
        ("b", 0, ["t"], ErrorCode.group_max_size_reached),
        ("", 0, ["t"], ErrorCode.invalid_request),
        ("z", -1, None, ErrorCode.unknown_member_id),
    ):
        with pytest.raises(KafkaError) as e:
            _hb(g, member, epoch, subs)
        assert e.value.code == code


def test_leave_and_session_expiry() -> None:
    g = ShareGroup("g")
    _hb(g, "a", 0, ["t"])
    _hb(g, "b", 0, ["t"], now=10)
    assert _hb(g, "a", -1).member_epoch == -1
    assert g.expire(45_009, TOPICS) == []
    assert g.expire(45_010, TOPICS) == ["b"]
    assert g.state == "Empty" and g.group_epoch == 4
