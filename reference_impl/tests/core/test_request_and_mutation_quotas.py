"""request_percentage (KIP-124) and controller_mutation_rate (KIP-599) enforced as Kafka's
ClientRequestQuotaManager and ControllerMutationQuotaManager do (core/request_quotas.py,
core/mutation_quotas.py): the handler time charged through the broker's clock port, the throttle
bounded at one window, exempt requests, an empty throttled fetch; strict and permissive mutation
quotas per API version, charged the partitions mutated."""

from __future__ import annotations

import dataclasses
import datetime
import itertools
from types import SimpleNamespace
from typing import Any, cast

from reference_impl.core import quotas as q
from reference_impl.core.handlers.registry import Respond
from reference_impl.core.metadata.records import ClientQuotaRecord
from reference_impl.core.mutation_quotas import MutationQuota, TokenBucket
from reference_impl.core.quota_managers import QuotaManagers
from reference_impl.core.request_context import RequestContext
from reference_impl.core.request_quotas import exempt
from reference_impl.protocol.build import millis
from reference_impl.protocol.codec import RequestHeader, encode_request
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request
from .test_data_path import create, fetch_request
from .test_quota_enforcement import _produce_body

C = "client-id"
AUTHORIZED_OPS = "include_topic_authorized_operations"
HANDLER_MS = 50
"""What each request's handler takes on the test's clock."""


def _quota(h: BrokerHarness, key: str, value: float) -> None:
    """A quota for the default client-id (every client), as AlterClientQuotas would write it."""
    image = h.broker.image
    image.apply(
        ClientQuotaRecord(entity_types=(C,), entity_names=(None,), key=key, value=value), image.offset + 1
    )


def _slow_handlers(h: BrokerHarness) -> None:
    """The clock port: each read is HANDLER_MS after the one before (a request's handler is read at
    its start and its end)."""
    ticks = itertools.count(0, HANDLER_MS * 1_000_000)
    h.broker.client_quotas.request.clock_ns = lambda: next(ticks)


def _metadata() -> Any:
    return request(3, 12, topics=None, allow_auto_topic_creation=False, **{AUTHORIZED_OPS: False})


# -- request_percentage ----------------------------------------------------------------------------


def test_handler_time_over_request_percentage_is_throttled_and_muted() -> None:
    """50 ms of handler time = 5 percent-seconds over the 10 s minimum window: 0.5 % against 0.1 %,
    four times over, 40 s, bounded at one window (ClientRequestQuotaManager.maxThrottleTimeMs)."""
    h = BrokerHarness()
    _slow_handlers(h)
    _quota(h, q.REQUEST_PERCENTAGE, 0.1)
    cid = h.connect()
    answer = h.call(_metadata(), cid)
    assert millis(answer.throttle_time) == q.WINDOW_MS
    h.send(cid, _metadata())
    assert not h.responses.get(cid)  # muted for the throttle time
    h.advance(q.WINDOW_MS - 1)
    assert not h.responses.get(cid)
    h.advance(1)
    assert millis(h.take(cid, _metadata()).throttle_time) == q.WINDOW_MS  # still over


def test_within_the_quota_or_without_one_nothing_is_throttled() -> None:
    h = BrokerHarness()
    _slow_handlers(h)
    assert millis(h.call(_metadata()).throttle_time) == 0  # no request_percentage anywhere
    assert not h.broker.client_quotas._meters  # nothing recorded (quotasEnabled)
    _quota(h, q.REQUEST_PERCENTAGE, 100.0)  # one whole thread: 0.5 % is within
    assert millis(h.call(_metadata()).throttle_time) == 0
    meter = next(iter(h.broker.client_quotas._meters.values()))
    assert sum(s.value for s in meter.rate._samples) == HANDLER_MS * 1e6 * 100 / 1e9  # 5 percent-seconds


def test_a_forwarded_request_is_charged_but_not_muted() -> None:
    """RequestHandlerHelper: only non-forwarded requests are throttled; the forwarding broker (the
    reference marks it by its client id, ``broker-N``) relays the throttle time and mutes its client."""
    h = BrokerHarness()
    _slow_handlers(h)
    _quota(h, q.REQUEST_PERCENTAGE, 0.1)
    cid = h.connect()
    first, second = _metadata(), _metadata()
    for body in (first, second):
        h.send_frame(cid, encode_request(body, 7, "broker-2"))
    answers = [h.take(cid, first), h.take(cid, second)]  # both at once: nothing muted
    assert [millis(a.throttle_time) for a in answers] == [q.WINDOW_MS, q.WINDOW_MS]


