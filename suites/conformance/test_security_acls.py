"""Authorization as Kafka's broker does it (issue 18): the ACL APIs, and the ACL matrix of API x
resource type x operation, allow and deny, prefixed and wildcard patterns, hosts, the super user,
Metadata filtering and the authorized-operations bitfields.

Kafka's rules: ``metadata/src/main/java/org/apache/kafka/metadata/authorizer/StandardAuthorizerData.java``
(DENY beats ALLOW; DESCRIBE implied by READ, WRITE, DELETE, ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS;
LITERAL, PREFIXED and the ``*`` wildcard; ``User:*``; hosts), ``core/src/main/scala/kafka/server/
KafkaApis.scala`` and ``AclApis.scala`` (which operation each API checks and the error it answers),
``clients/src/main/java/org/apache/kafka/common/acl/AclOperation.java`` (the bitfields' bits).

Target-agnostic, with two principals: the run's (``--command-config`` / ``--security``), which must
administer ACLs, and a restricted one from ``$KH_RESTRICTED_COMMAND_CONFIG`` (a client properties
file; ``--security sasl_plaintext|sasl_ssl`` writes one for ``alice``). Skipped with the reason on a
target without an authorizer (DescribeAcls answers SECURITY_DISABLED) or without the second
principal. Every ACL a test adds names the restricted principal (or ``User:*`` on the test's own
resources) and is removed after the test.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from fixtures.targets.certs import principal_of
from fixtures.targets.secured import RESTRICTED_CONFIG_ENV
from fixtures.wire import Router, WireClient, ops
from fixtures.wire.acls import CLUSTER_NAME, AclBinding, AclFilter, create_acls, delete_acls, describe_acls
from fixtures.wire.capabilities import Capabilities
from fixtures.wire.security import ClientSecurity, default_security, load_command_config
from fixtures.wire.settle import until
from reference_impl.protocol.acl_codes import Operation, PatternType, Permission, ResourceType
from reference_impl.protocol.record_set import build_batch

from .expect import expect, expect_code, expect_equal
from .test_k60_cluster import _unknown_txn_error
from .test_k68_consumer_group import CgMember

FEATURE = "Security: ACLs"
AUTHORIZER_RULE = "StandardAuthorizerData.java"
APIS_RULE = "KafkaApis.scala"
ACL_APIS_RULE = "AclApis.scala"
OTHER_HOST = "192.0.2.1"
"""TEST-NET-1: never the harness's address."""
T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
Op = Operation
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def _bits(*ops_: Operation) -> int:
    out = 0
    for op in ops_:
        out |= 1 << int(op)
    return out


CLUSTER_OPERATIONS = _bits(
    Op.CREATE,
    Op.CLUSTER_ACTION,
    Op.DESCRIBE_CONFIGS,
    Op.ALTER_CONFIGS,
    Op.IDEMPOTENT_WRITE,
    Op.ALTER,
    Op.DESCRIBE,
)
"""Every operation a CLUSTER resource supports (``AclEntry.supportedOperations``)."""


@dataclass
class AclWorld:
    """The two principals' connections, a run-unique name prefix, and the ACLs to remove after."""

    admin: WireClient
    restricted: WireClient
    principal: str
    admin_principal: str | None
    caps: Capabilities
    prefix: str
    added: list[AclBinding]
    router: Router
    """The run's principal, routed: topics are made and their leaders found through it."""
    restricted_at: Callable[[str], WireClient]
    """A restricted connection to the broker at an address (one per address, kept for the test)."""

    def at_leader(self, topic: str) -> WireClient:
        """The restricted principal's connection to ``topic``'s partition 0 leader: on a cluster a
        produce, fetch or offset lookup sent elsewhere is refused for leadership, not for ACLs. The
        leader is found as the run's principal (the restricted one may not describe the topic)."""
        if not self.router.is_cluster:
            return self.restricted
        return self.restricted_at(self.router.to_leader(topic).address)

    def name(self, what: str) -> str:
        return f"{self.prefix}{what}"

    def grant(
        self,
        rtype: ResourceType,
        name: str,
        *operations: Operation,
        permission: Permission = ALLOW,
        pattern: PatternType = LIT,
        principal: str | None = None,
        host: str = "*",
    ) -> None:
        bindings = [
            AclBinding(
                int(rtype), name, int(pattern), principal or self.principal, host, int(op), int(permission)
            )
            for op in operations
        ]
        self.added += bindings
        for binding, outcome in zip(bindings, create_acls(self.admin, bindings), strict=True):
            expect_code(outcome.error, "NONE", rule=ACL_APIS_RULE, where=f"CreateAcls {binding.row()}")
        self.settle(present=bindings)

    def settle(
        self, present: Sequence[AclBinding] = (), absent: Sequence[AclBinding] = (), timeout_s: float = 15.0
    ) -> None:
        """On a cluster, wait until every broker lists the same ACLs. CreateAcls and DeleteAcls are
        answered once the controller commits them; each broker applies the metadata log on its own
        time, as Kafka's do (``AclPublisher``), so a check sent to another broker at once may still
        see the old ACLs: every broker must list ``present`` and none ``absent``."""
        if not self.router.is_cluster:
            return

        behind: list[str] = []

        def applied_everywhere() -> bool:
            behind[:] = []
            for conn in self.router.connections():
                acls = set(describe_acls(conn).acls)
                if not (set(present) <= acls and not acls & set(absent)):
                    behind.append(f"{conn.address} lacks {len(set(present) - acls)} and still has "
                                  f"{len(acls & set(absent))} of the change")  # fmt: skip
            return not behind

        until(applied_everywhere, lambda: f"not every broker applied the ACL change: {behind}", timeout_s)

    def topic(self, what: str) -> str:
        name = self.name(what)
        ops.ensure_topic(self.router, self.caps, name)
        return name


