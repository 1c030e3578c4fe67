"""KIP-848 consumer-protocol groups on the sans-IO broker: heartbeats, reconciliation, records, reload.

Kafka's behaviour as in ``GroupMetadataManager.consumerGroupHeartbeat`` and
``CurrentAssignmentBuilder`` (group-coordinator module); see reference_impl/core/group/consumer.py.
"""

from __future__ import annotations

import uuid
from typing import Any

from reference_impl.protocol.errors import ErrorCode

from ..core.harness import BrokerHarness, request
from .helpers import GROUP_CONFIGS, commit, committed, harness, topic


def hb(h: BrokerHarness, group: str, member: str, epoch: int, version: int = 1, **fields: Any) -> Any:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "rebalance_timeout": 30_000 if epoch == 0 else -1,
        "topic_partitions": [] if epoch == 0 else None,
    }
    body.update(fields)
    return h.call(request(68, version, **body))


def owned(h: BrokerHarness, response: Any) -> set[tuple[str, int]]:
    names = {info.topic_id: name for name, info in h.broker.image.topics.items()}
    assert response.assignment is not None
    return {(names[t.topic_id], int(p)) for t in response.assignment.topic_partitions for p in t.partitions}


def tps(h: BrokerHarness, parts: set[tuple[str, int]]) -> list[dict[str, Any]]:
    by: dict[uuid.UUID, list[int]] = {}
    for name, p in parts:
        by.setdefault(h.broker.image.topics[name].topic_id, []).append(p)
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in by.items()]


def cg_describe(h: BrokerHarness, group: str) -> Any:
    return h.call(request(69, 1, group_ids=[group], include_authorized_operations=False)).groups[0]


def test_two_members_reconcile_revoke_before_assign() -> None:
    h = harness()
    topic(h, "t", 4)
    a = hb(h, "g", "a", 0, subscribed_topic_names=["t"])
    assert (a.error_code, a.member_epoch, owned(h, a)) == (ErrorCode.none, 1, {("t", p) for p in range(4)})
    b = hb(h, "g", "b", 0, subscribed_topic_names=["t"])
    # b's target partitions are still a's: b moves to epoch 2 holding nothing yet
    assert (b.error_code, b.member_epoch, owned(h, b)) == (ErrorCode.none, 2, set())
    a2 = hb(h, "g", "a", 1, topic_partitions=tps(h, {("t", p) for p in range(4)}))
    keep = owned(h, a2)
    assert a2.member_epoch == 1 and len(keep) == 2  # must revoke two first, stays at epoch 1
    b2 = hb(h, "g", "b", 2)
    assert b2.assignment is None and cg_describe(h, "g").group_state == "Reconciling"
    a3 = hb(h, "g", "a", 1, topic_partitions=tps(h, keep))  # a shows it revoked
    assert (a3.member_epoch, a3.assignment) == (2, None)  # same partitions, new epoch
    b3 = hb(h, "g", "b", 2)
    assert owned(h, b3) == {("t", p) for p in range(4)} - keep
    d = cg_describe(h, "g")
    assert (d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) == ("Stable", 2, 2, "uniform")
    listed = h.call(request(16, 5, states_filter=[], types_filter=["consumer"])).groups
    assert [(x.group_id, x.group_type, x.group_state) for x in listed] == [("g", "consumer", "Stable")]


def test_fencing_and_errors() -> None:
    h = harness("group.consumer.max.size=2")
    topic(h, "t", 2)
    assert hb(h, "g", "a", 0, subscribed_topic_names=["t"]).member_epoch == 1
    assert hb(h, "g", "a", 5).error_code == ErrorCode.fenced_member_epoch
    assert hb(h, "g", "zz", 1).error_code == ErrorCode.unknown_member_id
    assert hb(h, "g", "b", 0, subscribed_topic_names=["t"]).error_code == ErrorCode.none
    assert hb(h, "g", "x", 0, subscribed_topic_names=["t"]).error_code == ErrorCode.group_max_size_reached
    assert hb(h, "g", "b", -1).member_epoch == -1
    assert hb(h, "g", "c", 0).error_code == ErrorCode.invalid_request  # neither names nor regex
    assert hb(h, "g", "", 0, subscribed_topic_names=["t"]).error_code == ErrorCode.invalid_request
    assert hb(h, "g", "a", 1, server_assignor="nope").error_code == ErrorCode.unsupported_assignor
    bad = hb(h, "r", "x", 0, subscribed_topic_regex="(?<=a)b")
    assert bad.error_code == ErrorCode.invalid_regular_expression
    assert cg_describe(h, "r").error_code == ErrorCode.group_id_not_found  # the refusal made no group
    assert cg_describe(h, "nope").error_code == ErrorCode.group_id_not_found
    left = hb(h, "g", "a", -1)
    assert (left.error_code, left.member_epoch) == (ErrorCode.none, -1)
    assert cg_describe(h, "g").group_state == "Empty"


