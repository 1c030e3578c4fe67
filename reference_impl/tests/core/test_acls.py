"""The authorizer as Kafka's StandardAuthorizer decides (pure), and the broker's ACL APIs and checks
through the sans-IO pipeline: ACLs written as metadata records, replayed after a restart, and the
per-API errors (issue 18)."""

from __future__ import annotations

import uuid
from typing import Any

from reference_impl import defects
from reference_impl.core.handlers.access import TOPIC_REFUSED
from reference_impl.core.metadata.records import AccessControlEntryRecord, decode, encode
from reference_impl.core.security.acls import Acl, AclFilter, AclStore, Authorizer
from reference_impl.protocol.acl_codes import Operation, PatternType, Permission, ResourceType
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.sasl_client import plain_token

from .harness import BrokerHarness, request
from .test_security import SASL_CONFIGS

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
Op = Operation
ALICE = "User:alice"


def _store(*acls: Acl) -> AclStore:
    store = AclStore()
    for i, acl in enumerate(acls):
        store.add(uuid.UUID(int=i + 1), acl)
    return store


def _acl(
    rtype: ResourceType,
    name: str,
    op: Operation,
    perm: Permission = ALLOW,
    pattern: PatternType = LIT,
    principal: str = ALICE,
    host: str = "*",
) -> Acl:
    return Acl(rtype, name, pattern, principal, host, op, perm)


def test_decisions_as_standard_authorizer_data() -> None:
    auth = Authorizer(frozenset({"User:admin"}))
    store = _store(
        _acl(T, "orders", Op.READ),
        _acl(T, "pay-", Op.WRITE, pattern=PRE),
        _acl(T, "pay-secret", Op.WRITE, DENY),
        _acl(T, "*", Op.DESCRIBE, principal="User:*"),
        _acl(T, "local", Op.ALL, host="10.0.0.1"),
        _acl(T, "cfg", Op.ALTER_CONFIGS),
        _acl(G, "g", Op.READ, DENY),
        _acl(G, "g", Op.ALL),
    )

    def can(op: Operation, rtype: ResourceType, name: str, who: str = ALICE, host: str = "127.0.0.1") -> bool:
        return auth.authorize(store, who, host, op, rtype, name)

    assert can(Op.READ, T, "orders") and not can(Op.WRITE, T, "orders")
    assert can(Op.DESCRIBE, T, "orders")  # READ implies DESCRIBE
    assert can(Op.WRITE, T, "pay-1") and not can(Op.WRITE, T, "pay") and not can(Op.WRITE, T, "xpay-1")
    assert not can(Op.WRITE, T, "pay-secret")  # DENY beats the prefixed ALLOW
    assert can(Op.DESCRIBE, T, "anything", who="User:bob")  # wildcard name and principal
    assert not can(Op.READ, T, "anything", who="User:bob")
    assert can(Op.DELETE, T, "local", host="10.0.0.1") and not can(Op.DELETE, T, "local")
    assert can(Op.DESCRIBE_CONFIGS, T, "cfg") and not can(Op.ALTER, T, "cfg")
    assert not can(Op.READ, G, "g") and can(Op.DESCRIBE, G, "g")  # DENY READ does not deny DESCRIBE
    assert can(Op.ALTER, C, "kafka-cluster", who="User:admin")  # super user
    assert not can(Op.READ, G, "no-acls")  # no ACL: denied by default
    allow_all = Authorizer(frozenset(), allow_if_no_acl=True)
    assert allow_all.authorize(store, ALICE, "h", Op.READ, G, "no-acls")
    assert not allow_all.authorize(store, ALICE, "h", Op.WRITE, T, "orders")  # ACLs exist: no default
    bits = auth.authorized_operations(store, ALICE, "127.0.0.1", T, "orders")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert auth.authorize_by_type(store, ALICE, "h", Op.WRITE, T)  # pay- prefixed
    assert not auth.authorize_by_type(store, "User:bob", "h", Op.WRITE, T)
    with defects.seeded(defects.ALLOW_BEATS_DENY):
        assert can(Op.WRITE, T, "pay-secret")