def _connections(open_one: Callable[[str], WireClient]) -> Callable[[str], WireClient]:
    opened: dict[str, WireClient] = {}

    def at(address: str) -> WireClient:
        if address not in opened:
            opened[address] = open_one(address)
        return opened[address]

    return at


@pytest.fixture
def acl(wire_factory: Callable[..., WireClient], caps: Capabilities, router: Router) -> Iterator[AclWorld]:
    if not caps.versions("describe_acls", 1):
        pytest.skip("the target does not advertise DescribeAcls v1+")
    admin = wire_factory()
    described = describe_acls(admin)
    if described.error == ErrorCode.security_disabled:
        pytest.skip("the target has no authorizer (DescribeAcls: SECURITY_DISABLED)")
    expect_code(described.error, "NONE", rule=ACL_APIS_RULE, where="the run's principal lists ACLs")
    path = os.environ.get(RESTRICTED_CONFIG_ENV)
    if not path:
        pytest.skip(
            f"no restricted principal: ${RESTRICTED_CONFIG_ENV} names none (--security ssl, sasl_plaintext "
            "or sasl_ssl makes one; else give a client properties file of a user that is not a super user)"
        )
    restricted_security: ClientSecurity = load_command_config(path)
    restricted = principal_of(restricted_security)
    if restricted is None:
        pytest.skip("the restricted client properties name no SASL user or client certificate: "
                    "its principal is not known here")  # fmt: skip
    run = default_security()
    world = AclWorld(
        admin,
        wire_factory(security=restricted_security),
        restricted,
        principal_of(run) if run is not None else None,
        caps,
        f"kh-acl-{uuid.uuid4().hex[:8]}-",
        [],
        router,
        _connections(lambda address: wire_factory(address, security=restricted_security)),
    )
    yield world
    if world.added:
        filters = [b.as_filter() for b in world.added]
        answers: list[str] = []

        def deleted() -> bool:  # retried: a controller that moved answers NOT_CONTROLLER (retriable)
            answers[:] = [o.error.name for o in delete_acls(admin, filters)]
            return all(code == "none" for code in answers)

        until(deleted, lambda: f"DeleteAcls of the test's ACLs answered {answers}", 15.0, interval_s=0.2)
        world.settle(absent=world.added)  # the next test's "without an ACL" must not meet these


# -- the ACL APIs ------------------------------------------------------------------------------------


def test_acl_apis_create_describe_delete(acl: AclWorld) -> None:
    """CreateAcls adds, DescribeAcls filters as AclBindingFilter (ANY, MATCH, LITERAL, PREFIXED, by
    principal), DeleteAcls removes what its filter matches and returns it."""
    name = acl.name("api")
    acl.grant(T, name, Op.READ)
    acl.grant(T, acl.prefix, Op.WRITE, pattern=PRE)
    acl.grant(G, name, Op.READ, permission=DENY)

    def listed(flt: AclFilter) -> set[tuple[int, str, int, int, int]]:
        outcome = describe_acls(acl.admin, flt)
        expect_code(outcome.error, "NONE", rule=ACL_APIS_RULE)
        return {
            (b.resource_type, b.name, b.pattern, b.operation, b.permission)
            for b in outcome.acls
            if b.principal == acl.principal and b.name.startswith(acl.prefix)
        }

    mine = AclFilter(principal=acl.principal)
    expect_equal(
        listed(mine),
        {
            (T, name, LIT, Op.READ, ALLOW),
            (T, acl.prefix, PRE, Op.WRITE, ALLOW),
            (G, name, LIT, Op.READ, DENY),
        },
        ACL_APIS_RULE,
        "every ACL, ANY filter",
    )
    expect_equal(
        listed(AclFilter(T, name, PatternType.MATCH, acl.principal)),
        {(T, name, LIT, Op.READ, ALLOW), (T, acl.prefix, PRE, Op.WRITE, ALLOW)},
        "ResourcePatternFilter.java",
        "MATCH: the literal and the prefix that apply to the name",
    )
    expect_equal(
        listed(AclFilter(T, name, PatternType.ANY, acl.principal)),
        {(T, name, LIT, Op.READ, ALLOW)},
        "ResourcePatternFilter.java",
        "ANY with a name: patterns of that exact name",
    )
    expect_equal(
        listed(AclFilter(T, acl.prefix, PRE, acl.principal)),
        {(T, acl.prefix, PRE, Op.WRITE, ALLOW)},
        "ResourcePatternFilter.java",
        "PREFIXED",
    )
    expect_equal(listed(AclFilter(G, None, PatternType.ANY, acl.principal, None, Op.ANY, ALLOW)), set(),
                 ACL_APIS_RULE, "permission ALLOW on groups")  # fmt: skip
    (deleted,) = delete_acls(acl.admin, [AclFilter(T, name, LIT, acl.principal)])
    acl.settle(absent=deleted.acls)
    expect_code(deleted.error, "NONE", rule=ACL_APIS_RULE)
    expect_equal([(b.name, b.operation) for b in deleted.acls], [(name, Op.READ)], ACL_APIS_RULE, "deleted")
    expect(
        (T, name, LIT, Op.READ, ALLOW) not in listed(mine), ACL_APIS_RULE, "the deleted ACL is still listed"
    )


