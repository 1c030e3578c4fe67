"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup through the sans-IO broker: every transition and error."""

from __future__ import annotations

from reference_impl.protocol.errors import ErrorCode

from ..core.harness import BrokerHarness, request
from .helpers import INITIAL_DELAY_MS, Client, describe, first_generation, harness, stabilise, subscription


def test_find_coordinator_creates_the_offsets_topic_then_names_this_broker() -> None:
    h = BrokerHarness("offsets.topic.num.partitions=7")
    first = h.call(request(10, 3, key="g", key_type=0))
    assert first.error_code == ErrorCode.coordinator_not_available
    assert (first.node_id, first.host, first.port) == (-1, "", -1)
    topic = h.broker.image.topics["__consumer_offsets"]
    assert len(topic.partitions) == 7 and topic.configs["cleanup.policy"] == "compact"
    again = h.call(request(10, 3, key="g", key_type=0))
    assert (again.error_code, again.node_id, again.host, again.port) == (ErrorCode.none, 1, "127.0.0.1", 9092)


def test_find_coordinator_batched_keys_and_key_types() -> None:
    h = harness()
    r = h.call(request(10, 4, key_type=0, coordinator_keys=["a", "b"]))
    assert [(c.key, c.error_code, c.node_id) for c in r.coordinators] == [
        ("a", ErrorCode.none, 1),
        ("b", ErrorCode.none, 1),
    ]
    txn = h.call(request(10, 4, key_type=1, coordinator_keys=["tx"]))
    assert (
        txn.coordinators[0].error_code == ErrorCode.coordinator_not_available
    )  # __transaction_state created
    assert "__transaction_state" in h.broker.image.topics
    assert h.call(request(10, 4, key_type=1, coordinator_keys=["tx"])).coordinators[0].node_id == 1
    share = h.call(request(10, 6, key_type=2, coordinator_keys=["s"]))
    assert share.coordinators[0].error_code == ErrorCode.invalid_request  # not groupId:topicId:partition
    key = "g:AAAAAAAAAAAAAAAAAAAAAQ:0"  # KIP-932 share coordinator keys: v6 only, __share_group_state
    assert h.call(request(10, 5, key_type=2, coordinator_keys=[key])).coordinators[0].error_code == (
        ErrorCode.invalid_request
    )
    first = h.call(request(10, 6, key_type=2, coordinator_keys=[key])).coordinators[0]
    assert first.error_code == ErrorCode.coordinator_not_available  # __share_group_state created
    assert "__share_group_state" in h.broker.image.topics
    assert h.call(request(10, 6, key_type=2, coordinator_keys=[key])).coordinators[0].node_id == 1


def test_requests_before_the_offsets_topic_exists_get_not_coordinator() -> None:
    h = BrokerHarness()
    c = Client(h, "g")
    c.send_join()
    assert c.read_join().error_code == ErrorCode.not_coordinator
    assert c.heartbeat() == ErrorCode.not_coordinator


def test_new_member_gets_member_id_required_then_joins_and_leads() -> None:
    h = harness("group.initial.rebalance.delay.ms=0")
    c = Client(h, "g")
    c.send_join(version=4)
    first = c.read_join()
    assert first.error_code == ErrorCode.member_id_required
    assert first.member_id.startswith("test-client-")
    c.send_join(version=4)
    r = c.read_join()  # delay 0: the first generation completes at once
    assert (r.error_code, r.generation_id, r.leader, r.member_id) == (
        ErrorCode.none,
        1,
        c.member_id,
        c.member_id,
    )
    assert [(m.member_id, bytes(m.metadata)) for m in r.members] == [(c.member_id, subscription("t"))]
    assert describe(h, "g").group_state == "CompletingRebalance"


def test_old_join_versions_join_without_member_id_required() -> None:
    h = harness("group.initial.rebalance.delay.ms=0")
    c = Client(h, "g")
    c.send_join(version=3)
    r = c.read_join()
    assert r.error_code == ErrorCode.none and r.member_id and r.generation_id == 1


def test_initial_rebalance_delay_gathers_members_into_one_generation() -> None:
    h = harness("group.initial.rebalance.delay.ms=3000")
    a, b = Client(h, "g"), Client(h, "g")
    a.join()
    h.advance(2000)
    b.join()
    h.advance(2999)
    assert not a.has_answer() and not b.has_answer()  # b's arrival extended the delay
    h.advance(3000)
    ra, rb = a.read_join(), b.read_join()
    assert ra.generation_id == rb.generation_id == 1
    assert ra.leader == rb.leader
    leader = a if ra.leader == a.member_id else b
    assert len((ra if leader is a else rb).members) == 2
    assert len((rb if leader is a else ra).members) == 0