def test_static_member_rejoins_with_its_assignment_and_regex() -> None:
    h = harness()
    topic(h, "orders-1", 2)
    topic(h, "other", 2)
    a = hb(h, "g", "a", 0, instance_id="i1", subscribed_topic_regex="orders-.*")
    assert owned(h, a) == {("orders-1", 0), ("orders-1", 1)}
    taken = hb(h, "g", "b", 0, instance_id="i1", subscribed_topic_regex="orders-.*")
    assert taken.error_code == ErrorCode.unreleased_instance_id
    gone = hb(h, "g", "a", -2, instance_id="i1")
    assert gone.member_epoch == -2
    back = hb(h, "g", "a2", 0, instance_id="i1", subscribed_topic_regex="orders-.*")
    assert (back.error_code, back.member_epoch, owned(h, back)) == (
        ErrorCode.none,
        a.member_epoch,
        owned(h, a),
    )


def test_offsets_with_member_epochs_and_reload() -> None:
    h = harness()
    topic(h, "t", 2)
    a = hb(h, "g", "a", 0, subscribed_topic_names=["t"])
    codes = commit(h, "g", {("t", 0): 5}, generation=a.member_epoch, member_id="a")
    assert codes == {("t", 0): ErrorCode.none}
    stale = commit(h, "g", {("t", 0): 6}, generation=a.member_epoch + 1, member_id="a")
    assert stale == {("t", 0): ErrorCode.stale_member_epoch}
    before = cg_describe(h, "g")
    restarted = BrokerHarness(*GROUP_CONFIGS, store=h.store, now_ms=h.now_ms + 1000)
    after = cg_describe(restarted, "g")
    assert (after.group_epoch, after.assignment_epoch, after.members[0].member_epoch) == (
        before.group_epoch,
        before.assignment_epoch,
        before.members[0].member_epoch,
    )
    assert after.members[0].assignment == before.members[0].assignment
    again = hb(restarted, "g", "a", a.member_epoch)
    assert (again.error_code, again.member_epoch) == (ErrorCode.none, a.member_epoch)
    restarted.advance(45_001)  # nobody heartbeats: the session expires, the member is fenced
    assert cg_describe(restarted, "g").group_state == "Empty"


def test_offset_delete_on_a_consumer_group() -> None:
    """OffsetDelete (Kafka's ``GroupMetadataManager.deleteOffsets``): a topic a member subscribes to is
    GROUP_SUBSCRIBED_TO_TOPIC; another topic's offsets go."""
    h = harness()
    topic(h, "t", 1)
    topic(h, "u", 1)
    a = hb(h, "g", "a", 0, subscribed_topic_names=["t"])
    assert commit(h, "g", {("u", 0): 3}, generation=a.member_epoch, member_id="a") == {
        ("u", 0): ErrorCode.none
    }
    answer = h.call(
        request(
            47,
            0,
            group_id="g",
            topics=[{"name": n, "partitions": [{"partition_index": 0}]} for n in ("t", "u")],
        )
    )
    codes = {t.name: t.partitions[0].error_code for t in answer.topics}
    assert (answer.error_code, codes) == (
        ErrorCode.none,
        {"t": ErrorCode.group_subscribed_to_topic, "u": ErrorCode.none},
    )


def test_offsets_expire_and_an_empty_consumer_group_goes() -> None:
    """Offsets of a consumer-protocol group expire by commit time unless a member subscribes to
    their topic; an empty group whose offsets all expired is removed (``offsets.retention.minutes``)."""
    h = harness("offsets.retention.minutes=1", "offsets.retention.check.interval.ms=1000")
    topic(h, "t", 1)
    topic(h, "u", 1)
    a = hb(h, "g", "a", 0, subscribed_topic_names=["t"])
    both = commit(h, "g", {("t", 0): 1, ("u", 0): 2}, generation=a.member_epoch, member_id="a")
    assert both == {("t", 0): ErrorCode.none, ("u", 0): ErrorCode.none}
    for _ in range(7):  # 70 s, heartbeating: the member keeps t's offset, u's expires
        h.advance(10_000)
        assert hb(h, "g", "a", a.member_epoch).error_code == ErrorCode.none
    assert committed(h, "g", [("t", 0), ("u", 0)]) == {("t", 0): 1, ("u", 0): -1}
    assert hb(h, "g", "a", -1).error_code == ErrorCode.none
    h.advance(70_000)
    assert cg_describe(h, "g").error_code == ErrorCode.group_id_not_found


def test_a_member_that_does_not_revoke_in_its_rebalance_timeout_is_fenced() -> None:
    """``GroupMetadataManager`` schedules the rebalance timeout while a member must revoke: a member
    that keeps heartbeating without giving its partitions up is removed when it expires, and the
    partitions go to the others."""
    h = harness()
    topic(h, "t", 2)
    a = hb(h, "g", "a", 0, subscribed_topic_names=["t"], rebalance_timeout=20_000)
    hb(h, "g", "b", 0, subscribed_topic_names=["t"])
    told = hb(h, "g", "a", a.member_epoch, topic_partitions=tps(h, {("t", 0), ("t", 1)}))
    assert len(owned(h, told)) == 1  # a must give one partition up
    for _ in range(3):  # 30 s of heartbeats that never report the revocation
        h.advance(10_000)
        beat = hb(h, "g", "a", a.member_epoch)
    assert beat.error_code == ErrorCode.unknown_member_id
    b = hb(h, "g", "b", 2, topic_partitions=[])
    assert b.error_code == ErrorCode.none
    d = cg_describe(h, "g")
    assert [m.member_id for m in d.members] == ["b"]
