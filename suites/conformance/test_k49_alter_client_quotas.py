"""Client quotas over the protocol: AlterClientQuotas (49) set, checked and removed, read back with
DescribeClientQuotas (48), and a producer_byte_rate quota enforced; skipped where the target does
not advertise both.

Kafka's rules: ``metadata/src/main/java/org/apache/kafka/controller/ClientQuotaControlManager.java``
(``user``/``client-id`` entities take producer_byte_rate and consumer_byte_rate, integral, and
request_percentage and controller_mutation_rate; ``ip`` entities connection_creation_rate and may
not be combined with the others; every value > 0; any other key, type or combination is
INVALID_REQUEST for that entity, which then writes nothing; a removal deletes the key) and
``QuorumController.alterClientQuotas`` (validate_only answers the same and writes nothing). The
request goes to any broker, as Kafka's admin client sends it (a Kafka 4 broker forwards it to the
controller); a broker answers DescribeClientQuotas from its metadata image, which it applies a moment
after the controller commits, so the read back waits for it (bounded). Users are named per test
(``kh-...``) and their quotas removed after it.

Enforcement (KIP-219; ``core/src/main/scala/kafka/server/ClientQuotaManager.scala``,
``KafkaApis.handleProduceRequest``): a produce that takes its client past producer_byte_rate is
appended and answered at once with ``throttle_time_ms`` > 0 (the rate over Kafka's minimum 10 s of
windows: 12 kB against 1024 B/s is about 1.8 s); the broker then mutes that connection for the
throttle time, so the case uses a connection of its own, whose next request is answered after it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest

from fixtures.wire import Capabilities, Router, WireClient, WireError, build_request, ops
from fixtures.wire import client_quotas as cq
from reference_impl.protocol.record_set import build_batch

from .expect import expect, expect_code, expect_equal
from .quota_common import CONTROL, IMAGE, SETTLE_S, quota_limited

FEATURE = "Client quotas"
KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")


@pytest.fixture
def admin(router: Router, caps: Capabilities) -> WireClient:
    for api in (48, 49):
        if not caps.supports(api):
            pytest.skip(f"the target does not advertise API {api} (KIP-546 client quota administration)")
    return router.any()


@pytest.fixture
def versions(caps: Capabilities) -> tuple[int, int]:
    """(AlterClientQuotas, DescribeClientQuotas) versions to speak."""
    return caps.best(49), caps.best(48)


@pytest.fixture
def user(admin: WireClient, versions: tuple[int, int]) -> Iterator[str]:
    name = f"kh-{uuid.uuid4().hex[:8]}"
    yield name
    for e in (cq.entity(user=name), cq.entity(user=name, client_id="kh-app")):  # best effort
        try:
            cq.alter(admin, [(e, dict.fromkeys(KEYS))], version=versions[0])
        except WireError:
            break


def _quotas_of(admin: WireClient, version: int, name: str) -> tuple[str, dict[cq.Entity, dict[str, float]]]:
    return cq.describe(admin, [("user", cq.EXACT, name)], version=version)


def _settled(
    admin: WireClient, version: int, name: str, expected: dict[cq.Entity, dict[str, float]]
) -> dict[cq.Entity, dict[str, float]]:
    """The user's quotas once they equal ``expected``, or as they are after :data:`SETTLE_S`."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        top, found = _quotas_of(admin, version, name)
        expect_code(top, "NONE", rule=IMAGE)
        if found == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_alter_describe_and_remove(admin: WireClient, versions: tuple[int, int], user: str) -> None:
    alter_v, describe_v = versions
    alone, with_app = cq.entity(user=user), cq.entity(user=user, client_id="kh-app")
    done = cq.alter(
        admin,
        [
            (alone, {"producer_byte_rate": 1_048_576, "consumer_byte_rate": 2_097_152}),
            (with_app, {"request_percentage": 50.5}),
        ],
        version=alter_v,
    )
    expect_equal({r.entity: r.error for r in done}, {alone: "NONE", with_app: "NONE"}, CONTROL, "results")
    expected = {
        alone: {"producer_byte_rate": 1_048_576.0, "consumer_byte_rate": 2_097_152.0},
        with_app: {"request_percentage": 50.5},
    }
    expect_equal(_settled(admin, describe_v, user, expected), expected, IMAGE, "quotas read back")
    gone = cq.alter(admin, [(alone, {"consumer_byte_rate": None})], version=alter_v)
    expect_code(gone[0].error, "NONE", rule=CONTROL, where="removal")
    expected[alone] = {"producer_byte_rate": 1_048_576.0}
    expect_equal(_settled(admin, describe_v, user, expected), expected, IMAGE, "after the removal")


def test_validate_only_writes_nothing(admin: WireClient, versions: tuple[int, int], user: str) -> None:
    alter_v, describe_v = versions
    checked = cq.alter(
        admin, [(cq.entity(user=user), {"producer_byte_rate": 4096})], version=alter_v, validate_only=True
    )
    expect_code(checked[0].error, "NONE", rule=CONTROL, where="validate_only")
    # a change sent after it, so once that one shows, the validate_only one would have too
    cq.alter(admin, [(cq.entity(user=user), {"consumer_byte_rate": 8192})], version=alter_v)
    expected = {cq.entity(user=user): {"consumer_byte_rate": 8192.0}}
    expect_equal(_settled(admin, describe_v, user, expected), expected, CONTROL, "validate_only wrote")