def test_join_completes_as_soon_as_every_known_member_rejoins() -> None:
    h = harness()
    a, b = Client(h, "g"), Client(h, "g")
    stabilise(h, a, b)
    c = Client(h, "g")
    c.join()  # MEMBER_ID_REQUIRED answered, then parked: the group now prepares a rebalance
    assert not c.has_answer()
    assert describe(h, "g").group_state == "PreparingRebalance"
    assert a.heartbeat() == ErrorCode.rebalance_in_progress
    a.send_join()
    assert not c.has_answer()
    b.send_join()  # the last known member: no timer needed
    answers = [x.read_join() for x in (a, b, c)]
    assert {r.generation_id for r in answers} == {2}
    assert sum(1 for r in answers if r.members) == 1
    assert {r.leader for r in answers} == {answers[0].leader}


def test_sync_hands_each_member_the_leaders_assignment() -> None:
    h = harness()
    a, b = Client(h, "g"), Client(h, "g")
    leader, follower = first_generation(h, a, b)
    follower.send_sync()
    assert not follower.has_answer()  # parked until the leader's assignment is stored
    assert follower.heartbeat(new_connection=True) == ErrorCode.none  # fine in CompletingRebalance
    leader.send_sync({leader.member_id: b"L", follower.member_id: b"F"})
    assert bytes(leader.read_sync().assignment) == b"L"
    sync = follower.read_sync()
    assert (bytes(sync.assignment), sync.protocol_name, sync.protocol_type) == (b"F", "range", "consumer")
    assert describe(h, "g").group_state == "Stable"
    follower.send_sync()  # a Stable group answers at once
    assert bytes(follower.read_sync().assignment) == b"F"


def test_leader_assignment_missing_a_member_gives_it_an_empty_assignment() -> None:
    h = harness()
    a, b = Client(h, "g"), Client(h, "g")
    leader, follower = first_generation(h, a, b)
    follower.send_sync()
    leader.send_sync({leader.member_id: b"all"})
    assert bytes(leader.read_sync().assignment) == b"all"
    assert bytes(follower.read_sync().assignment) == b""


def test_protocol_selection_takes_the_most_voted_common_protocol() -> None:
    h = harness()
    a = Client(h, "g", protocols=[("roundrobin", b"a"), ("range", b"a2")])
    b = Client(h, "g", protocols=[("range", b"b"), ("roundrobin", b"b2")])
    c = Client(h, "g", protocols=[("roundrobin", b"c"), ("sticky", b"c2"), ("range", b"c3")])
    for x in (a, b, c):
        x.join()
    h.advance(2 * INITIAL_DELAY_MS)
    answers = [x.read_join() for x in (a, b, c)]
    assert {r.protocol_name for r in answers} == {"roundrobin"}
    leader_answer = next(r for r in answers if r.members)
    assert sorted(bytes(m.metadata) for m in leader_answer.members) == [b"a", b"b2", b"c"]


def test_inconsistent_protocols_are_refused() -> None:
    h = harness()
    a = Client(h, "g")
    stabilise(h, a)
    other_type = Client(h, "g", protocol_type="connect")
    other_type.send_join()
    assert other_type.read_join().error_code == ErrorCode.inconsistent_group_protocol
    no_common = Client(h, "g", protocols=[("sticky", b"")])
    no_common.send_join()
    assert no_common.read_join().error_code == ErrorCode.inconsistent_group_protocol
    empty = Client(h, "fresh", protocols=[])
    empty.send_join()
    assert empty.read_join().error_code == ErrorCode.inconsistent_group_protocol


def test_join_validation_errors() -> None:
    h = harness("group.max.session.timeout.ms=20000")
    for client, code in (
        (Client(h, ""), ErrorCode.invalid_group_id),
        (Client(h, "g", session_ms=999), ErrorCode.invalid_session_timeout),
        (Client(h, "g", session_ms=20001), ErrorCode.invalid_session_timeout),
        (Client(h, "g", member_id="ghost"), ErrorCode.unknown_member_id),
    ):
        client.send_join()
        assert client.read_join().error_code == code


