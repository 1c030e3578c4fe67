"""Classic consumer groups: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13),
SyncGroup (14), DescribeGroups (15), ListGroups (16), DeleteGroups (42).

Rules from the protocol guide ("The Consumer Group protocol" and the Group Membership API),
KIP-62 (rebalance timeout, JoinGroup v1), KIP-394 (MEMBER_ID_REQUIRED, JoinGroup v4+), KIP-345
(static membership, FENCED_INSTANCE_ID, v5+), KIP-518 (ListGroups states filter, v4), KIP-1043
(DescribeGroups v6 answers GROUP_ID_NOT_FOUND) and the seed notes D0-I37 (generation fencing:
a stale generation gets ILLEGAL_GENERATION) and D0-M85/M91 (a rebalance is announced to members
through their heartbeats). Kafka's classic group coordinator (GroupMetadataManager) completes a
rebalance's join phase as soon as every known member has rejoined; only a new group waits
``group.initial.rebalance.delay.ms`` first.

Every join here uses the session timeout Kafka allows by default at the least (6 s) unless the
rule under test is about time; a group that must outlive several tests is kept alive by a
heartbeating thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, ops

from .coordinators import SESSION_MS, Member, stable
from .expect import expect, expect_code, expect_equal

FEATURE = "Consumer groups"
PROTOCOL_GUIDE = "Protocol guide, Group Membership API"


class Heartbeats:
    """Keeps one member alive from a thread with its own connection (stopped at teardown)."""

    def __init__(self, wire: WireClient, caps: Capabilities, member: Member) -> None:
        self.wire, self.caps, self.member = wire, caps, member
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            m = self.member
            try:
                code = ops.heartbeat(self.wire, self.caps, m.group, m.generation, m.member_id)
            except Exception as exc:  # the connection broke: report it, stop beating
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return
            if code.value != 0:
                self.errors.append(code.name)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


@pytest.fixture(scope="module")
def shared_group(bootstrap_servers: str, caps: Capabilities, target_session: Any) -> Iterator[Member]:
    """One Stable single-member group for the read-only checks of this module (kept alive)."""
    group = target_session.unique("g")
    with WireClient(bootstrap_servers.split(",")[0]) as probe:
        deadline = time.monotonic() + 30
        while True:
            code, _n, host, port = ops.find_coordinator(probe, caps, group)
            if code.value == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    address = f"{host}:{port}"
    with WireClient(address) as wire, WireClient(address) as beat_wire:
        member = stable(wire, caps, group, assignment=b"shared-assignment")
        beats = Heartbeats(beat_wire, caps, member)
        yield member
        beats.stop()
        ops.leave_group(wire, caps, group, member.member_id)


# -- FindCoordinator -------------------------------------------------------------------------------


@pytest.mark.versions("find_coordinator")
def test_find_coordinator_names_a_listed_broker(
    version: int, wire: WireClient, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """Protocol guide, FindCoordinator (seed D0-M84): the coordinator of a group is a broker the
    cluster lists in Metadata, with the same host and port (v4+ batches keys, KIP-699)."""
    group = unique("g")
    deadline = time.monotonic() + 30
    while True:
        code, node, host, port = ops.find_coordinator(wire, caps, group, version=version)
        if code.value == 0 or time.monotonic() > deadline:
            break
        expect_code(code, "COORDINATOR_NOT_AVAILABLE", rule="Protocol guide, FindCoordinator")
        time.sleep(0.2)
    expect_code(code, "NONE", rule="Protocol guide, FindCoordinator")
    brokers = {int(b.node_id): (b.host, int(b.port)) for b in ops.metadata(wire, caps, []).brokers}
    expect_equal(brokers.get(node), (host, port), "Protocol guide, FindCoordinator", f"coordinator {node}")


# -- JoinGroup and SyncGroup -----------------------------------------------------------------------


@pytest.mark.versions("join_group", lo=4)
def test_new_member_is_asked_to_rejoin_with_an_id(
    version: int, router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-394: from JoinGroup v4 a member joining with an empty member id is answered
    MEMBER_ID_REQUIRED at once, carrying the member id it must join with."""
    group = unique("g")
    wire = router.to_coordinator(group)
    answer = ops.join_group(wire, caps, group, version=version, session_timeout_ms=SESSION_MS)
    expect_code(answer.error_code, "MEMBER_ID_REQUIRED", rule="KIP-394")
    expect(bool(answer.member_id), "KIP-394", "MEMBER_ID_REQUIRED came without a member id")