def test_filters_and_validation() -> None:
    lit = _acl(T, "foo", Op.READ)
    pre = _acl(T, "fo", Op.READ, pattern=PRE)
    star = _acl(T, "*", Op.READ)

    def f(name: str | None, pattern: PatternType, **kw: Any) -> AclFilter:
        return AclFilter(T, name, pattern, kw.get("principal"), None, Op.ANY, Permission.ANY)

    assert [f("foo", PatternType.MATCH).matches(a) for a in (lit, pre, star)] == [True, True, True]
    assert [f("foo", PatternType.ANY).matches(a) for a in (lit, pre, star)] == [True, False, False]
    assert [f("fo", PRE).matches(a) for a in (lit, pre, star)] == [False, True, False]
    assert [f(None, PatternType.ANY).matches(a) for a in (lit, pre, star)] == [True, True, True]
    assert not f(None, PatternType.ANY, principal="User:bob").matches(lit)
    assert AclFilter(T, None, PatternType.UNKNOWN, None, None, Op.ANY, Permission.ANY).problem()
    assert _acl(C, "other", Op.ALTER).problem() and _acl(C, "kafka-cluster", Op.ALTER).problem() is None
    assert _acl(T, "", Op.READ).problem() and _acl(T, "x", Op.ANY).problem()
    assert _acl(T, "x", Op.READ, principal="alice").problem()
    assert _acl(T, "x", Op.READ, pattern=PatternType.MATCH).problem()
    record = AccessControlEntryRecord(
        id=uuid.UUID(int=7), resource_type=2, resource_name="x", pattern_type=3, principal=ALICE,
        host="*", operation=3, permission_type=3,
    )  # fmt: skip
    assert decode(encode(record)) == record


ACL_CONFIGS = (
    *SASL_CONFIGS,
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users=User:admin",
)


def _login(harness: BrokerHarness, user: str, password: str) -> int:
    cid = harness.connect("SASL_PLAINTEXT")
    assert harness.call(request(17, 1, mechanism="PLAIN"), cid).error_code == ErrorCode.none
    answer = harness.call(request(36, 2, auth_bytes=plain_token(user, password)), cid)
    assert answer.error_code == ErrorCode.none
    return cid


def _create(harness: BrokerHarness, cid: int, *acls: tuple[int, str, int, str, int, int]) -> list[int]:
    creations = [
        {"resource_type": t, "resource_name": n, "resource_pattern_type": p, "principal": who,
         "host": "*", "operation": op, "permission_type": perm}
        for t, n, p, who, op, perm in acls
    ]  # fmt: skip
    return [int(r.error_code) for r in harness.call(request(30, 3, creations=creations), cid).results]


def _metadata(harness: BrokerHarness, cid: int, topics: list[str] | None) -> Any:
    wanted = None if topics is None else [{"name": t, "topic_id": uuid.UUID(int=0)} for t in topics]
    return harness.call(
        request(
            3, 12, topics=wanted, allow_auto_topic_creation=False, include_topic_authorized_operations=True
        ),
        cid,
    )


def _topic(harness: BrokerHarness, cid: int, name: str) -> int:
    body = request(
        19,
        7,
        topics=[
            {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        ],
        timeout=5000,
        validate_only=False,
    )
    return int(harness.call(body, cid).topics[0].error_code)


def test_acl_apis_and_checks_through_the_broker() -> None:
    harness = BrokerHarness(*ACL_CONFIGS)
    admin = _login(harness, "admin", "admin-secret")
    alice = _login(harness, "alice", "alice-secret")
    assert _topic(harness, alice, "a1") == ErrorCode.topic_authorization_failed
    assert _topic(harness, admin, "a1") == ErrorCode.none
    assert _topic(harness, admin, "secret") == ErrorCode.none
    describe = request(29, 3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                       principal_filter=None, host_filter=None, operation=1, permission_type=1)  # fmt: skip
    assert harness.call(describe, alice).error_code == ErrorCode.cluster_authorization_failed
    assert _create(harness, alice, (2, "a", 4, ALICE, 3, 3)) == [ErrorCode.cluster_authorization_failed]
    codes = _create(
        harness,
        admin,
        (2, "a", 4, ALICE, 3, 3),  # prefixed READ on a*
        (2, "a1", 3, ALICE, 4, 3),  # literal WRITE on a1
        (4, "other", 3, ALICE, 7, 3),  # a CLUSTER resource not named kafka-cluster
        (2, "a", 4, ALICE, 3, 3),  # the same again: success, no second record
    )
    assert codes == [0, 0, ErrorCode.invalid_request, 0]
    assert len(harness.broker.image.acls) == 2
    listed = harness.call(describe, admin)
    assert listed.error_code == ErrorCode.none
    assert sorted((r.resource_name, int(r.pattern_type)) for r in listed.resources) == [("a", 4), ("a1", 3)]
    everything = _metadata(harness, alice, None)
    assert [t.name for t in everything.topics] == ["a1"]  # "secret" is filtered out
    assert everything.topics[0].topic_authorized_operations == (1 << 3) | (1 << 4) | (1 << 8)
    asked = _metadata(harness, alice, ["secret", "nope"])
    assert [int(t.error_code) for t in asked.topics] == [ErrorCode.topic_authorization_failed] * 2
    lo = harness.call(request(2, 7, replica_id=-1, isolation_level=0, topics=[
        {"name": "secret", "partitions": [{"partition_index": 0, "timestamp": -1}]}]), alice)  # fmt: skip
    assert lo.topics[0].partitions[0].error_code == ErrorCode.topic_authorization_failed
    join = request(11, 5, group_id="g", session_timeout=10000, rebalance_timeout=10000, member_id="",
                   protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}])  # fmt: skip
    assert harness.call(join, alice).error_code == ErrorCode.group_authorization_failed
    init = request(22, 4, transactional_id=None, transaction_timeout=1000)
    assert harness.call(init, alice).error_code == ErrorCode.none  # WRITE on a topic suffices
    init_txn = request(22, 4, transactional_id="t", transaction_timeout=1000)
    assert harness.call(init_txn, alice).error_code == ErrorCode.transactional_id_authorization_failed
    delete = request(31, 3, filters=[{"resource_type_filter": 2, "resource_name_filter": "a",
                                      "pattern_type_filter": 4, "principal_filter": None, "host_filter": None,
                                      "operation": 1, "permission_type": 1}])  # fmt: skip
    deleted = harness.call(delete, admin).filter_results[0]
    assert deleted.error_code == ErrorCode.none and [m.resource_name for m in deleted.matching_acls] == ["a"]
    assert [(a.resource_name) for _, a in harness.broker.image.acls] == ["a1"]
    restarted = BrokerHarness(*ACL_CONFIGS, store=harness.store)  # replayed from the metadata log
    assert [a for _, a in restarted.broker.image.acls] == [a for _, a in harness.broker.image.acls]