def test_group_max_size_refuses_the_extra_member() -> None:
    h = harness("group.max.size=1")
    a = Client(h, "g")
    stabilise(h, a)
    b = Client(h, "g")
    b.send_join(version=3)
    assert b.read_join().error_code == ErrorCode.group_max_size_reached


def test_generation_fencing_of_heartbeat_and_sync() -> None:
    h = harness()
    a = Client(h, "g")
    stabilise(h, a)
    good = a.generation
    a.generation = good - 1
    assert a.heartbeat() == ErrorCode.illegal_generation
    a.send_sync()
    assert a.read_sync().error_code == ErrorCode.illegal_generation
    a.generation, real = good, a.member_id
    a.member_id = "stranger"
    assert a.heartbeat() == ErrorCode.unknown_member_id
    a.member_id = real
    assert Client(h, "nobody").heartbeat() == ErrorCode.unknown_member_id


def test_sync_with_another_protocol_name_is_inconsistent() -> None:
    h = harness()
    a = Client(h, "g")
    a.join()
    h.advance(INITIAL_DELAY_MS)
    a.read_join()
    a.protocols = [("roundrobin", b"")]
    a.send_sync({a.member_id: b"x"})
    assert a.read_sync().error_code == ErrorCode.inconsistent_group_protocol


def test_sync_during_a_rebalance_is_told_to_rejoin() -> None:
    h = harness()
    a, b = Client(h, "g"), Client(h, "g")
    stabilise(h, a, b)
    leader, follower = (a, b) if h.broker.group_coordinator.groups["g"].leader_id == a.member_id else (b, a)
    leader.send_join()  # the leader rejoining starts a rebalance
    assert describe(h, "g").group_state == "PreparingRebalance"
    follower.send_sync()
    assert follower.read_sync().error_code == ErrorCode.rebalance_in_progress


def test_member_joining_during_completing_rebalance_cancels_parked_syncs() -> None:
    h = harness()
    a, b = Client(h, "g"), Client(h, "g")
    _leader, follower = first_generation(h, a, b)
    follower.send_sync()
    newcomer = Client(h, "g")
    newcomer.join()
    assert follower.read_sync().error_code == ErrorCode.rebalance_in_progress
    assert describe(h, "g").group_state == "PreparingRebalance"


def test_session_timeout_removes_a_silent_member_and_rebalances() -> None:
    h = harness()
    a = Client(h, "g", session_ms=5000)
    b = Client(h, "g", session_ms=20000)
    stabilise(h, a, b)
    for _ in range(4):  # b keeps heartbeating; a goes silent
        h.advance(1000)
        assert b.heartbeat() == ErrorCode.none
    h.advance(999)
    assert b.heartbeat() == ErrorCode.none
    h.advance(1)
    assert b.heartbeat() == ErrorCode.rebalance_in_progress  # a expired at 5 s
    described = describe(h, "g")
    assert [m.member_id for m in described.members] == [b.member_id]
    b.send_join()
    r = b.read_join()  # the only member left rejoined: generation completes at once
    assert r.generation_id == a.generation + 1 and r.leader == b.member_id
    assert a.heartbeat() == ErrorCode.unknown_member_id


def test_last_member_expiring_leaves_an_empty_group() -> None:
    h = harness()
    a = Client(h, "g", session_ms=2000)
    stabilise(h, a)
    h.advance(2001)
    d = describe(h, "g")
    assert (d.group_state, len(d.members)) == ("Empty", 0)


def test_rebalance_timeout_drops_a_member_that_does_not_rejoin() -> None:
    h = harness()
    a = Client(h, "g", session_ms=60_000, rebalance_ms=8000)
    b = Client(h, "g", session_ms=60_000, rebalance_ms=8000)
    stabilise(h, a, b)
    c = Client(h, "g", session_ms=60_000, rebalance_ms=8000)
    c.join()
    a.send_join()
    h.advance(7999)
    assert not a.has_answer()
    h.advance(1)
    ra, rc = a.read_join(), c.read_join()
    assert ra.generation_id == rc.generation_id == 2
    leader_answer = ra if ra.members else rc
    assert {m.member_id for m in leader_answer.members} == {a.member_id, c.member_id}
    assert b.heartbeat() == ErrorCode.unknown_member_id