def test_a_relayed_controller_answer_mutes_the_client_for_its_throttle() -> None:
    """sendForwardedResponse: the forwarding broker mutes its client for the larger of the controller's
    throttle time (here a mutation quota's 3 s) and its own, and the answer carries it."""
    image = SimpleNamespace(offset=1, client_quotas={})
    managers = QuotaManagers(lambda: image)
    muted: list[tuple[int, int]] = []
    host: Any = SimpleNamespace(now_ms=0, is_controller_listener=lambda name: False)
    host.throttle = lambda cid, ms: muted.append((cid, ms))
    ctx = RequestContext(cast(Any, None), 5, RequestHeader(19, 7, 1, "app"), "127.0.0.1", 0)
    relayed: Any = SimpleNamespace(throttle_time=datetime.timedelta(milliseconds=3000))
    relay = Respond(relayed)
    never: Any = None  # the handler is not called for a forwarded request
    assert managers.request.run(never, host, ctx, None, forwarded=relay) is relay
    assert ctx.on_answer is not None and ctx.on_answer(ctx, relayed) is relayed
    assert muted == [(5, 3000)]


def test_without_a_clock_no_handler_time_is_charged() -> None:
    """The core reads no clock: until the shell gives one, handlers take no time (the simulator)."""
    h = BrokerHarness()
    _quota(h, q.REQUEST_PERCENTAGE, 0.001)
    assert millis(h.call(_metadata()).throttle_time) == 0


def test_cluster_actions_and_raft_requests_are_exempt() -> None:
    host: Any = SimpleNamespace(is_controller_listener=lambda name: name == "CONTROLLER")

    def ctx(api_key: int, listener: str = "PLAINTEXT") -> Any:
        return SimpleNamespace(header=SimpleNamespace(api_key=api_key), listener=listener)

    for api_key in (4, 5, 6, 7, 27, 52, 53, 54, 55, 56, 59):  # sendResponseExemptThrottle in Kafka
        assert exempt(host, ctx(api_key)), api_key
    assert exempt(host, ctx(1, "CONTROLLER"))  # the Raft fetch
    for api_key in (0, 1, 3, 18, 19, 62, 63):  # ApiVersions, Metadata, BrokerHeartbeat ... are charged
        assert not exempt(host, ctx(api_key)), api_key


def test_a_fetch_over_request_percentage_is_answered_empty() -> None:
    """handleFetchRequest: a fetch throttled by the request quota (no byte-rate quota) answers no
    partitions, carrying the throttle time."""
    h = BrokerHarness()
    create(h, "t")
    h.call(_produce_body("t", 100))
    _slow_handlers(h)
    _quota(h, q.REQUEST_PERCENTAGE, 0.1)
    answer = h.call(fetch_request("t", 0, 0))
    assert millis(answer.throttle_time) == q.WINDOW_MS
    assert list(answer.responses) == []


def test_a_followers_fetch_is_exempt() -> None:
    """handleFetchRequest answers a follower's fetch with sendResponseExemptThrottle."""
    h = BrokerHarness()
    create(h, "t")
    _slow_handlers(h)
    _quota(h, q.REQUEST_PERCENTAGE, 0.1)
    follower = dataclasses.replace(fetch_request("t", 0, 0), replica_id=2)
    assert millis(h.call(follower).throttle_time) == 0
    assert millis(h.call(fetch_request("t", 0, 0)).throttle_time) == q.WINDOW_MS  # a consumer's is not


def test_a_produce_carries_the_larger_of_its_throttles() -> None:
    h = BrokerHarness()
    create(h, "t")
    _slow_handlers(h)
    _quota(h, q.REQUEST_PERCENTAGE, 0.1)
    answer = h.call(_produce_body("t", 10))
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none
    assert millis(answer.throttle_time) == q.WINDOW_MS


