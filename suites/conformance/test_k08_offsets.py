"""Committed offsets: OffsetCommit (8), OffsetFetch (9), OffsetDelete (47).

Rules from the protocol guide (Offset Commit/Fetch API), seed D0-M14 (the consumer controls its
offset; the broker stores what it commits), D0-I37 (a stale generation is ILLEGAL_GENERATION),
KIP-709 (OffsetFetch v8 asks several groups at once), KIP-447 (require_stable), KIP-496
(OffsetDelete) and KIP-848 (OffsetCommit/OffsetFetch v10 name topics by id).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.wire import Capabilities, Router, ops

from .coordinators import groups_with_one_coordinator, stable
from .expect import expect, expect_code, expect_equal

FEATURE = "Committed offsets"
GUIDE = "Protocol guide, Offset Commit/Fetch"


@pytest.mark.versions("offset_commit")
def test_commit_round_trips_offset_and_metadata(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic_factory: Callable[..., str],
) -> None:
    """Seed D0-M14 and the protocol guide: an offset committed with metadata (a simple commit:
    generation -1, no member) is returned by OffsetFetch with the same metadata string; a partition
    never committed reads -1."""
    topic = topic_factory(partitions=2)
    group = unique("g")
    wire = router.to_coordinator(group)
    code = ops.commit_offset(wire, caps, group, topic, 42, metadata=f"kh-meta-v{version}", version=version)
    expect_code(code, "NONE", rule=GUIDE)
    error, got = ops.fetch_offsets(wire, caps, {group: [(topic, 0), (topic, 1)]})[group]
    expect_code(error, "NONE", rule=GUIDE)
    expect_equal(got[(topic, 0)][1:], (42, f"kh-meta-v{version}"), GUIDE, "(offset, metadata) read back")
    expect_equal(got[(topic, 1)][1], -1, GUIDE, "offset of a partition never committed")


@pytest.mark.versions("offset_fetch")
def test_fetch_at_every_version(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """Protocol guide, OffsetFetch: every version returns the committed offset and its metadata."""
    group = unique("g")
    wire = router.to_coordinator(group)
    expect_code(ops.commit_offset(wire, caps, group, topic, 17, metadata="meta"), "NONE", rule="setup")
    error, got = ops.fetch_offsets(wire, caps, {group: [(topic, 0)]}, version=version)[group]
    expect_code(error, "NONE", rule=GUIDE)
    expect_equal(got.get((topic, 0), (None, None, None))[1:], (17, "meta"), GUIDE, "(offset, metadata)")


@pytest.mark.requires("offset_fetch", min_version=2)
def test_fetch_all_partitions_of_a_group(
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic_factory: Callable[..., str],
) -> None:
    """KIP-88 (OffsetFetch v2): a null topic list returns every offset the group committed, and only
    those."""
    topic = topic_factory(partitions=3)
    group = unique("g")
    wire = router.to_coordinator(group)
    for partition, offset in ((0, 3), (2, 9)):
        ops.commit_offset(wire, caps, group, topic, offset, partition=partition)
    error, got = ops.fetch_offsets(wire, caps, {group: None}, version=caps.best("offset_fetch", lo=2))[group]
    expect_code(error, "NONE", rule="KIP-88")
    expect_equal(
        {k: v[1] for k, v in got.items()}, {(topic, 0): 3, (topic, 2): 9}, "KIP-88", "offsets of the group"
    )


@pytest.mark.requires("offset_fetch", min_version=8)
def test_fetch_several_groups_at_once(
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """KIP-709: OffsetFetch v8+ answers several groups in one request, each with its own offsets, and
    a group with no commits with -1 (groups with the same coordinator: a request goes to one, as an
    admin client splits its groups by coordinator)."""
    groups = groups_with_one_coordinator(router, unique, 3)
    wire = router.to_coordinator(groups[0])
    for i, group in enumerate(groups[:2]):
        home = router.to_coordinator(group)  # each group may have another coordinator
        expect_code(ops.commit_offset(home, caps, group, topic, 10 + i, metadata=group), "NONE", rule="setup")
    version = caps.best("offset_fetch")
    answer = ops.fetch_offsets(wire, caps, {g: [(topic, 0)] for g in groups}, version=version)
    got = {g: (answer[g][0].name, answer[g][1][(topic, 0)][1]) for g in groups if g in answer}
    wanted = {groups[0]: ("none", 10), groups[1]: ("none", 11), groups[2]: ("none", -1)}
    expect_equal(got, wanted, "KIP-709", "(error, offset) per group")


@pytest.mark.requires("offset_commit")
def test_later_commit_replaces_the_earlier_one(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """Seed D0-M14: the consumer controls its offset, which may move backwards; the last commit wins."""
    group = unique("g")
    wire = router.to_coordinator(group)
    for offset in (50, 20):
        expect_code(ops.commit_offset(wire, caps, group, topic, offset), "NONE", rule="Seed D0-M14")
    _e, got = ops.fetch_offsets(wire, caps, {group: [(topic, 0)]})[group]
    expect_equal(got[(topic, 0)][1], 20, "Seed D0-M14", "offset after committing 50 then 20")


@pytest.mark.requires("offset_commit")
def test_commit_to_unknown_topic(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """Protocol guide, OffsetCommit: committing for a topic that does not exist is
    UNKNOWN_TOPIC_OR_PARTITION (v10, which names topics by id, UNKNOWN_TOPIC_ID)."""
    group = unique("g")
    wire = router.to_coordinator(group)
    version = caps.best("offset_commit", hi=9)
    code = ops.commit_offset(wire, caps, group, unique("absent"), 1, version=version)
    expect_code(code, "UNKNOWN_TOPIC_OR_PARTITION", rule=GUIDE)


@pytest.mark.requires("offset_commit", min_version=1)
def test_commit_fencing_by_generation_and_member(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """Seed D0-I37 and the protocol guide, OffsetCommit: a member of the current generation commits;
    a stale generation is ILLEGAL_GENERATION and an unknown member UNKNOWN_MEMBER_ID, and neither
    changes the committed offset."""
    group = unique("g")
    wire = router.to_coordinator(group)
    m = stable(wire, caps, group)
    commit = ops.commit_offset
    expect_code(
        commit(wire, caps, group, topic, 8, generation=m.generation, member_id=m.member_id),
        "NONE",
        rule=GUIDE,
    )
    expect_code(
        commit(wire, caps, group, topic, 99, generation=m.generation + 3, member_id=m.member_id),
        "ILLEGAL_GENERATION",
        rule="Seed D0-I37",
    )
    expect_code(
        commit(wire, caps, group, topic, 99, generation=m.generation, member_id="kh-nobody"),
        "UNKNOWN_MEMBER_ID",
        rule=GUIDE,
    )
    _e, got = ops.fetch_offsets(wire, caps, {group: [(topic, 0)]})[group]
    expect_equal(got[(topic, 0)][1], 8, GUIDE, "offset after the refused commits")


@pytest.mark.requires("offset_delete")
def test_offset_delete_removes_the_commit(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-496: OffsetDelete removes a group's committed offset for a partition (the group has no
    members); OffsetFetch then reads -1. A group that does not exist is GROUP_ID_NOT_FOUND."""
    group = unique("g")
    wire = router.to_coordinator(group)
    expect_code(ops.commit_offset(wire, caps, group, topic, 12), "NONE", rule="setup")
    body = {"topics": [{"name": topic, "partitions": [{"partition_index": 0}]}]}
    answer = wire.request("offset_delete", caps.best("offset_delete"), body, group_id=group)
    expect_code(answer.error_code, "NONE", rule="KIP-496")
    expect_code(answer.topics[0].partitions[0].error_code, "NONE", rule="KIP-496")
    _e, got = ops.fetch_offsets(wire, caps, {group: [(topic, 0)]})[group]
    expect_equal(got[(topic, 0)][1], -1, "KIP-496", "offset after OffsetDelete")
    absent = unique("absent")  # asked of its own coordinator (others answer NOT_COORDINATOR)
    other = router.to_coordinator(absent).request(
        "offset_delete", caps.best("offset_delete"), body, group_id=absent
    )
    expect_code(other.error_code, "GROUP_ID_NOT_FOUND", rule="KIP-496", where="unknown group")


@pytest.mark.requires("offset_fetch", min_version=7)
def test_require_stable_without_pending_transaction(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-447: require_stable only matters while a transaction holds uncommitted offsets for the
    partition; with none pending the committed offset is returned as usual."""
    group = unique("g")
    wire = router.to_coordinator(group)
    expect_code(ops.commit_offset(wire, caps, group, topic, 4), "NONE", rule="setup")
    error, got = ops.fetch_offsets(wire, caps, {group: [(topic, 0)]}, require_stable=True)[group]
    expect_code(error, "NONE", rule="KIP-447")
    expect(got[(topic, 0)][0].value == 0 and got[(topic, 0)][1] == 4, "KIP-447", f"entry {got[(topic, 0)]}")