def test_members_that_never_sync_are_removed_at_the_rebalance_timeout() -> None:
    h = harness()
    a = Client(h, "g", rebalance_ms=5000, session_ms=60_000)
    b = Client(h, "g", rebalance_ms=5000, session_ms=60_000)
    leader, follower = first_generation(h, a, b)
    follower.send_sync()
    h.advance(5000)  # the leader never sends its assignment
    assert follower.read_sync().error_code == ErrorCode.rebalance_in_progress
    d = describe(h, "g")
    assert d.group_state == "PreparingRebalance"
    assert [m.member_id for m in d.members] == [follower.member_id]
    assert leader.heartbeat() == ErrorCode.unknown_member_id


def test_pending_member_that_never_rejoins_expires() -> None:
    h = harness("group.initial.rebalance.delay.ms=0")
    a = Client(h, "g", session_ms=3000)
    a.send_join()
    assert a.read_join().error_code == ErrorCode.member_id_required
    assert describe(h, "g").group_state == "Empty"
    h.advance(3001)
    a.send_join()  # its id was forgotten with the pending entry
    assert a.read_join().error_code == ErrorCode.unknown_member_id


def test_leave_group_batched_and_single() -> None:
    h = harness()
    a, b, c = Client(h, "g"), Client(h, "g", instance_id="static-b"), Client(h, "g")
    stabilise(h, a, b, c)
    r = h.call(
        request(
            13,
            3,
            group_id="g",
            members=[
                {"member_id": a.member_id, "group_instance_id": None},
                {"member_id": "", "group_instance_id": "static-b"},  # by instance id alone
                {"member_id": "ghost", "group_instance_id": None},
                {"member_id": c.member_id, "group_instance_id": "static-b"},  # not c's instance id
            ],
        )
    )
    assert r.error_code == ErrorCode.none
    assert [m.error_code for m in r.members] == [
        ErrorCode.none,
        ErrorCode.none,
        ErrorCode.unknown_member_id,
        ErrorCode.unknown_member_id,
    ]
    assert [m.member_id for m in describe(h, "g").members] == [c.member_id]
    old = h.call(request(13, 1, group_id="g", member_id=c.member_id))
    assert old.error_code == ErrorCode.none
    assert describe(h, "g").group_state == "Empty"
    again = h.call(request(13, 1, group_id="g", member_id=c.member_id))
    assert again.error_code == ErrorCode.unknown_member_id
    unknown_group = h.call(
        request(13, 4, group_id="none", members=[{"member_id": "x", "group_instance_id": None}])
    )
    assert [m.error_code for m in unknown_group.members] == [ErrorCode.unknown_member_id]


def test_leaving_member_lets_a_parked_rebalance_complete() -> None:
    h = harness()
    a, b = Client(h, "g"), Client(h, "g")
    stabilise(h, a, b)
    Client(h, "g").join()  # a third member starts a rebalance
    a.send_join()
    assert not a.has_answer()  # waiting for b
    assert b.leave().members[0].error_code == ErrorCode.none
    assert a.read_join().error_code == ErrorCode.none


def test_leader_rejoining_a_stable_group_triggers_a_rebalance() -> None:
    h = harness()
    a, b = Client(h, "g"), Client(h, "g")
    stabilise(h, a, b)
    leader_id = h.broker.group_coordinator.groups["g"].leader_id
    leader, follower = (a, b) if leader_id == a.member_id else (b, a)
    follower.send_join()  # same metadata: the current generation, no rebalance
    r = follower.read_join()
    assert (r.generation_id, r.members) == (follower.generation, ())
    assert describe(h, "g").group_state == "Stable"
    leader.send_join()
    assert describe(h, "g").group_state == "PreparingRebalance"


def test_static_member_restart_keeps_its_assignment_without_a_rebalance() -> None:
    h = harness()
    a = Client(h, "g", instance_id="a-1")
    b = Client(h, "g", instance_id="b-1")
    stabilise(h, a, b)
    generation = a.generation
    old_b = b.member_id
    restarted = Client(h, "g", instance_id="b-1")  # same instance id, no member id: a restart
    restarted.send_join(version=8)
    r = restarted.read_join()
    assert r.error_code == ErrorCode.none and r.generation_id == generation
    assert r.member_id != old_b and r.members == ()
    assert describe(h, "g").group_state == "Stable"
    restarted.send_sync()
    assert bytes(restarted.read_sync().assignment) == old_b.encode()  # the old member's assignment
    b.member_id = old_b
    assert b.heartbeat() == ErrorCode.fenced_instance_id
    assert a.heartbeat() == ErrorCode.none