def test_without_an_authorizer_the_acl_apis_are_security_disabled() -> None:
    harness = BrokerHarness()
    answer = harness.call(
        request(29, 3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                principal_filter=None, host_filter=None, operation=1, permission_type=1)
    )  # fmt: skip
    assert answer.error_code == ErrorCode.security_disabled
    cluster = harness.call(request(60, 1, include_cluster_authorized_operations=True))
    assert cluster.cluster_authorized_operations > 0  # every cluster operation, no authorizer
    assert harness.call(
        request(60, 1, include_cluster_authorized_operations=False)
    ).cluster_authorized_operations == -(2**31)


def test_prefix_index_follows_adds_and_removes_and_bounds_lookups() -> None:
    """A removed PREFIXED ACL no longer applies; a long name is matched by looking up only the lengths
    PREFIXED names have (hostile 32 KiB group ids cost a few lookups)."""
    store = AclStore()
    acl_id = uuid.UUID(int=1)
    store.add(acl_id, _acl(G, "ab", Op.READ, pattern=PRE))
    store.add(uuid.UUID(int=2), _acl(G, "ab", Op.WRITE, pattern=PRE))
    long_name = "ab" + "x" * 32_766
    assert len(list(store.matching(G, long_name))) == 2
    store.remove(acl_id)
    assert [a.operation for a in store.matching(G, long_name)] == [Op.WRITE]
    store.remove(uuid.UUID(int=2))
    assert list(store.matching(G, long_name)) == [] and len(store) == 0


def _fetch_by_id(
    harness: BrokerHarness,
    cid: int,
    version: int,
    topic_id: uuid.UUID,
    replica_id: int = -1,
    wait_ms: int = 0,
) -> list[tuple[uuid.UUID, int]]:
    """A fetch naming one partition by topic id (v13+); the (topic id, error) of each answered
    partition, or [] when no answer came yet."""
    replica_state = {"replica_id": replica_id, "replica_epoch": -1}  # v15+; replica_id before
    partition = {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}  # fmt: skip
    body = request(1, version, replica_id=replica_id, replica_state=replica_state, max_wait=wait_ms,
                   min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                   forgotten_topics_data=[], rack_id="",
                   topics=[{"topic_id": topic_id, "partitions": [partition]}])  # fmt: skip
    harness.send(cid, body)
    if not harness.responses.get(cid):
        return []
    answer = harness.take(cid, body)
    return [(t.topic_id, int(p.error_code)) for t in answer.responses for p in t.partitions]


def _produce_by_id(harness: BrokerHarness, cid: int, topic_id: uuid.UUID) -> list[int]:
    topic_data = [{"topic_id": topic_id, "partition_data": [{"index": 0, "records": None}]}]
    body = request(0, 13, transactional_id=None, acks=1, timeout=1000, topic_data=topic_data)
    return [int(p.error_code) for t in harness.call(body, cid).responses for p in t.partition_responses]