# -- controller_mutation_rate ----------------------------------------------------------------------


def _create(version: int, *topics: tuple[str, int]) -> Any:
    entries = [
        {"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [], "configs": []}
        for n, p in topics
    ]
    return request(19, version, topics=entries, timeout=1000, validate_only=False)


def _errors(answer: Any) -> dict[str, ErrorCode]:
    return {t.name: t.error_code for t in answer.topics}


def test_strict_create_topics_refuses_once_the_bucket_is_empty() -> None:
    """1 partition/s: a burst of 11 (11 windows of 1 s); a topic passes while the bucket is not below
    zero, whatever its size; then THROTTLING_QUOTA_EXCEEDED with the time to refill to zero."""
    h = BrokerHarness()
    _quota(h, q.CONTROLLER_MUTATION_RATE, 1.0)
    cid = h.connect()
    first = h.call(_create(7, ("a", 20), ("b", 1)), cid)  # a: 11 - 20 = -9 tokens; b refused
    assert _errors(first) == {"a": ErrorCode.none, "b": ErrorCode.throttling_quota_exceeded}
    assert [t.error_message for t in first.topics][1] == "The throttling quota has been exceeded."
    assert millis(first.throttle_time) == 9000
    assert "a" in h.broker.image.topics and "b" not in h.broker.image.topics
    again = _create(6, ("b", 1))
    h.send(cid, again)
    h.advance(8999)
    assert not h.responses.get(cid)  # muted for the throttle time
    h.advance(1)  # then refilled to zero: accepted again
    assert _errors(h.take(cid, again)) == {"b": ErrorCode.none}


def test_permissive_create_topics_before_v6_creates_and_throttles() -> None:
    h = BrokerHarness()
    _quota(h, q.CONTROLLER_MUTATION_RATE, 1.0)
    answer = h.call(_create(5, ("a", 20), ("b", 1)))
    assert _errors(answer) == {"a": ErrorCode.none, "b": ErrorCode.none}
    assert millis(answer.throttle_time) == 10_000  # 11 - 21 = -10 tokens at 1/s
    assert {"a", "b"} <= set(h.broker.image.topics)


def _grow(version: int, name: str, count: int) -> Any:
    topics = [{"name": name, "count": count, "assignments": None}]
    return request(37, version, topics=topics, timeout=1000, validate_only=False)


def test_delete_topics_and_create_partitions_are_charged_their_partitions() -> None:
    h = BrokerHarness()
    create(h, "big", partitions=12)
    create(h, "small")
    _quota(h, q.CONTROLLER_MUTATION_RATE, 1.0)
    cid = h.connect()
    deleted = h.call(request(20, 5, topic_names=["big"], timeout=1000), cid)  # 11 - 12 = -1
    assert [r.error_code for r in deleted.responses] == [ErrorCode.none]
    refused = h.call(request(20, 5, topic_names=["small"], timeout=1000))  # strict from v5
    assert [r.error_code for r in refused.responses] == [ErrorCode.throttling_quota_exceeded]
    assert millis(refused.throttle_time) == 1000
    assert "small" in h.broker.image.topics
    strict = h.call(_grow(3, "small", 3))  # strict from v3
    assert [r.error_code for r in strict.results] == [ErrorCode.throttling_quota_exceeded]
    permissive = h.call(_grow(2, "small", 3))  # v2: added, and throttled for the 3 tokens now missing
    assert [r.error_code for r in permissive.results] == [ErrorCode.none]
    assert millis(permissive.throttle_time) == 3000
    assert len(h.broker.image.topics["small"].partitions) == 3


def test_token_bucket_refills_to_its_burst() -> None:
    bucket = TokenBucket()
    assert bucket.measure(2.0, 5_000) == 22.0  # a new bucket starts full: 11 windows x 2/s
    bucket.record(2.0, 30, 5_000)
    assert bucket.measure(2.0, 5_000) == -8.0
    assert bucket.measure(2.0, 9_000) == 0.0
    assert bucket.measure(2.0, 100_000) == 22.0
    quota = MutationQuota(None, 1.0, strict=True)
    quota.record(10**6, 0)  # no quota applies: unbounded
    assert quota.throttle_ms == 0 and not quota.enabled