def test_acl_apis_refuse_invalid_bindings(acl: AclWorld) -> None:
    """INVALID_REQUEST: a CLUSTER resource not named kafka-cluster, a MATCH pattern, an ANY operation, a
    principal without a type, an empty name (AclControlManager.validateNewAcl, AclApis)."""
    bad = [
        AclBinding(C, "not-the-cluster", LIT, acl.principal, "*", Op.ALTER, ALLOW),
        AclBinding(T, acl.name("m"), PatternType.MATCH, acl.principal, "*", Op.READ, ALLOW),
        AclBinding(T, acl.name("a"), LIT, acl.principal, "*", Op.ANY, ALLOW),
        AclBinding(T, acl.name("p"), LIT, "alice", "*", Op.READ, ALLOW),
        AclBinding(T, "", LIT, acl.principal, "*", Op.READ, ALLOW),
    ]
    acl.added += bad  # removed after, should one have been taken
    for binding, outcome in zip(bad, create_acls(acl.admin, bad), strict=True):
        expect_code(outcome.error, "INVALID_REQUEST", rule="AclControlManager.java", where=str(binding.row()))


def test_restricted_principal_may_not_administer_acls(acl: AclWorld) -> None:
    """DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER: else
    CLUSTER_AUTHORIZATION_FAILED."""
    expect_code(describe_acls(acl.restricted).error, "CLUSTER_AUTHORIZATION_FAILED", rule=ACL_APIS_RULE)
    binding = AclBinding(T, acl.name("x"), LIT, acl.principal, "*", Op.READ, ALLOW)
    acl.added.append(binding)
    (created,) = create_acls(acl.restricted, [binding])
    expect_code(created.error, "CLUSTER_AUTHORIZATION_FAILED", rule=ACL_APIS_RULE)
    (deleted,) = delete_acls(acl.restricted, [AclFilter(principal=acl.principal)])
    expect_code(deleted.error, "CLUSTER_AUTHORIZATION_FAILED", rule=ACL_APIS_RULE)


# -- the matrix: API x resource x operation, no ACL / ALLOW + DENY / ALLOW ---------------------------


def _produce(acl: AclWorld, topic: str) -> Any:
    version = acl.caps.best("produce", hi=12)  # by name: the restricted user may not learn the topic's id
    return ops.produce_values(acl.at_leader(topic), acl.caps, topic, [b"v"], version=version).error_code


def _fetch(acl: AclWorld, topic: str) -> Any:
    version = acl.caps.best("fetch", hi=12)  # by name, as produce
    _response, entry = ops.fetch(acl.at_leader(topic), acl.caps, topic, 0, max_wait_ms=0, version=version)
    return entry.error_code


def _by_id(acl: AclWorld, api: str) -> int:
    """The version of ``api`` that names topics by id (v13+), or a skip with the reason."""
    if not acl.caps.versions(api, 13):
        pytest.skip(f"{api} v13+ (topics by id) is not advertised")
    return acl.caps.best(api, lo=13)


def _fetch_by_id(acl: AclWorld, topic: str) -> Any:
    """The topic named by its id, which the run's principal looks up (KafkaApis.handleFetchRequest
    resolves the id, then wants READ on the topic)."""
    entity = ops.fetch_request(acl.router, acl.caps, topic, 0, version=_by_id(acl, "fetch"), max_wait_ms=0)
    return acl.at_leader(topic).send(entity).responses[0].partitions[0].error_code


def _produce_to_id(acl: AclWorld, topic_id: Any) -> Any:
    batch = build_batch([(None, b"v")], base_timestamp=int(time.time() * 1000))
    topic_data = [{"topic_id": topic_id, "partition_data": [{"index": 0, "records": batch}]}]
    body = {"transactional_id": None, "acks": -1, "timeout": 10_000, "topic_data": topic_data}
    return ops.wire_build("produce", _by_id(acl, "produce"), body)