def test_fetch_and_produce_by_topic_id_are_authorized() -> None:
    """Fetch v13+ and Produce v13 name topics by id: the id is resolved, then the principal needs READ
    (WRITE) on the topic; an id the broker does not know is UNKNOWN_TOPIC_ID, a known one refused
    TOPIC_AUTHORIZATION_FAILED (Kafka's KafkaApis.handleFetchRequest / handleProduceRequest). A fetch
    whose every partition is refused is answered at once (nothing of a refused topic is read, so its
    data cannot move the answer's timing); a follower's fetch without CLUSTER_ACTION is refused for
    every partition, ids it does not know included."""
    harness = BrokerHarness(*ACL_CONFIGS)
    admin = _login(harness, "admin", "admin-secret")
    alice = _login(harness, "alice", "alice-secret")
    assert _topic(harness, admin, "secret") == ErrorCode.none
    known = harness.broker.image.topics["secret"].topic_id
    unknown = uuid.UUID(int=12345)
    refused, missing = int(ErrorCode.topic_authorization_failed), int(ErrorCode.unknown_topic_id)
    assert _produce_by_id(harness, alice, known) == [refused]
    assert _produce_by_id(harness, alice, unknown) == [missing]
    assert _produce_by_id(harness, admin, known) == [int(ErrorCode.invalid_record)]  # authorized: no records
    for version in (13, 18):
        assert _fetch_by_id(harness, alice, version, known) == [(known, refused)]
        assert _fetch_by_id(harness, alice, version, unknown) == [(unknown, missing)]
        assert _fetch_by_id(harness, alice, version, known, wait_ms=10_000) == [(known, refused)]
        assert _fetch_by_id(harness, alice, version, unknown, replica_id=2) == [(unknown, refused)]
        assert _fetch_by_id(harness, admin, version, unknown, replica_id=2) == [(unknown, missing)]
        assert _fetch_by_id(harness, admin, version, known) == [(known, int(ErrorCode.none))]
    assert _create(harness, admin, (2, "secret", 3, ALICE, 3, 3), (2, "secret", 3, ALICE, 4, 3)) == [0, 0]
    assert _fetch_by_id(harness, alice, 18, known) == [(known, int(ErrorCode.none))]
    assert _fetch_by_id(harness, alice, 18, known, wait_ms=10_000) == []  # waits for data, as any fetch
    harness.advance(10_001)
    assert len(harness.responses[alice]) == 1
    harness.responses[alice].clear()
    assert _produce_by_id(harness, alice, known) == [int(ErrorCode.invalid_record)]


def _group_world(*topics: str) -> tuple[BrokerHarness, int, int]:
    """A broker with ACLs and ``__consumer_offsets``, the admin's and alice's connections, and
    ``topics`` made by the admin."""
    harness = BrokerHarness(
        *ACL_CONFIGS, "offsets.topic.num.partitions=1", "offsets.topic.replication.factor=1"
    )
    admin = _login(harness, "admin", "admin-secret")
    alice = _login(harness, "alice", "alice-secret")
    assert [_topic(harness, admin, t) for t in topics] == [ErrorCode.none] * len(topics)
    harness.call(request(10, 3, key="any", key_type=0), admin)  # creates __consumer_offsets
    return harness, admin, alice


def test_consumer_group_heartbeat_needs_describe_on_subscribed_topics() -> None:
    """KAFKA-18813 (KafkaApis.handleConsumerGroupHeartbeat): READ on the group first, then DESCRIBE on
    every topic ``subscribed_topic_names`` names, existing or not; else TOPIC_AUTHORIZATION_FAILED."""
    harness, admin, alice = _group_world("seen", "hidden")

    def heartbeat(*topics: str) -> Any:
        body = request(68, 1, group_id="g", member_id="m1", member_epoch=0, rebalance_timeout=30_000,
                       topic_partitions=[], subscribed_topic_names=list(topics))  # fmt: skip
        return harness.call(body, alice)

    assert heartbeat("seen").error_code == ErrorCode.group_authorization_failed  # the group first
    assert _create(harness, admin, (3, "g", 3, ALICE, 3, 3), (2, "seen", 3, ALICE, 8, 3)) == [0, 0]
    for topics in (("seen", "hidden"), ("hidden",), ("seen", "no-such-topic")):
        refused = heartbeat(*topics)
        assert refused.error_code == ErrorCode.topic_authorization_failed, topics
        assert refused.error_message == "Topic authorization failed." and refused.member_epoch == 0
    joined = heartbeat("seen")
    assert (joined.error_code, joined.member_epoch) == (ErrorCode.none, 1)


