"""Byte-rate quotas enforced as Kafka's ClientQuotaManager and KafkaApis do: which level of the
user / client-id precedence holds a client's quota (DefaultQuotaCallback), and through the broker:
a producer or consumer over its quota is answered at once with throttle_time_ms and its connection
is then muted (KIP-219), a throttled fetch answers nothing and is taken back from the rate."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from reference_impl.core import quotas as q
from reference_impl.core.handlers.k01_fetch import SPLICE_MARK, _response_size
from reference_impl.core.metadata.records import ClientQuotaRecord
from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, millis
from reference_impl.protocol.codec import encode_response_spliced
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch

from .harness import BrokerHarness, request
from .test_data_path import create, fetch_request

P = q.PRODUCER_BYTE_RATE


def _table(*entries: tuple[tuple[tuple[str, str | None], ...], float]) -> dict[Any, dict[str, float]]:
    return {frozenset(pairs): {P: value} for pairs, value in entries}


U, C = "user", "client-id"


def test_precedence_of_the_eight_levels() -> None:
    """ClientQuotaManager's order: <user, client>, <user, default client>, <user>, <default user,
    client>, <default user, default client>, <default user>, <client>, <default client>."""
    levels = [
        (((U, "alice"), (C, "app")), 1.0),
        (((U, "alice"), (C, None)), 2.0),
        (((U, "alice"),), 3.0),
        (((U, None), (C, "app")), 4.0),
        (((U, None), (C, None)), 5.0),
        (((U, None),), 6.0),
        (((C, "app"),), 7.0),
        (((C, None),), 8.0),
    ]
    for first in range(len(levels)):
        table = _table(*levels[first:])
        tags = q.quota_tags(table, P, "alice", "app")
        assert q.quota_limit(table, P, tags) == levels[first][1], first
    shared = q.quota_tags(_table((((U, "alice"),), 3.0)), P, "alice", "app")
    assert shared == ("alice", "")  # every client of alice counts towards one rate
    assert (
        q.quota_limit(
            _table((((U, "bob"),), 3.0)), P, q.quota_tags(_table((((U, "bob"),), 3.0)), P, "alice", "x")
        )
        is None
    )


@dataclass
class _Image:
    offset: int = 0
    client_quotas: dict[frozenset[tuple[str, str | None]], dict[str, float]] = field(default_factory=dict)


def test_tracker_counts_only_when_a_quota_exists_and_follows_changes() -> None:
    image = _Image()
    tracker = q.ClientQuotas(lambda: image)
    assert tracker.record(P, "alice", "app", 1e9, now_ms=0) == 0
    assert tracker.max_in_window(P, "alice", "app") == math.inf
    image.client_quotas = {frozenset({(U, "alice")}): {P: 100.0}}
    image.offset = 1
    assert tracker.max_in_window(P, "alice", "app") == 1000.0  # 10 windows of 1 s
    # 1500 bytes over the minimum 10 s window: 150 B/s against 100, half over: 5 s
    assert tracker.record(P, "alice", "app", 1500, now_ms=0) == 5000
    tracker.unrecord(P, "alice", "app", 1500, now_ms=0)
    assert tracker.record(P, "alice", "other", 500, now_ms=0) == 0  # the same (user) rate, back within
    assert tracker.record(P, "bob", "app", 1e9, now_ms=0) == 0  # bob has no quota
    image.client_quotas = {frozenset({(U, "alice")}): {P: 1e9}}
    image.offset = 2
    assert tracker.record(P, "alice", "app", 1500, now_ms=0) == 0  # the new bound applies at once


def test_meters_are_bounded() -> None:
    image = _Image(client_quotas={frozenset({(C, None)}): {P: 100.0}})
    tracker = q.ClientQuotas(lambda: image)
    for i in range(q.MAX_METERS + 50):
        tracker.record(P, "", f"c{i}", 1, now_ms=0)
    assert len(tracker._meters) == q.MAX_METERS


def test_java_round_is_half_up() -> None:
    assert [q.java_round(x) for x in (0.5, 1.5, 2.5, -0.5)] == [1, 2, 3, 0]


# -- through the broker --------------------------------------------------------------------------


def _quota(h: BrokerHarness, key: str, value: float) -> None:
    """A quota for the default client-id (every client), as AlterClientQuotas would write it."""
    image = h.broker.image
    image.apply(
        ClientQuotaRecord(entity_types=(C,), entity_names=(None,), key=key, value=value), image.offset + 1
    )


def _produce_body(topic: str, size: int) -> Any:
    batch = build_batch([(None, b"x" * size)], base_timestamp=0)
    return request(
        0,
        9,
        acks=1,
        timeout=1000,
        transactional_id=None,
        topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
    )


def test_a_producer_over_its_quota_is_answered_then_muted() -> None:
    h = BrokerHarness()
    create(h, "t")
    _quota(h, P, 1000.0)
    cid = h.connect()
    first = _produce_body("t", 20_000)
    h.send(cid, first)
    answer = h.take(cid, first)
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none  # appended anyway
    throttle = millis(answer.throttle_time)
    assert throttle > 0
    second = _produce_body("t", 10)
    h.send(cid, second)
    assert not h.responses.get(cid)  # muted: not handled before the throttle time is over
    h.advance(throttle - 1)
    assert not h.responses.get(cid)
    h.advance(1)
    assert h.take(cid, second).responses[0].partition_responses[0].error_code == ErrorCode.none
    other = h.connect()  # another connection of the same client is not muted (its rate is shared)
    assert millis(h.call(_produce_body("t", 10), other).throttle_time) > 0


def test_a_consumer_over_its_quota_gets_an_empty_throttled_answer() -> None:
    h = BrokerHarness()
    create(h, "t")
    h.call(_produce_body("t", 30_000))
    _quota(h, q.CONSUMER_BYTE_RATE, 1000.0)
    cid = h.connect()
    body = fetch_request("t", 0, 0, max_bytes=1 << 20)
    answer = h.call(body, cid)
    assert millis(answer.throttle_time) > 0
    assert answer.error_code == ErrorCode.none and list(answer.responses) == []
    h.advance(millis(answer.throttle_time))
    # taken back: the rate is as before, and max_bytes is bounded by the quota's window (10 s of 1000
    # B/s), which the 30 kB batch passes (the first batch is always sent whole, KIP-74): throttled again
    again = h.call(body, cid)
    assert millis(again.throttle_time) > 0


def test_a_consumer_fetch_counts_its_whole_response() -> None:
    """FetchResponse.sizeOf: 4 + the body's size, i.e. the response after its size prefix (the 4 is
    the correlation id; a flexible version's header also has a tagged-field byte, not counted)."""
    h = BrokerHarness()
    create(h, "t")
    h.call(_produce_body("t", 3_000))
    _quota(h, q.CONSUMER_BYTE_RATE, 1e12)  # enabled, never reached
    for version, header_extra in ((11, 0), (12, 1)):
        cid = h.connect()
        h.send(cid, fetch_request("t", 0, 0, version=version))
        frame = h.responses[cid][0]
        meters = list(h.broker.client_quotas._meters.values())
        assert len(meters) == 1
        counted = sum(s.value for s in meters[0].rate._samples)
        assert counted == len(frame) - header_extra, version
        meters[0].rate._samples.clear()


def test_spliced_records_are_counted_at_their_real_size() -> None:
    """Records sent from the log files stand in the body as a short placeholder: the size counts
    them as the frame carries them (a 200-byte region needs a 2-byte varint prefix in v12)."""
    for version, header_extra in ((11, 0), (12, 1)):
        token = SPLICE_MARK + bytes(12)
        region = b"r" * 200
        entry = {
            "partition_index": 0,
            "error_code": 0,
            "high_watermark": 1,
            "last_stable_offset": 1,
            "log_start_offset": 0,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": token,
        }
        plain = {"throttle_time": 0, "error_code": 0, "responses": [{"topic": "t", "partitions": [entry]}]}
        body = build(response_class(1, version), plain)
        splices: Any = {token: ((region,), len(region))}  # bytes stand in for the file regions
        frame = encode_response_spliced(1, version, 7, body, splices)
        on_wire = sum(len(p) for p in frame) - 4  # after the size prefix
        state: Any = SimpleNamespace(ctx=SimpleNamespace(api_version=version))
        assert _response_size(state, body, splices, [(("t", 0), entry)]) == on_wire - header_extra