def _produce_by_id(acl: AclWorld, topic: str) -> Any:
    """As :func:`_fetch_by_id`, for Produce v13 and WRITE (KafkaApis.handleProduceRequest)."""
    entity = _produce_to_id(acl, ops.topic_id(acl.router, acl.caps, topic))
    return acl.at_leader(topic).send(entity).responses[0].partition_responses[0].error_code


def _list_offsets(acl: AclWorld, topic: str) -> Any:
    return ops.list_offset(acl.at_leader(topic), acl.caps, topic, ops.LATEST_TIMESTAMP).error_code


def _metadata(acl: AclWorld, topic: str) -> Any:
    return ops.metadata(acl.restricted, acl.caps, [topic]).topics[0].error_code


def _create_topic(acl: AclWorld, topic: str) -> Any:
    return ops.create_topic(acl.restricted, acl.caps, topic).error_code


def _delete_topic(acl: AclWorld, topic: str) -> Any:
    v = acl.caps.best("delete_topics")
    answer = acl.restricted.request(
        "delete_topics",
        v,
        timeout=15_000,
        topic_names=[topic],
        topics=[{"name": topic, "topic_id": uuid.UUID(int=0)}],
    )
    return answer.responses[0].error_code


def _create_partitions(acl: AclWorld, topic: str) -> Any:
    v = acl.caps.best("create_partitions")
    answer = acl.restricted.request(
        "create_partitions", v, timeout=15_000, validate_only=True,
        topics=[{"name": topic, "count": 2, "assignments": None}],
    )  # fmt: skip
    return answer.results[0].error_code


def _configs(rtype: int, name: str, alter: bool) -> Callable[[AclWorld, str], Any]:
    def run(acl: AclWorld, topic: str) -> Any:
        resource = topic if rtype == 2 else name
        if alter:
            v = acl.caps.best("incremental_alter_configs")
            answer = acl.restricted.request(
                "incremental_alter_configs", v, validate_only=True,
                resources=[{"resource_type": rtype, "resource_name": resource, "configs": [
                    {"name": "retention.ms" if rtype == 2 else "log.retention.ms", "config_operation": 0,
                     "value": "600000"}]}],
            )  # fmt: skip
            return answer.responses[0].error_code
        v = acl.caps.best("describe_configs")
        answer = acl.restricted.request(
            "describe_configs", v, include_synonyms=False, include_documentation=False,
            resources=[{"resource_type": rtype, "resource_name": resource, "configuration_keys": None}],
        )  # fmt: skip
        return answer.results[0].error_code

    return run


def _find_group(acl: AclWorld, name: str) -> Any:
    return ops.find_coordinator(acl.restricted, acl.caps, name, 0)[0]


def _find_txn(acl: AclWorld, name: str) -> Any:
    return ops.find_coordinator(acl.restricted, acl.caps, name, 1)[0]


def _join(acl: AclWorld, name: str) -> Any:
    v = acl.caps.best("join_group")
    entity = ops.wire_build(
        "join_group", v,
        {"group_id": name, "session_timeout": 10_000, "rebalance_timeout": 10_000, "member_id": "",
         "group_instance_id": None, "protocol_type": "consumer",
         "protocols": [{"name": "range", "metadata": b""}]},
    )  # fmt: skip
    return acl.restricted.send(entity).error_code


def _offset_fetch(acl: AclWorld, name: str) -> Any:
    v = acl.caps.best("offset_fetch", hi=7)
    answer = acl.restricted.request("offset_fetch", v, group_id=name, topics=None, require_stable=False)
    return answer.error_code


def _delete_group(acl: AclWorld, name: str) -> Any:
    answer = acl.restricted.request("delete_groups", acl.caps.best("delete_groups"), groups_names=[name])
    return answer.results[0].error_code


def _init_txn(acl: AclWorld, name: str) -> Any:
    v = acl.caps.best("init_producer_id")
    answer = acl.restricted.request(
        "init_producer_id",
        v,
        transactional_id=name,
        transaction_timeout=30_000,
        producer_id=-1,
        producer_epoch=-1,
    )
    return answer.error_code


def _init_idempotent(acl: AclWorld, _name: str) -> Any:
    v = acl.caps.best("init_producer_id")
    answer = acl.restricted.request(
        "init_producer_id",
        v,
        transactional_id=None,
        transaction_timeout=30_000,
        producer_id=-1,
        producer_epoch=-1,
    )
    return answer.error_code