def test_describe_quorum_needs_describe_on_the_cluster() -> None:
    """ControllerApis.handleDescribeQuorum: CLUSTER_AUTHORIZATION_FAILED at the top, no topics,
    without DESCRIBE on the cluster."""
    harness = BrokerHarness(*ACL_CONFIGS)
    admin = _login(harness, "admin", "admin-secret")
    alice = _login(harness, "alice", "alice-secret")
    body = request(
        55, 2, topics=[{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    )
    refused = harness.call(body, alice)
    assert (refused.error_code, list(refused.topics)) == (ErrorCode.cluster_authorization_failed, [])
    assert harness.call(body, admin).error_code == ErrorCode.none
    assert _create(harness, admin, (4, "kafka-cluster", 3, ALICE, 8, 3)) == [0]
    described = harness.call(body, alice)
    assert described.error_code == ErrorCode.none and described.topics[0].partitions[0].leader_id == 1


def test_offset_commit_without_read_on_the_group_refuses_every_partition() -> None:
    """KafkaApis.handleOffsetCommitRequest answers a principal without READ on the group with
    OffsetCommitRequest.getErrorResponse: GROUP_AUTHORIZATION_FAILED on every partition, those of
    topic ids the broker does not know included (v10 names topics by id)."""
    harness = BrokerHarness(*ACL_CONFIGS)
    admin = _login(harness, "admin", "admin-secret")
    alice = _login(harness, "alice", "alice-secret")
    assert _topic(harness, admin, "t") == ErrorCode.none
    known = harness.broker.image.topics["t"].topic_id
    partition = {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": ""}  # fmt: skip
    topics = [{"topic_id": known, "partitions": [partition]},
              {"topic_id": uuid.UUID(int=77), "partitions": [partition]}]  # fmt: skip
    body = request(8, 10, group_id="g", generation_id_or_member_epoch=-1, member_id="",
                   group_instance_id=None, topics=topics)  # fmt: skip
    answer = harness.call(body, alice)
    codes = [int(p.error_code) for t in answer.topics for p in t.partitions]
    assert codes == [ErrorCode.group_authorization_failed] * 2


def test_consumer_group_describe_withholds_groups_naming_undescribable_topics() -> None:
    """KAFKA-18813 (KafkaApis.handleConsumerGroupDescribe): a group whose members subscribe to or
    are assigned a topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED, with
    no members; with DESCRIBE on it the group is described."""
    harness, admin, alice = _group_world("hidden")
    join = request(68, 1, group_id="g", member_id="m1", member_epoch=0, rebalance_timeout=30_000,
                   topic_partitions=[], subscribed_topic_names=["hidden"])  # fmt: skip
    assert harness.call(join, admin).error_code == ErrorCode.none
    describe = request(69, 1, group_ids=["g"], include_authorized_operations=False)
    assert _create(harness, admin, (3, "g", 3, ALICE, 8, 3)) == [0]  # DESCRIBE on the group
    (refused,) = harness.call(describe, alice).groups
    assert (refused.error_code, list(refused.members)) == (ErrorCode.topic_authorization_failed, [])
    assert _create(harness, admin, (2, "hidden", 3, ALICE, 8, 3)) == [0]
    (described,) = harness.call(describe, alice).groups
    assert described.error_code == ErrorCode.none
    assert [list(m.subscribed_topic_names) for m in described.members] == [["hidden"]]


def test_share_group_heartbeat_needs_describe_on_subscribed_topics() -> None:
    """KAFKA-18817 (KafkaApis.handleShareGroupHeartbeat): as ConsumerGroupHeartbeat, READ on the
    group, then DESCRIBE on every subscribed topic, else TOPIC_AUTHORIZATION_FAILED."""
    harness, admin, alice = _group_world("hidden")
    join = request(76, 1, group_id="sg", member_id="m1", member_epoch=0, rack_id=None,
                   subscribed_topic_names=["hidden"])  # fmt: skip
    assert harness.call(join, alice).error_code == ErrorCode.group_authorization_failed
    assert _create(harness, admin, (3, "sg", 3, ALICE, 3, 3)) == [0]
    refused = harness.call(join, alice)
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.topic_authorization_failed,
        TOPIC_REFUSED,
    )
    assert _create(harness, admin, (2, "hidden", 3, ALICE, 8, 3)) == [0]
    joined = harness.call(join, alice)
    assert (joined.error_code, joined.member_epoch) == (ErrorCode.none, 1)
