"""request_percentage (KIP-124) and controller_mutation_rate (KIP-599) enforced, over the protocol:
each case sets the quota for a fresh client id with AlterClientQuotas (49), waits until the broker
it talks to describes it (48), exercises it on a connection of its own as that client, and removes
the quota and its topics afterwards; skipped where the target does not advertise 48 and 49.

Kafka's rules (read from Kafka, not copied):

* ``core/src/main/scala/kafka/server/ClientRequestQuotaManager.scala`` and
  ``RequestHandlerHelper.sendResponseMaybeThrottle``: the time the broker's request handlers spend
  on a client's requests is recorded as a percentage of one thread over the quota windows; past
  ``request_percentage`` the answer carries ThrottleTimeMs > 0, bounded at one window
  (``quota.window.size.seconds``, 1 s by default), and the connection is muted that long.
* ``core/src/main/scala/kafka/server/ControllerMutationQuotaManager.scala``,
  ``ControllerApis.scala`` (``newQuotaFor(request, strictSinceVersion)``: CreateTopics 6,
  DeleteTopics 5, CreatePartitions 3) and ``ReplicationControlManager.java``
  (``applyPartitionChangeQuota`` per topic, charged its partitions): a token bucket refilled at
  ``controller_mutation_rate`` partitions/s with a burst of ``controller.quota.window.num`` (11)
  windows of it; a strict version accepts a topic while the bucket is not below zero and then answers
  THROTTLING_QUOTA_EXCEEDED for the next topics with ThrottleTimeMs > 0; an older version creates
  them all and only throttles.

A rate of 1 partition/s gives a burst of 11 under Kafka's default windows: a first topic of 12
partitions passes and leaves the bucket below zero, so a second one is refused (strict) or throttled
(permissive). The request-time case uses a tiny ``request_percentage`` (0.01 % of a thread: 1 ms of
handler time over the 10 s minimum window) and sends Metadata until an answer is throttled (at most
:data:`MAX_TRIES` requests in :data:`TRY_S`); the number it took is printed, not asserted.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, WireError, build_request, ops

from .expect import code_name, expect, expect_code
from .quota_common import OpenAs, quota_limited

FEATURE = "Client quotas"
REQUEST_RULE = "KIP-124 ClientRequestQuotaManager"
MUTATION_RULE = "KIP-599 ControllerMutationQuotaManager"
MAX_TRIES = 200
TRY_S = 20.0
WINDOW_MS = 1000
"""Kafka's default ``quota.window.size.seconds``: the request-time throttle's bound."""
THROTTLED = "THROTTLING_QUOTA_EXCEEDED"
BIG, SMALL = 12, 1
"""Partitions of the first and second topic: the first exhausts a burst of 11."""


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
def open_as(wire_factory: Callable[..., WireClient]) -> OpenAs:
    def open_client(address: str, client_id: str) -> WireClient:
        return wire_factory(address, client_id=client_id)

    return open_client


@pytest.fixture
def names(router: Router, caps: Capabilities, unique: Callable[[str], str]) -> Iterator[list[str]]:
    """Two fresh topic names, deleted (best effort, by the unthrottled admin) after the test."""
    made = [unique("t"), unique("t")]
    yield made
    body = {"topic_names": made, "timeout": 15_000}
    with contextlib.suppress(WireError):
        ops.controller_request(router, "delete_topics", caps.best("delete_topics", hi=5), body, _first_of)


def _first_of(answer: Any) -> Any:
    return answer.responses[0].error_code


def _create_body(topics: dict[str, int]) -> dict[str, Any]:
    entries = [
        {"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [], "configs": []}
        for n, p in topics.items()
    ]
    return {"topics": entries, "timeout": 15_000, "validate_only": False}


def _delete_body(name: str) -> dict[str, Any]:
    return {"topic_names": [name], "timeout": 15_000}


def _throttle_ms(answer: Any) -> float:
    return float(answer.throttle_time.total_seconds() * 1000)


def test_request_time_over_request_percentage_is_throttled(
    router: Router,
    caps: Capabilities,
    admin: WireClient,
    versions: tuple[int, int],
    open_as: OpenAs,
    topic: str,
) -> None:
    at = router.any()
    version = caps.best("metadata", lo=3)  # ThrottleTimeMs since v3
    with quota_limited(admin, at, open_as, {"request_percentage": 0.01}, versions=versions) as client:
        deadline, sent, throttle_ms = time.monotonic() + TRY_S, 0, 0.0
        while throttle_ms <= 0 and sent < MAX_TRIES and time.monotonic() < deadline:
            throttle_ms = _throttle_ms(ops.metadata(client, caps, [topic], version=version))
            sent += 1
        print(f"FIGURE request-quota-requests-until-throttled={sent} throttle-ms={throttle_ms:.0f}")
        expect(throttle_ms > 0, REQUEST_RULE, f"{sent} Metadata requests against 0.01 %: never throttled")
        expect(throttle_ms <= WINDOW_MS, REQUEST_RULE, f"throttle {throttle_ms:.0f} ms is above one window")


def test_strict_create_topics_refuses_past_controller_mutation_rate(
    router: Router,
    caps: Capabilities,
    admin: WireClient,
    versions: tuple[int, int],
    open_as: OpenAs,
    names: list[str],
) -> None:
    if not caps.supports("create_topics", 6):
        pytest.skip("the target does not advertise CreateTopics v6+ (the strict mutation quota)")
    first, second = names
    at = router.to_controller()
    with quota_limited(admin, at, open_as, {"controller_mutation_rate": 1}, versions=versions) as client:
        body = _create_body({first: BIG, second: SMALL})
        answer = client.send(build_request("create_topics", caps.best("create_topics", lo=6), body))
        errors = {t.name: code_name(t.error_code) for t in answer.topics}
        print(f"FIGURE mutation-quota-strict errors={errors} throttle-ms={_throttle_ms(answer):.0f}")
        expect_code(errors[first], "NONE", rule=MUTATION_RULE, where=f"{BIG} partitions, bucket full")
        expect_code(errors[second], THROTTLED, rule=MUTATION_RULE, where="bucket below zero")
        expect(_throttle_ms(answer) > 0, MUTATION_RULE, "a refused topic's answer has throttle_time_ms 0")


def test_permissive_create_topics_before_v6_creates_and_throttles(
    router: Router,
    caps: Capabilities,
    admin: WireClient,
    versions: tuple[int, int],
    open_as: OpenAs,
    names: list[str],
) -> None:
    permissive = caps.versions("create_topics", lo=2, hi=5)
    if not permissive:
        pytest.skip("the target does not advertise CreateTopics v2-v5 (the permissive mutation quota)")
    first, second = names
    at = router.to_controller()
    with quota_limited(admin, at, open_as, {"controller_mutation_rate": 1}, versions=versions) as client:
        body = _create_body({first: BIG, second: SMALL})
        answer = client.send(build_request("create_topics", permissive[-1], body))
        errors = {t.name: code_name(t.error_code) for t in answer.topics}
        print(f"FIGURE mutation-quota-permissive errors={errors} throttle-ms={_throttle_ms(answer):.0f}")
        expect(errors == {first: "NONE", second: "NONE"}, MUTATION_RULE, f"not both created: {errors}")
        expect(_throttle_ms(answer) > 0, MUTATION_RULE, "the bucket is below zero: throttle_time_ms is 0")


def test_strict_delete_topics_is_charged_the_partitions_deleted(
    router: Router,
    caps: Capabilities,
    admin: WireClient,
    versions: tuple[int, int],
    open_as: OpenAs,
    names: list[str],
) -> None:
    if not caps.supports("delete_topics", 5):
        pytest.skip("the target does not advertise DeleteTopics v5+ (the strict mutation quota)")
    first, second = names
    for name, partitions in ((first, BIG), (second, SMALL)):
        ops.ensure_topic(router, caps, name, partitions)
    at = router.to_controller()
    version = caps.best("delete_topics", lo=5, hi=5)  # names, not ids (v6 takes either)
    with quota_limited(admin, at, open_as, {"controller_mutation_rate": 1}, versions=versions) as client:
        big = client.send(build_request("delete_topics", version, _delete_body(first)))
        expect_code(big.responses[0].error_code, "NONE", rule=MUTATION_RULE, where=f"{BIG} partitions")
        small = client.send(build_request("delete_topics", version, _delete_body(second)))
        print(f"FIGURE mutation-quota-delete throttle-ms={_throttle_ms(small):.0f}")
        expect_code(small.responses[0].error_code, THROTTLED, rule=MUTATION_RULE)
        expect(_throttle_ms(small) > 0, MUTATION_RULE, "a refused deletion's answer has throttle_time_ms 0")