def _delete_records(acl: AclWorld, topic: str) -> Any:
    answer = acl.at_leader(topic).request(
        "delete_records", acl.caps.best("delete_records"), timeout=15_000,
        topics=[{"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}],
    )  # fmt: skip
    return answer.topics[0].partitions[0].error_code


def _describe_producers(acl: AclWorld, topic: str) -> Any:
    answer = acl.at_leader(topic).request(
        "describe_producers", acl.caps.best("describe_producers"),
        topics=[{"name": topic, "partition_indexes": [0]}],
    )  # fmt: skip
    return answer.topics[0].partitions[0].error_code


def _offset_delete(acl: AclWorld, name: str) -> Any:
    answer = acl.restricted.request(
        "offset_delete", acl.caps.best("offset_delete"), group_id=name,
        topics=[{"name": name, "partitions": [{"partition_index": 0}]}],
    )  # fmt: skip
    return answer.error_code


def _describe_transactions(acl: AclWorld, name: str) -> Any:
    """Read raw: Kafka answers an id it does not describe with transaction_start_time -1, which kio's
    timestamp type refuses (as the unknown id of ``test_k60_cluster``)."""
    return _unknown_txn_error(acl.restricted, acl.caps, name)


def _describe_log_dirs(acl: AclWorld, _name: str) -> Any:
    version = acl.caps.best("describe_log_dirs", lo=3)  # v3+: a top-level error code
    answer = acl.restricted.request("describe_log_dirs", version, topics=None)
    return answer.error_code


def _list_reassignments(acl: AclWorld, _name: str) -> Any:
    version = acl.caps.best("list_partition_reassignments")
    answer = acl.restricted.request("list_partition_reassignments", version, timeout=15_000, topics=None)
    return answer.error_code


def _describe_scram(acl: AclWorld, _name: str) -> Any:
    answer = acl.restricted.request(
        "describe_user_scram_credentials", acl.caps.best("describe_user_scram_credentials"), users=None
    )
    return answer.error_code


def _describe_quorum(acl: AclWorld, _name: str) -> Any:
    """The top-level error (Kafka's ControllerApis.handleDescribeQuorum wants DESCRIBE on the cluster)."""
    partition = {"partition_index": 0}
    topics = [{"topic_name": "__cluster_metadata", "partitions": [partition]}]
    answer = acl.restricted.request("describe_quorum", acl.caps.best("describe_quorum"), topics=topics)
    return answer.error_code


def _consumer_group_describe(acl: AclWorld, name: str) -> Any:
    answer = acl.restricted.request(
        "consumer_group_describe", acl.caps.best("consumer_group_describe"), group_ids=[name],
        include_authorized_operations=False,
    )  # fmt: skip
    return answer.groups[0].error_code


@dataclass(frozen=True)
class Case:
    api: str
    rtype: ResourceType
    operation: Operation
    run: Callable[[AclWorld, str], Any]
    denied: str
    topic: bool = True
    """The resource is a topic the admin creates first (else a name no one uses)."""


TOPIC_DENIED, GROUP_DENIED = "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"
TXN_DENIED, CLUSTER_DENIED = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"
MATRIX = [
    Case("produce", T, Op.WRITE, _produce, TOPIC_DENIED),
    Case("fetch", T, Op.READ, _fetch, TOPIC_DENIED),
    Case("produce(by-id)", T, Op.WRITE, _produce_by_id, TOPIC_DENIED),
    Case("fetch(by-id)", T, Op.READ, _fetch_by_id, TOPIC_DENIED),
    Case("list_offsets", T, Op.DESCRIBE, _list_offsets, TOPIC_DENIED),
    Case("metadata", T, Op.DESCRIBE, _metadata, TOPIC_DENIED),
    Case("create_topics", T, Op.CREATE, _create_topic, TOPIC_DENIED, topic=False),
    Case("delete_topics", T, Op.DELETE, _delete_topic, TOPIC_DENIED),
    Case("create_partitions", T, Op.ALTER, _create_partitions, TOPIC_DENIED),
    Case("describe_configs(topic)", T, Op.DESCRIBE_CONFIGS, _configs(2, "", False), TOPIC_DENIED),
    Case("incremental_alter_configs(topic)", T, Op.ALTER_CONFIGS, _configs(2, "", True), TOPIC_DENIED),
    Case("delete_records", T, Op.DELETE, _delete_records, TOPIC_DENIED),
    Case("describe_producers", T, Op.READ, _describe_producers, TOPIC_DENIED),
    Case("offset_delete", G, Op.DELETE, _offset_delete, GROUP_DENIED, topic=False),
    Case("describe_transactions", X, Op.DESCRIBE, _describe_transactions, TXN_DENIED, topic=False),
    Case("describe_log_dirs", C, Op.DESCRIBE, _describe_log_dirs, CLUSTER_DENIED, topic=False),
    Case("list_partition_reassignments", C, Op.DESCRIBE, _list_reassignments, CLUSTER_DENIED, topic=False),
    Case("consumer_group_describe", G, Op.DESCRIBE, _consumer_group_describe, GROUP_DENIED, topic=False),
    Case("describe_user_scram_credentials", C, Op.DESCRIBE, _describe_scram, CLUSTER_DENIED, topic=False),
    Case("describe_quorum", C, Op.DESCRIBE, _describe_quorum, CLUSTER_DENIED, topic=False),
    Case("find_coordinator(group)", G, Op.DESCRIBE, _find_group, GROUP_DENIED, topic=False),
    Case("join_group", G, Op.READ, _join, GROUP_DENIED, topic=False),
    Case("offset_fetch", G, Op.DESCRIBE, _offset_fetch, GROUP_DENIED, topic=False),
    Case("delete_groups", G, Op.DELETE, _delete_group, GROUP_DENIED, topic=False),
    Case("find_coordinator(txn)", X, Op.DESCRIBE, _find_txn, TXN_DENIED, topic=False),
    Case("init_producer_id(txn)", X, Op.WRITE, _init_txn, TXN_DENIED, topic=False),
    Case("init_producer_id(idempotent)", C, Op.IDEMPOTENT_WRITE, _init_idempotent, CLUSTER_DENIED,
         topic=False),
    Case("describe_configs(broker)", C, Op.DESCRIBE_CONFIGS, _configs(4, "", False), CLUSTER_DENIED,
         topic=False),
    Case("incremental_alter_configs(broker)", C, Op.ALTER_CONFIGS, _configs(4, "", True), CLUSTER_DENIED,
         topic=False),
]  # fmt: skip


@pytest.mark.parametrize("case", MATRIX, ids=[c.api for c in MATRIX])
def test_acl_matrix(acl: AclWorld, case: Case) -> None:
    """The API is refused without an ACL, refused with an ALLOW and a DENY for the operation (DENY beats
    ALLOW), and not refused with the ALLOW alone (what else it answers is not this check's)."""
    if not acl.caps.versions(case.api.partition("(")[0]):
        pytest.skip(f"{case.api} is not advertised")
    name = acl.topic(case.api.replace("(", "-").replace(")", "")) if case.topic else acl.name(case.api[:10])
    resource = CLUSTER_NAME if case.rtype == C else name
    expect_code(case.run(acl, name), case.denied, rule=APIS_RULE, where=f"{case.api} without an ACL")
    acl.grant(case.rtype, resource, case.operation)
    acl.grant(case.rtype, resource, case.operation, permission=DENY)
    expect_code(case.run(acl, name), case.denied, rule=AUTHORIZER_RULE, where=f"{case.api}: DENY and ALLOW")
    (denial,) = delete_acls(
        acl.admin, [AclFilter(case.rtype, resource, LIT, acl.principal, None, case.operation, DENY)]
    )
    acl.settle(absent=denial.acls)
    got = case.run(acl, name)
    expect(
        ErrorCode(got).name.upper() != case.denied,
        AUTHORIZER_RULE,
        f"{case.api} with ALLOW {case.operation.name} on {case.rtype.name}:{resource}: still {case.denied}",
    )


def test_unknown_topic_id_is_unknown_whatever_the_acls(acl: AclWorld) -> None:
    """Fetch v13+ and Produce v13 naming an id no topic has: UNKNOWN_TOPIC_ID, before any ACL is
    asked (KafkaApis.handleFetchRequest / handleProduceRequest: Kafka holds topic ids not sensitive,
    a known one without READ/WRITE is TOPIC_AUTHORIZATION_FAILED, the matrix's by-id cases)."""
    unknown = uuid.uuid4()
    fetch_version = _by_id(acl, "fetch")
    entity = ops.wire_build(
        "fetch", fetch_version,
        {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
         "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
         "topics": [{"topic_id": unknown, "partitions": [
             {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20, "log_start_offset": -1,
              "current_leader_epoch": -1}]}]},
    )  # fmt: skip
    fetched = acl.restricted.send(entity).responses[0].partitions[0].error_code
    expect_code(fetched, "UNKNOWN_TOPIC_ID", rule=APIS_RULE, where="Fetch of an unknown topic id")
    if acl.caps.versions("produce", 13):
        produced = acl.restricted.send(_produce_to_id(acl, unknown))
        code = produced.responses[0].partition_responses[0].error_code
        expect_code(code, "UNKNOWN_TOPIC_ID", rule=APIS_RULE, where="Produce to an unknown topic id")


def test_consumer_group_heartbeat_needs_describe_on_subscribed_topics(acl: AclWorld) -> None:
    """ConsumerGroupHeartbeat wants READ on the group, then DESCRIBE on every topic
    ``subscribed_topic_names`` names, existing or not: else TOPIC_AUTHORIZATION_FAILED for the whole
    heartbeat (KafkaApis.handleConsumerGroupHeartbeat, KAFKA-18813, Kafka 4.0)."""
    if not acl.caps.versions("consumer_group_heartbeat"):
        pytest.skip("ConsumerGroupHeartbeat is not advertised")
    seen, hidden = acl.topic("cg-seen"), acl.topic("cg-hidden")
    group = acl.name("cg-group")
    member = CgMember(acl.restricted_at(acl.router.to_coordinator(group).address), acl.caps, group)
    expect_code(member.join([seen]).error_code, GROUP_DENIED, rule=APIS_RULE, where="no READ on the group")
    acl.grant(G, group, Op.READ)
    acl.grant(T, seen, Op.DESCRIBE)
    for topics in ([seen, hidden], [hidden], [seen, acl.name("cg-no-such-topic")]):
        answer = member.join(topics)
        expect_code(answer.error_code, TOPIC_DENIED, rule=APIS_RULE, where=f"subscribed to {topics}")
    joined = member.join([seen])
    expect_code(joined.error_code, "NONE", rule=APIS_RULE, where="DESCRIBE on every subscribed topic")
    member.leave()


# -- patterns, hosts, implication, the super user ---------------------------------------------------


def test_prefixed_wildcard_and_host_patterns(acl: AclWorld) -> None:
    """A PREFIXED ACL applies to names that start with it (not to the prefix's neighbours); the LITERAL
    ``*`` to every name; ``User:*`` to every principal; an ACL for another host to no one here."""
    inside, outside = acl.topic("pre-in"), acl.topic("other")
    acl.grant(T, acl.name("pre-"), Op.READ, pattern=PRE)
    expect_code(_fetch(acl, inside), "NONE", rule=AUTHORIZER_RULE, where="READ by a PREFIXED ACL")
    expect_code(_fetch(acl, outside), TOPIC_DENIED, rule=AUTHORIZER_RULE, where="outside the prefix")
    acl.grant(T, outside, Op.WRITE, host=OTHER_HOST)
    expect_code(_produce(acl, outside), TOPIC_DENIED, rule=AUTHORIZER_RULE, where="ALLOW for another host")
    acl.grant(T, outside, Op.WRITE, principal="User:*")
    expect_code(_produce(acl, outside), "NONE", rule=AUTHORIZER_RULE, where="ALLOW for User:*")
    group = acl.name("wild-group")
    acl.grant(G, "*", Op.DESCRIBE)
    expect_code(_find_group(acl, group), "NONE", rule=AUTHORIZER_RULE, where="DESCRIBE by the * ACL")
    acl.grant(G, acl.name("wild-"), Op.ALL, permission=DENY, pattern=PRE)
    expect_code(_find_group(acl, group), GROUP_DENIED, rule=AUTHORIZER_RULE, where="a PREFIXED DENY ALL")


def test_operation_implication(acl: AclWorld) -> None:
    """ALLOW READ implies DESCRIBE; a DENY READ does not deny DESCRIBE; ALLOW ALTER_CONFIGS implies
    DESCRIBE_CONFIGS; ALLOW ALL allows every operation."""
    topic = acl.topic("imply")
    acl.grant(T, topic, Op.READ)
    expect_code(_list_offsets(acl, topic), "NONE", rule=AUTHORIZER_RULE, where="DESCRIBE implied by READ")
    other = acl.topic("imply-deny")
    acl.grant(T, other, Op.DESCRIBE)
    acl.grant(T, other, Op.READ, permission=DENY)
    expect_code(_list_offsets(acl, other), "NONE", rule=AUTHORIZER_RULE, where="DENY READ leaves DESCRIBE")
    expect_code(_fetch(acl, other), TOPIC_DENIED, rule=AUTHORIZER_RULE, where="DENY READ")
    acl.grant(T, topic, Op.ALTER_CONFIGS)
    expect_code(_configs(2, "", False)(acl, topic), "NONE", rule=AUTHORIZER_RULE,
                where="DESCRIBE_CONFIGS implied by ALTER_CONFIGS")  # fmt: skip
    third = acl.topic("imply-all")
    acl.grant(T, third, Op.ALL)
    expect_code(_produce(acl, third), "NONE", rule=AUTHORIZER_RULE, where="WRITE by ALL")


def test_super_user_is_not_bound_by_acls(acl: AclWorld) -> None:
    """A super user (``super.users``) is allowed whatever the ACLs say, a DENY naming it included."""
    if acl.admin_principal is None:
        pytest.skip("the run's principal is not a SASL user: its name is not known here")
    cluster_acls = describe_acls(acl.admin, AclFilter(C)).acls
    if any(b.principal in (acl.admin_principal, "User:*") for b in cluster_acls):
        pytest.skip(f"{acl.admin_principal} has cluster ACLs: whether it is a super user is not known")
    topic = acl.topic("super")
    acl.grant(T, topic, Op.ALL, permission=DENY, principal=acl.admin_principal)
    answer = ops.produce_values(acl.router, acl.caps, topic, [b"v"])
    expect_code(answer.error_code, "NONE", rule="StandardAuthorizer.java: super.users", where="DENY ALL")


# -- Metadata filtering and the authorized-operations bitfields -------------------------------------


def test_metadata_lists_only_described_topics(acl: AclWorld) -> None:
    """Metadata for all topics lists only those the principal may DESCRIBE; one asked for by name
    without DESCRIBE is TOPIC_AUTHORIZATION_FAILED, whether it exists or not (nothing leaks)."""
    seen, hidden = acl.topic("seen"), acl.topic("hidden")
    acl.grant(T, seen, Op.DESCRIBE)
    listed = {t.name for t in ops.metadata(acl.restricted, acl.caps, None).topics}
    expect(seen in listed, APIS_RULE, f"{seen} (DESCRIBE allowed) is not listed")
    expect(hidden not in listed, APIS_RULE, f"{hidden} (no ACL) is listed")
    named = ops.metadata(acl.restricted, acl.caps, [hidden, acl.name("no-such-topic")]).topics
    for entry in named:
        expect_code(entry.error_code, TOPIC_DENIED, rule=APIS_RULE, where=f"Metadata for {entry.name}")
    admin_listed = {t.name for t in ops.metadata(acl.admin, acl.caps, None).topics}
    expect({seen, hidden} <= admin_listed, APIS_RULE, "the run's principal does not see both topics")


def test_describe_topic_partitions_lists_only_described_topics(acl: AclWorld) -> None:
    """DescribeTopicPartitions (KIP-966) authorizes as Metadata (``DescribeTopicPartitionsRequestHandler``):
    an empty list describes only topics the principal may DESCRIBE; a named topic without DESCRIBE is
    TOPIC_AUTHORIZATION_FAILED with the zero topic id, whether it exists or not."""
    if not acl.caps.versions("describe_topic_partitions"):
        pytest.skip("DescribeTopicPartitions is not advertised")
    seen, hidden = acl.topic("dtp-seen"), acl.topic("dtp-hidden")
    acl.grant(T, seen, Op.DESCRIBE)
    v = acl.caps.best("describe_topic_partitions")
    everything = acl.restricted.request(
        "describe_topic_partitions", v, topics=[], response_partition_limit=2000, cursor=None
    )
    listed = {t.name for t in everything.topics}
    expect(seen in listed and hidden not in listed, APIS_RULE, f"listed {sorted(listed)}: {seen} only")
    missing = acl.name("no-such-topic")
    named = acl.restricted.request(
        "describe_topic_partitions", v, topics=[{"name": hidden}, {"name": missing}],
        response_partition_limit=2000, cursor=None,
    )  # fmt: skip
    for entry in named.topics:
        where = f"DescribeTopicPartitions {entry.name}"
        expect_code(entry.error_code, TOPIC_DENIED, rule=APIS_RULE, where=where)
        refused_id = entry.topic_id
        expect(refused_id in (None, uuid.UUID(int=0)), APIS_RULE, f"{where}: topic id {refused_id}")


def test_authorized_operations_bitfields(acl: AclWorld) -> None:
    """``include_topic_authorized_operations`` (Metadata v8+), ``include_cluster_authorized_operations``
    (DescribeCluster) and ``include_authorized_operations`` (DescribeGroups v3+) carry a bit per allowed
    operation (AclOperation codes)."""
    if not acl.caps.versions("metadata", 8):
        pytest.skip("Metadata v8+ (authorized operations) is not advertised")
    topic = acl.topic("bits")
    acl.grant(T, topic, Op.READ, Op.WRITE)
    v = acl.caps.best("metadata")
    answer = acl.restricted.request(
        "metadata", v, topics=[{"name": topic, "topic_id": uuid.UUID(int=0)}],
        allow_auto_topic_creation=False, include_topic_authorized_operations=True,
        include_cluster_authorized_operations=False,
    )  # fmt: skip
    expect_equal(
        answer.topics[0].topic_authorized_operations,
        _bits(Op.READ, Op.WRITE, Op.DESCRIBE),
        AUTHORIZER_RULE,
        "topic_authorized_operations with READ and WRITE (DESCRIBE implied)",
    )
    if acl.caps.versions("describe_cluster"):
        dv = acl.caps.best("describe_cluster")
        mine = acl.restricted.request("describe_cluster", dv, include_cluster_authorized_operations=True)
        expect_equal(mine.cluster_authorized_operations, 0, AUTHORIZER_RULE, "restricted cluster operations")
        acl.grant(C, CLUSTER_NAME, Op.IDEMPOTENT_WRITE)
        mine = acl.restricted.request("describe_cluster", dv, include_cluster_authorized_operations=True)
        expect_equal(mine.cluster_authorized_operations, _bits(Op.IDEMPOTENT_WRITE), AUTHORIZER_RULE,
                     "cluster operations with IDEMPOTENT_WRITE")  # fmt: skip
        unasked = acl.restricted.request("describe_cluster", dv, include_cluster_authorized_operations=False)
        expect_equal(
            unasked.cluster_authorized_operations, -(2**31), APIS_RULE, "not asked: Integer.MIN_VALUE"
        )
    if acl.caps.versions("describe_groups", 3):
        group = acl.name("bits-group")
        acl.grant(G, group, Op.READ)
        gv = acl.caps.best("describe_groups")
        described = acl.restricted.request(
            "describe_groups", gv, groups=[group], include_authorized_operations=True
        )
        expect_equal(described.groups[0].authorized_operations, _bits(Op.READ, Op.DESCRIBE), AUTHORIZER_RULE,
                     "group authorized_operations with READ")  # fmt: skip