@pytest.mark.requires("join_group")
def test_old_join_versions_are_not_asked_for_a_member_id(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-394: JoinGroup v3 and older cannot handle MEMBER_ID_REQUIRED; the coordinator assigns
    the member id and completes the join in the same exchange."""
    version = caps.best("join_group", hi=3)
    group = unique("g")
    wire = router.to_coordinator(group)
    answer = ops.join_group(
        wire, caps, group, version=version, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=SESSION_MS
    )
    expect_code(answer.error_code, "NONE", rule="KIP-394", where=f"JoinGroup v{version}")
    expect(bool(answer.member_id), "KIP-394", "no member id assigned")


@pytest.mark.requires("join_group")
def test_single_member_becomes_leader_and_gets_its_assignment(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """Protocol guide, Group Membership API: the only member is the leader, receives every member's
    protocol metadata, and after its SyncGroup receives the assignment it gave itself; the
    generation is positive (seed D0-M91: each completed rebalance starts a new generation)."""
    group = unique("g")
    wire = router.to_coordinator(group)
    joined = ops.join_with_member_id(
        wire,
        caps,
        group,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
        protocols=(("range", b"range-meta"), ("roundrobin", b"rr-meta")),
    )
    expect_code(joined.error_code, "NONE", rule=PROTOCOL_GUIDE)
    expect_equal(joined.leader, joined.member_id, PROTOCOL_GUIDE, "leader of a one-member group")
    expect_equal(joined.protocol_name, "range", PROTOCOL_GUIDE, "protocol chosen (first preference)")
    expect_equal(
        [(m.member_id, m.metadata) for m in joined.members],
        [(joined.member_id, b"range-meta")],
        PROTOCOL_GUIDE,
        "members (with the chosen protocol's metadata) given to the leader",
    )
    synced = ops.sync_group(
        wire, caps, group, int(joined.generation_id), joined.member_id, {joined.member_id: b"mine"}
    )
    expect_code(synced.error_code, "NONE", rule=PROTOCOL_GUIDE)
    expect_equal(synced.assignment, b"mine", PROTOCOL_GUIDE, "assignment returned by SyncGroup")
    expect(int(joined.generation_id) >= 1, PROTOCOL_GUIDE, f"first generation {joined.generation_id} < 1")


@pytest.mark.requires("join_group")
def test_rejoin_of_every_member_completes_the_join_at_once(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """Kafka's classic coordinator (GroupMetadataManager, maybeCompleteJoinPhase): once every known
    member of an existing group has rejoined, the join phase completes and JoinGroup is answered;
    only a new group waits group.initial.rebalance.delay.ms. The rejoin of a Stable group's only
    member must therefore be answered well inside its session timeout: the bound here is a quarter
    of the 20 s session timeout the member uses, where a broker that holds the join for
    session.timeout/2 answers only after 10 s. The new generation is the old one plus one."""
    session_ms = 20_000
    group = unique("g")
    wire = router.to_coordinator(group)
    member = stable(wire, caps, group, session_timeout_ms=session_ms, rebalance_timeout_ms=session_ms)
    bound_s = session_ms / 4 / 1000
    started = time.monotonic()
    try:
        rejoined = ops.join_group(
            wire,
            caps,
            group,
            member_id=member.member_id,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=session_ms,
            protocols=(("range", b"new-metadata"),),
            timeout_s=bound_s,
        )
    except Exception as exc:
        raise AssertionError(
            f"[GroupMetadataManager join phase] the rejoin of the only member was not answered within "
            f"{bound_s:.1f} s (session timeout {session_ms} ms): {exc}"
        ) from None
    took = time.monotonic() - started
    expect_code(rejoined.error_code, "NONE", rule="GroupMetadataManager join phase")
    expect(
        took < bound_s,
        "GroupMetadataManager join phase",
        f"answered after {took:.1f} s, bound {bound_s:.1f} s",
    )
    expect_equal(
        int(rejoined.generation_id),
        member.generation + 1,
        "GroupMetadataManager join phase",
        "generation after the rebalance",
    )


@pytest.mark.requires("join_group")
def test_new_member_triggers_a_rebalance_seen_through_heartbeats(
    wire_factory: Callable[..., WireClient], router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """Seed D0-M85/M91 and the protocol guide: when a new member joins a Stable group the existing
    members' heartbeats answer REBALANCE_IN_PROGRESS and DescribeGroups says PreparingRebalance;
    once the old member rejoins both joins are answered with the same next generation, the leader
    (the old member) alone gets both members' metadata, and each member's SyncGroup returns the
    assignment the leader gave it. The previous generation then gets ILLEGAL_GENERATION (D0-I37)."""
    group = unique("g")
    first = router.to_coordinator(group)
    second = wire_factory(first.address)
    a = stable(first, caps, group, session_timeout_ms=20_000, rebalance_timeout_ms=20_000)
    with ThreadPoolExecutor(2) as pool:
        b_join: Future[Any] = pool.submit(
            ops.join_with_member_id,
            second,
            caps,
            group,
            session_timeout_ms=20_000,
            rebalance_timeout_ms=20_000,
            protocols=(("range", b"b-meta"),),
        )
        deadline = time.monotonic() + 10
        code = ops.heartbeat(first, caps, group, a.generation, a.member_id)
        while code.value == 0 and time.monotonic() < deadline and not b_join.done():
            time.sleep(0.2)
            code = ops.heartbeat(first, caps, group, a.generation, a.member_id)
        expect_code(code, "REBALANCE_IN_PROGRESS", rule="Seed D0-M91", where="heartbeat of the old member")
        state = ops.describe_group(first, caps, group).group_state
        expect_equal(state, "PreparingRebalance", "Protocol guide, DescribeGroups", "group state")
        a_join = ops.join_group(
            first,
            caps,
            group,
            member_id=a.member_id,
            session_timeout_ms=20_000,
            rebalance_timeout_ms=20_000,
            protocols=(("range", b"a-meta"),),
        )
        b_answer = b_join.result(timeout=30)
    expect_code(a_join.error_code, "NONE", rule=PROTOCOL_GUIDE)
    expect_code(b_answer.error_code, "NONE", rule=PROTOCOL_GUIDE)
    generation = int(a_join.generation_id)
    expect_equal(int(b_answer.generation_id), generation, PROTOCOL_GUIDE, "generation of the second member")
    expect_equal(generation, a.generation + 1, PROTOCOL_GUIDE, "generation after the rebalance")
    expect_equal(a_join.leader, a.member_id, PROTOCOL_GUIDE, "leader (the member that was there)")
    expect_equal(
        sorted(m.metadata for m in a_join.members), [b"a-meta", b"b-meta"], PROTOCOL_GUIDE, "leader's members"
    )
    expect_equal(list(b_answer.members), [], PROTOCOL_GUIDE, "members given to a follower")
    expect_code(
        ops.heartbeat(first, caps, group, a.generation, a.member_id), "ILLEGAL_GENERATION", rule="Seed D0-I37"
    )
    plan = {a.member_id: b"for-a", b_answer.member_id: b"for-b"}
    with ThreadPoolExecutor(1) as pool:
        b_sync = pool.submit(ops.sync_group, second, caps, group, generation, b_answer.member_id)
        a_sync = ops.sync_group(first, caps, group, generation, a.member_id, plan)
        b_synced = b_sync.result(timeout=30)
    expect_equal(
        (a_sync.assignment, b_synced.assignment), (b"for-a", b"for-b"), PROTOCOL_GUIDE, "assignments"
    )


@pytest.mark.requires("join_group", min_version=5)
def test_static_member_replacement_fences_the_old_instance(
    wire_factory: Callable[..., WireClient], router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-345: a static member (group.instance.id) that joins again with an empty member id takes
    its place under a new member id without a rebalance of a Stable group; the old member id is
    fenced: its heartbeat is answered FENCED_INSTANCE_ID."""
    group = unique("g")
    first = router.to_coordinator(group)
    old = stable(first, caps, group, instance_id="instance-1")
    again = ops.join_group(
        wire_factory(first.address),
        caps,
        group,
        instance_id="instance-1",
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
    )
    expect_code(again.error_code, "NONE", rule="KIP-345")
    expect(again.member_id != old.member_id, "KIP-345", "the replacing instance kept the old member id")
    fenced = ops.heartbeat(first, caps, group, old.generation, old.member_id, instance_id="instance-1")
    expect_code(fenced, "FENCED_INSTANCE_ID", rule="KIP-345", where="heartbeat of the replaced member id")


@pytest.mark.versions("sync_group")
def test_sync_with_stale_generation_or_unknown_member(
    version: int, shared_group: Member, caps: Capabilities
) -> None:
    """Seed D0-I37 and the protocol guide, SyncGroup: a SyncGroup with a generation other than the
    group's is ILLEGAL_GENERATION; one from a member the group does not know is UNKNOWN_MEMBER_ID."""
    g = shared_group
    stale = ops.sync_group(g.wire, caps, g.group, g.generation + 7, g.member_id, version=version)
    expect_code(stale.error_code, "ILLEGAL_GENERATION", rule="Seed D0-I37", where="SyncGroup")
    stranger = ops.sync_group(g.wire, caps, g.group, g.generation, "kh-nobody", version=version)
    expect_code(stranger.error_code, "UNKNOWN_MEMBER_ID", rule="Protocol guide, SyncGroup")


# -- Heartbeat ---------------------------------------------------------------------------------------


@pytest.mark.versions("heartbeat")
def test_heartbeat_fencing_errors(version: int, shared_group: Member, caps: Capabilities) -> None:
    """Seed D0-I37 and Kafka's classic heartbeat validation (member first, then generation): the
    current member and generation get NONE, a stale generation ILLEGAL_GENERATION, an unknown
    member UNKNOWN_MEMBER_ID."""
    g = shared_group
    beat = ops.heartbeat
    expect_code(
        beat(g.wire, caps, g.group, g.generation, g.member_id, version=version), "NONE", rule="D0-I37"
    )
    expect_code(
        beat(g.wire, caps, g.group, g.generation - 1, g.member_id, version=version),
        "ILLEGAL_GENERATION",
        rule="Seed D0-I37",
    )
    expect_code(
        beat(g.wire, caps, g.group, g.generation, "kh-nobody", version=version),
        "UNKNOWN_MEMBER_ID",
        rule="Protocol guide, Heartbeat",
    )


# -- DescribeGroups and ListGroups -------------------------------------------------------------------


@pytest.mark.versions("describe_groups")
def test_describe_stable_group(version: int, shared_group: Member, caps: Capabilities) -> None:
    """Protocol guide, DescribeGroups: a Stable group is described with its state, protocol type and
    chosen protocol, and each member with its client id, metadata and assignment."""
    g = shared_group
    entry = ops.describe_group(g.wire, caps, g.group, version=version)
    expect_code(entry.error_code, "NONE", rule="Protocol guide, DescribeGroups")
    rule = "Protocol guide, DescribeGroups"
    expect_equal(
        (entry.group_state, entry.protocol_type, entry.protocol_data),
        ("Stable", "consumer", "range"),
        rule,
        "(state, protocol type, protocol)",
    )
    expect_equal(
        [(m.member_id, m.client_id, m.member_metadata, m.member_assignment) for m in entry.members],
        [(g.member_id, g.wire.client_id, b"kh", b"shared-assignment")],
        rule,
        "(member id, client id, metadata, assignment) of each member",
    )


@pytest.mark.versions("describe_groups")
def test_describe_unknown_group(
    version: int, router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """Protocol guide, DescribeGroups and KIP-1043: a group that does not exist is described as Dead
    with no members; v6+ answers GROUP_ID_NOT_FOUND, older versions no error."""
    group = unique("absent")
    entry = ops.describe_group(router.to_coordinator(group), caps, group, version=version)
    expected = "GROUP_ID_NOT_FOUND" if version >= 6 else "NONE"
    expect_code(
        entry.error_code, expected, rule="KIP-1043" if version >= 6 else "Protocol guide, DescribeGroups"
    )
    expect_equal((entry.group_state, list(entry.members)), ("Dead", []), "DescribeGroups", "(state, members)")


@pytest.mark.versions("list_groups")
def test_list_groups_shows_the_group(version: int, shared_group: Member, caps: Capabilities) -> None:
    """Protocol guide, ListGroups: the coordinator lists its groups with their protocol type; v4+
    (KIP-518) also their state, and a states filter that excludes the group's state leaves it out."""
    g = shared_group
    answer = g.wire.request("list_groups", version, states_filter=[], types_filter=[])
    expect_code(answer.error_code, "NONE", rule="Protocol guide, ListGroups")
    listed = {x.group_id: x for x in answer.groups}
    expect(g.group in listed, "Protocol guide, ListGroups", f"{g.group} not listed")
    expect_equal(listed[g.group].protocol_type, "consumer", "Protocol guide, ListGroups", "protocol type")
    if version >= 4:
        expect_equal(listed[g.group].group_state, "Stable", "KIP-518", "state")
        empty_only = g.wire.request("list_groups", version, states_filter=["Empty"], types_filter=[])
        expect(
            g.group not in {x.group_id for x in empty_only.groups},
            "KIP-518",
            "a Stable group was listed under the states filter [Empty]",
        )


# -- LeaveGroup ------------------------------------------------------------------------------------


@pytest.mark.requires("leave_group")
def test_last_member_leaving_empties_the_group(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """Protocol guide, LeaveGroup: a member that leaves is removed at once; the group of its only
    member becomes Empty and the old member's heartbeat is UNKNOWN_MEMBER_ID."""
    group = unique("g")
    wire = router.to_coordinator(group)
    member = stable(wire, caps, group)
    answer = ops.leave_group(wire, caps, group, member.member_id)
    expect_code(answer.error_code, "NONE", rule="Protocol guide, LeaveGroup")
    expect_equal(
        ops.describe_group(wire, caps, group).group_state, "Empty", "Protocol guide, LeaveGroup", "state"
    )
    expect_code(
        ops.heartbeat(wire, caps, group, member.generation, member.member_id),
        "UNKNOWN_MEMBER_ID",
        rule="Protocol guide, LeaveGroup",
    )


@pytest.mark.versions("leave_group")
def test_leave_of_unknown_member(version: int, shared_group: Member, caps: Capabilities) -> None:
    """Protocol guide, LeaveGroup and KIP-345 (v3 batches members): a member id the group does not
    know is UNKNOWN_MEMBER_ID (per member from v3, top-level before), and the group is unchanged."""
    g = shared_group
    answer = ops.leave_group(g.wire, caps, g.group, "kh-nobody", version=version)
    code = answer.members[0].error_code if version >= 3 else answer.error_code
    expect_code(code, "UNKNOWN_MEMBER_ID", rule="Protocol guide, LeaveGroup")
    expect_equal(
        ops.describe_group(g.wire, caps, g.group).group_state, "Stable", "Protocol guide, LeaveGroup", "state"
    )


# -- DeleteGroups ------------------------------------------------------------------------------------


@pytest.mark.requires("delete_groups")
def test_group_with_members_cannot_be_deleted(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-229 (DeleteGroups): a group that still has members is NON_EMPTY_GROUP and stays as it is."""
    group = unique("g")
    wire = router.to_coordinator(group)
    member = stable(wire, caps, group)
    answer = wire.request("delete_groups", caps.best("delete_groups"), groups_names=[group])
    expect_code(answer.results[0].error_code, "NON_EMPTY_GROUP", rule="KIP-229")
    expect_code(
        ops.heartbeat(wire, caps, group, member.generation, member.member_id),
        "NONE",
        rule="KIP-229",
        where="heartbeat after the refused delete",
    )


@pytest.mark.versions("delete_groups")
def test_delete_empty_group_and_its_offsets(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """KIP-229: an Empty group (here one that only has committed offsets) is deleted with its
    offsets; deleting it again, or a group that never existed, is GROUP_ID_NOT_FOUND."""
    group = unique("g")
    wire = router.to_coordinator(group)
    expect_code(ops.commit_offset(wire, caps, group, topic, 5), "NONE", rule="setup: OffsetCommit")
    answer = wire.request("delete_groups", version, groups_names=[group])
    expect_code(answer.results[0].error_code, "NONE", rule="KIP-229")
    _code, offsets = ops.fetch_offsets(wire, caps, {group: [(topic, 0)]})[group]
    expect_equal(offsets[(topic, 0)][1], -1, "KIP-229", "committed offset after the group was deleted")
    again = wire.request("delete_groups", version, groups_names=[group])
    expect_code(again.results[0].error_code, "GROUP_ID_NOT_FOUND", rule="KIP-229", where="second delete")