def test_static_leader_restart_on_v9_skips_the_assignment() -> None:
    h = harness()
    a = Client(h, "g", instance_id="a-1")
    b = Client(h, "g", instance_id="b-1")
    stabilise(h, a, b)
    leader_instance = "a-1" if h.broker.group_coordinator.groups["g"].leader_id == a.member_id else "b-1"
    restarted = Client(h, "g", instance_id=leader_instance)
    restarted.send_join(version=9)
    r = restarted.read_join()
    assert (r.error_code, r.leader, r.skip_assignment) == (ErrorCode.none, r.member_id, True)
    assert len(r.members) == 2
    restarted_old = Client(h, "g", instance_id="a-1" if leader_instance == "b-1" else "b-1")
    restarted_old.send_join(version=8)
    follower = restarted_old.read_join()
    assert follower.leader == r.member_id and not getattr(follower, "skip_assignment", False)


def test_static_member_known_but_wrong_member_id_is_fenced() -> None:
    h = harness()
    a = Client(h, "g", instance_id="a-1")
    stabilise(h, a)
    imposter = Client(h, "g", instance_id="a-1", member_id="a-1-not-the-current-id")
    imposter.send_join()
    assert imposter.read_join().error_code == ErrorCode.fenced_instance_id


def test_static_member_rejoin_during_completing_rebalance_rebalances_again() -> None:
    h = harness()
    a = Client(h, "g", instance_id="a-1")
    b = Client(h, "g", instance_id="b-1")
    _leader, follower = first_generation(h, a, b)
    follower.send_sync()
    restarted = Client(h, "g", instance_id=follower.instance_id)
    restarted.send_join()
    assert follower.read_sync().error_code == ErrorCode.fenced_instance_id
    assert describe(h, "g").group_state == "PreparingRebalance"


def test_describe_groups_by_state_and_version() -> None:
    h = harness()
    a, b = Client(h, "g", instance_id="static-a"), Client(h, "g")
    plan = stabilise(h, a, b)
    d = describe(h, "g", version=5)
    assert (d.error_code, d.group_state, d.protocol_type, d.protocol_data) == (
        ErrorCode.none,
        "Stable",
        "consumer",
        "range",
    )
    members = {m.member_id: m for m in d.members}
    assert set(members) == {a.member_id, b.member_id}
    assert members[a.member_id].group_instance_id == "static-a"
    assert members[a.member_id].client_host == "/127.0.0.1"
    assert bytes(members[b.member_id].member_assignment) == plan[b.member_id]
    assert bytes(members[b.member_id].member_metadata) == subscription("t")
    assert describe(h, "missing", version=5).group_state == "Dead"
    v6 = describe(h, "missing", version=6)
    assert (v6.error_code, v6.group_state) == (ErrorCode.group_id_not_found, "Dead")
    with_ops = h.call(request(15, 5, groups=["g"], include_authorized_operations=True)).groups[0]
    assert with_ops.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)
    Client(h, "g").join()
    rebalancing = describe(h, "g")
    assert rebalancing.group_state == "PreparingRebalance" and rebalancing.protocol_data == ""
    assert all(bytes(m.member_assignment) == b"" for m in rebalancing.members)


def test_list_groups_with_state_and_type_filters() -> None:
    h = harness()
    stabilise(h, Client(h, "stable-group"))
    empty = Client(h, "empty-group", session_ms=2000)
    stabilise(h, empty)
    h.advance(2001)
    rows = h.call(request(16, 5, states_filter=[], types_filter=[])).groups
    assert {(g.group_id, g.group_state, g.group_type, g.protocol_type) for g in rows} == {
        ("stable-group", "Stable", "classic", "consumer"),
        ("empty-group", "Empty", "classic", "consumer"),
    }
    stable = h.call(request(16, 4, states_filter=["STABLE"])).groups
    assert [g.group_id for g in stable] == ["stable-group"]
    assert h.call(request(16, 5, states_filter=[], types_filter=["consumer"])).groups == ()
    assert len(h.call(request(16, 5, states_filter=[], types_filter=["Classic"])).groups) == 2
    assert len(h.call(request(16, 0)).groups) == 2