@pytest.mark.parametrize(
    ("case", "names", "ops"),
    [
        ("unknown-key", {"user": "U"}, {"kh_no_such_quota": 1.0}),
        ("ip-key-on-user", {"user": "U"}, {"connection_creation_rate": 10.0}),
        ("fractional-byte-rate", {"user": "U"}, {"producer_byte_rate": 1.5}),
        ("zero", {"user": "U"}, {"consumer_byte_rate": 0.0}),
        ("negative", {"user": "U"}, {"request_percentage": -5.0}),
        ("ip-with-user", {"user": "U", "ip": "127.0.0.1"}, {"connection_creation_rate": 10.0}),
        ("unknown-entity-type", {"user": "U", "kh-group": "g"}, {"producer_byte_rate": 1024.0}),
        ("empty-name", {"user": ""}, {"producer_byte_rate": 1024.0}),
    ],
)
def test_refusals_per_entity(
    admin: WireClient,
    versions: tuple[int, int],
    user: str,
    case: str,
    names: dict[str, str],
    ops: dict[str, float],
) -> None:
    alter_v, describe_v = versions
    bad = frozenset((t, user if n == "U" else n) for t, n in names.items())
    good = cq.entity(user=user, client_id="kh-app")
    results = {
        r.entity: r
        for r in cq.alter(admin, [(bad, ops), (good, {"producer_byte_rate": 2048})], version=alter_v)
    }
    expect(bad in results, CONTROL, f"{case}: no result for the refused entity: {list(results)}")
    expect_code(results[bad].error, "INVALID_REQUEST", rule=CONTROL, where=case)
    expect_code(results[good].error, "NONE", rule=CONTROL, where=f"{case}: the other entity of the request")
    expected = {good: {"producer_byte_rate": 2048.0}}
    expect_equal(_settled(admin, describe_v, user, expected), expected, CONTROL, f"{case}: what was written")


def test_every_broker_reads_a_change_made_through_another(
    router: Router, admin: WireClient, versions: tuple[int, int], user: str
) -> None:
    """On a cluster: sent to a broker Metadata does not name the controller (a Kafka 4 broker, and the
    reference, forward it), the change is read back from every broker's image."""
    if not router.is_cluster:
        pytest.skip("needs a cluster (--brokers 3): on one broker there is no other image to replicate to")
    alter_v, describe_v = versions
    router.refresh()
    others = sorted(n for n in router.brokers if n != router.controller_id)
    through = router.node(others[0])
    done = cq.alter(through, [(cq.entity(user=user), {"producer_byte_rate": 65_536})], version=alter_v)
    expect_code(done[0].error, "NONE", rule=CONTROL, where=f"through broker {others[0]}")
    expected = {cq.entity(user=user): {"producer_byte_rate": 65_536.0}}
    for node in sorted(router.brokers):
        found = _settled(router.node(node), describe_v, user, expected)
        expect_equal(found, expected, IMAGE, f"quotas read back on broker {node}")


Limited = Callable[[str], AbstractContextManager[WireClient]]
"""``limited(key)``: a connection of its own to the test topic's leader, as a client (a fresh client
id) whose ``key`` quota is 1024 B/s, removed afterwards."""


@pytest.fixture
def limited(
    router: Router,
    admin: WireClient,
    versions: tuple[int, int],
    topic: str,
    wire_factory: Callable[..., WireClient],
) -> Limited:
    def open_limited(key: str) -> AbstractContextManager[WireClient]:
        leader = router.leader_of(topic)
        at = router.node(leader) if leader is not None else router.any()

        def open_as(address: str, client_id: str) -> WireClient:
            return wire_factory(address, client_id=client_id)

        return quota_limited(admin, at, open_as, {key: 1024}, versions=versions)

    return open_limited


def test_a_producer_over_its_quota_is_throttled(caps: Capabilities, topic: str, limited: Limited) -> None:
    if not caps.supports("produce", 3):
        pytest.skip("the target does not advertise Produce v3+ (record batches)")
    with limited("producer_byte_rate") as producer:
        version = caps.best("produce", lo=3, hi=12)  # v13 names topics by id only
        batch = build_batch([(None, b"q" * 12_000)], base_timestamp=int(time.time() * 1000))
        body = {
            "transactional_id": None,
            "acks": 1,
            "timeout": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
        }
        answer = producer.send(build_request("produce", version, body))
        expect_code(answer.responses[0].partition_responses[0].error_code, "NONE", rule="KIP-219")
        throttle_ms = answer.throttle_time.total_seconds() * 1000
        print(f"FIGURE produce-quota-throttle-ms={throttle_ms:.0f}")
        expect(throttle_ms > 0, "KIP-219 ClientQuotaManager", "12 kB against 1024 B/s: throttle_time_ms is 0")
        # the muted connection is served again once the throttle time is over (not timed: printed)
        started = time.monotonic()
        producer.request("api_versions", 0)
        print(f"FIGURE produce-quota-next-answer-after-ms={(time.monotonic() - started) * 1000:.0f}")


def test_a_consumer_over_its_quota_gets_an_empty_throttled_answer(
    router: Router, caps: Capabilities, topic: str, limited: Limited
) -> None:
    """KafkaApis.handleFetchRequest: a fetch whose answer takes the consumer past consumer_byte_rate
    is answered with throttle_time_ms and no partitions (``FetchContext.getThrottledResponse``), and
    what it would have sent is not counted."""
    ops.produce_values(router, caps, topic, [b"c" * 12_000])
    with limited("consumer_byte_rate") as consumer:
        answer, entry = ops.fetch(consumer, caps, topic, 0)
        throttle_ms = answer.throttle_time.total_seconds() * 1000
        print(f"FIGURE fetch-quota-throttle-ms={throttle_ms:.0f}")
        expect(throttle_ms > 0, "KIP-219 ClientQuotaManager", "12 kB against 1024 B/s: throttle_time_ms is 0")
        expect(entry is None, "KafkaApis.handleFetchRequest", f"a throttled fetch carried data: {entry}")
