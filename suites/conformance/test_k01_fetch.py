"""Fetch (key 1): read-back, high watermark, long-poll bounds, sizes, fetch sessions, errors.

Rules from the protocol guide (Fetch API), KIP-74 (the first batch is returned whole even
past partition_max_bytes, v3+), KIP-227 (incremental fetch sessions, v7+), KIP-516
(topic ids, v13+) and Kafka's FetchRequest.json field comments (max_wait_ms, min_bytes).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, ops
from reference_impl.protocol.record_set import build_batch

from .expect import expect, expect_code, expect_equal

FEATURE = "Fetch"


def produce(router: Router, caps: Capabilities, topic: str, values: list[bytes]) -> None:
    answer = ops.produce_values(router, caps, topic, values)
    expect_code(answer.error_code, "NONE", rule="setup: Produce")


@pytest.mark.versions("fetch")
def test_records_read_back_with_high_watermark(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """Protocol guide, Fetch: records come back in offset order; high_watermark is the next offset to be
    committed
    (the log end on a single replica), log_start_offset (v5+) is 0 on a fresh topic."""
    for i in range(3):
        produce(router, caps, topic, [b"a%d" % i, b"b%d" % i])
    _r, part = ops.fetch(router, caps, topic, 0, version=version)
    expect(part is not None, "Protocol guide, Fetch", "the partition is missing from the answer")
    expect_code(part.error_code, "NONE", rule="Protocol guide, Fetch")
    got = ops.data_records(part)
    expect_equal([r.offset for r in got], list(range(6)), "Protocol guide, Fetch", "offsets")
    expect_equal(int(part.high_watermark), 6, "Protocol guide, Fetch", "high watermark")
    if version >= 5:
        expect_equal(int(part.log_start_offset), 0, "KIP-107", "log_start_offset")


def test_zero_max_wait_returns_available_data_at_once(
    router: Router, caps: Capabilities, topic: str
) -> None:
    """FetchRequest.json max_wait_ms / min_bytes: data at least min_bytes long is returned without waiting;
    with
    max_wait_ms=0 the answer must still carry the records that are there."""
    produce(router, caps, topic, [b"ready"])
    _r, part = ops.fetch(router, caps, topic, 0, max_wait_ms=0)
    expect(
        part is not None and [r.value for r in ops.data_records(part)] == [b"ready"],
        "FetchRequest.json max_wait_ms",
        "a max_wait_ms=0 fetch did not return the record already in the log",
    )


def test_fetch_past_log_end_is_out_of_range(router: Router, caps: Capabilities, topic: str) -> None:
    """Protocol guide, Fetch: a fetch offset beyond the log end offset is answered OFFSET_OUT_OF_RANGE."""
    produce(router, caps, topic, [b"x"])
    _r, part = ops.fetch(router, caps, topic, 100, max_wait_ms=100)  # the error does not depend on waiting
    expect(part is not None, "Protocol guide, Fetch", "the partition is missing from the answer")
    expect_code(part.error_code, "OFFSET_OUT_OF_RANGE", rule="Protocol guide, Fetch")


def test_fetch_at_log_end_waits_and_returns_empty(router: Router, caps: Capabilities, topic: str) -> None:
    """FetchRequest.json max_wait_ms: a fetch at the log end with nothing new is answered (empty, no error)
    once max_wait_ms passes, neither an error nor left unanswered (10 s socket timeout, 300 ms wait)."""
    produce(router, caps, topic, [b"x"])
    _r, part = ops.fetch(router, caps, topic, 1, max_wait_ms=300, timeout_s=10)
    expect(part is not None, "FetchRequest.json max_wait_ms", "the partition is missing from the answer")
    expect_code(part.error_code, "NONE", rule="FetchRequest.json max_wait_ms")
    expect_equal(ops.data_records(part), [], "FetchRequest.json max_wait_ms", "records at the log end")


def test_long_poll_wakes_up_when_data_arrives(
    wire_factory: Any, router: Router, caps: Capabilities, topic: str
) -> None:
    """FetchRequest.json min_bytes: a waiting fetch is answered as soon as min_bytes are available, before
    max_wait_ms (20 s here; the answer must come within the 10 s socket timeout)."""
    leader = router.to_leader(topic).address
    reader, writer = wire_factory(leader), wire_factory(leader)
    result: dict[str, Any] = {}

    def poll() -> None:
        try:
            result["part"] = ops.fetch(reader, caps, topic, 0, max_wait_ms=20_000, timeout_s=10)[1]
        except Exception as exc:
            result["error"] = exc

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    time.sleep(0.5)  # let the fetch park before the data arrives
    produce(writer, caps, topic, [b"wake-up"])
    thread.join(15)
    expect(
        "error" not in result,
        "FetchRequest.json min_bytes",
        f"the parked fetch was not answered when data arrived: {result.get('error')}",
    )
    expect(
        [r.value for r in ops.data_records(result["part"])] == [b"wake-up"],
        "FetchRequest.json min_bytes",
        "the answer does not carry the record that woke it",
    )


def test_min_bytes_not_reached_returns_what_exists_after_max_wait(
    router: Router, caps: Capabilities, topic: str
) -> None:
    """FetchRequest.json min_bytes: when min_bytes cannot be met, the broker answers after max_wait_ms with
    the data
    it has (not an empty answer)."""
    produce(router, caps, topic, [b"small"])
    _r, part = ops.fetch(router, caps, topic, 0, max_wait_ms=300, min_bytes=1 << 20, timeout_s=10)
    expect(
        [r.value for r in ops.data_records(part)] == [b"small"],
        "FetchRequest.json min_bytes",
        "the records present were not returned after max_wait_ms",
    )


@pytest.mark.versions("fetch", lo=4)
def test_first_batch_is_returned_whole_past_partition_max_bytes(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """KIP-74: if the first batch at the fetch offset is larger than partition_max_bytes it is still
    returned whole,
    so the consumer can make progress."""
    produce(router, caps, topic, [b"y" * 2000])
    _r, part = ops.fetch(router, caps, topic, 0, version=version, partition_max_bytes=100, max_bytes=100)
    expect(
        [len(r.value or b"") for r in ops.data_records(part)] == [2000],
        "KIP-74",
        "the oversized first batch was not returned whole",
    )


def test_fetch_from_inside_a_batch_returns_the_requested_offsets(
    router: Router, caps: Capabilities, topic: str
) -> None:
    """Protocol guide, Fetch: fetching at an offset inside a batch returns that batch (clients skip earlier
    records);
    every offset from the fetch offset on is present."""
    produce(router, caps, topic, [b"%d" % i for i in range(10)])
    _r, part = ops.fetch(router, caps, topic, 5)
    offsets = [r.offset for r in ops.data_records(part)]
    expect(set(range(5, 10)) <= set(offsets), "Protocol guide, Fetch", f"offsets {offsets} miss some of 5..9")


@pytest.mark.versions("fetch", hi=12)
def test_unknown_topic_name(version: int, router: Router, caps: Capabilities, unique: Any) -> None:
    """Protocol guide, Fetch: a topic that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION (versions
    < 13)."""
    response, part = ops.fetch(router, caps, unique("absent"), 0, version=version, max_wait_ms=100)
    expect(part is not None, "Protocol guide, Fetch", f"no partition entry for the unknown topic: {response}")
    expect_code(part.error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule="Protocol guide, Fetch")


@pytest.mark.versions("fetch", lo=13)
def test_unknown_topic_id(version: int, wire: WireClient, caps: Capabilities) -> None:
    """KIP-516: a Fetch v13+ for a topic id the broker does not know is answered UNKNOWN_TOPIC_ID."""
    entity = ops.wire_build(
        "fetch",
        version,
        {
            "replica_id": -1,
            "max_wait": 100,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": uuid.uuid4(),
                    "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
                }
            ],
        },
    )
    response = wire.send(entity)
    codes = [p.error_code for t in response.responses for p in t.partitions] or [response.error_code]
    expect_code(codes[0], "UNKNOWN_TOPIC_ID", rule="KIP-516")


def _session_fetch(
    wire: WireClient,
    version: int,
    session_id: int,
    epoch: int,
    partitions: list[dict[str, Any]],
    topic_ref: dict[str, Any],
) -> Any:
    topics = [{**topic_ref, "partitions": partitions}] if partitions else []
    return wire.send(
        ops.wire_build(
            "fetch",
            version,
            {
                "replica_id": -1,
                "max_wait": 100,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "session_id": session_id,
                "session_epoch": epoch,
                "topics": topics,
            },
        ),
        timeout_s=10,
    )


def _ref(router: Router, caps: Capabilities, version: int, topic: str) -> dict[str, Any]:
    return {"topic_id": ops.topic_id(router, caps, topic)} if version >= 13 else {"topic": topic}


@pytest.mark.versions("fetch", lo=7)
def test_unknown_fetch_session_is_rejected(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """KIP-227: an incremental fetch (epoch > 0) naming a session the broker does not hold is answered
    FETCH_SESSION_ID_NOT_FOUND at the top level."""
    part = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    ref = _ref(router, caps, version, topic)
    answer = _session_fetch(router.to_leader(topic), version, 987_654_321, 1, [part], ref)
    expect_code(answer.error_code, "FETCH_SESSION_ID_NOT_FOUND", rule="KIP-227")


def test_fetch_session_is_incremental(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-227: a full fetch with epoch 0 opens a session (id != 0, or 0 if the broker declines); incremental
    fetches then return only partitions that changed, and a wrong epoch is INVALID_FETCH_SESSION_EPOCH."""
    version = caps.best("fetch", lo=7)
    ref = _ref(router, caps, version, topic)
    wire = router.to_leader(topic)  # a fetch session lives on the partition's leader
    part = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    opened = _session_fetch(wire, version, 0, 0, [part], ref)
    expect_code(opened.error_code, "NONE", rule="KIP-227")
    session_id = int(opened.session_id)
    if session_id == 0:
        pytest.skip("the broker declined to open a fetch session (allowed by KIP-227)")
    quiet = _session_fetch(wire, version, session_id, 1, [], ref)
    expect_code(quiet.error_code, "NONE", rule="KIP-227")
    expect_equal(
        [t for t in quiet.responses if t.partitions],
        [],
        "KIP-227",
        "partitions in an incremental answer with nothing new",
    )
    produce(router, caps, topic, [b"news"])
    news = _session_fetch(wire, version, session_id, 2, [], ref)
    changed = [p for t in news.responses for p in t.partitions]
    expect(
        len(changed) == 1 and [r.value for r in ops.data_records(changed[0])] == [b"news"],
        "KIP-227",
        "the incremental fetch did not return the partition that changed",
    )
    stale = _session_fetch(wire, version, session_id, 2, [], ref)
    expect_code(stale.error_code, "INVALID_FETCH_SESSION_EPOCH", rule="KIP-227")


def test_high_watermark_counts_every_acknowledged_record(
    router: Router, caps: Capabilities, topic: str
) -> None:
    """Protocol guide, Fetch (HW): after acks=all produces are answered, the high watermark covers all of
    them and
    a read_uncommitted fetch sees every record below it."""
    for i in range(5):
        ops.produce_batch(
            router,
            caps,
            topic,
            build_batch([(None, b"%d" % i)], base_timestamp=int(time.time() * 1000)),
            acks=-1,
        )
    _r, part = ops.fetch(router, caps, topic, 0)
    expect_equal(
        int(part.high_watermark), 5, "Protocol guide, Fetch", "high watermark after 5 acks=all batches"
    )
    expect_equal(len(ops.data_records(part)), 5, "Protocol guide, Fetch", "records visible below the HW")


INTERLEAVED_TOPICS = 3
INTERLEAVED_PARTITIONS = 6
"""Six partitions per topic: on a three-broker cluster each broker still leads two of every topic."""


def _fetch_at_zero(ref: dict[str, Any], partition: int) -> dict[str, Any]:
    """One request entry: the topic (by name, or by id from v13) and one partition read from offset 0."""
    entry = {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    return {**ref, "partitions": [entry]}


def test_partitions_interleaving_topics_all_come_back(
    router: Router, caps: Capabilities, topic_factory: Any
) -> None:
    """FetchRequest.json / FetchResponse.json: a request lists topics with their partitions and the answer
    has one entry per topic; a topic may be listed more than once, its partitions interleaved with other
    topics' (librdkafka's consumer of many topics sends (a,0) (b,0) (c,0) (a,1) ...). Every partition
    asked for comes back with its records, at the highest advertised version and at the highest one with
    legacy (non-flexible) lengths. Issue 17 item 10: the reference broker dropped the connection."""
    topics = [topic_factory(partitions=INTERLEAVED_PARTITIONS) for _ in range(INTERLEAVED_TOPICS)]
    led_by: dict[str, list[tuple[str, int]]] = {}
    for t in topics:
        for p in range(INTERLEAVED_PARTITIONS):
            ops.produce_values(router, caps, t, [f"{t}/{p}".encode()], partition=p)
            led_by.setdefault(router.to_leader(t, p).address, []).append((t, p))
    address, wanted = max(led_by.items(), key=lambda item: len(item[1]))
    rounds = [[(t, p) for t, p in wanted if t == topic] for topic in topics]
    interleaved = [e for i in range(INTERLEAVED_PARTITIONS) for entries in rounds for e in entries[i : i + 1]]
    client = router.to_leader(*wanted[0])
    for version in sorted({caps.best("fetch"), caps.best("fetch", hi=11)}):
        ids = {t: ops.topic_id(router, caps, t) for t in topics} if version >= 13 else {}
        refs = {t: {"topic_id": ids[t]} if ids else {"topic": t} for t in topics}
        entity = ops.wire_build(
            "fetch",
            version,
            {
                "replica_id": -1,
                "max_wait": 500,
                "min_bytes": 1,
                "max_bytes": 50 << 20,
                "session_epoch": -1,
                "forgotten_topics_data": [],
                "topics": [_fetch_at_zero(refs[t], p) for t, p in interleaved],
            },
        )
        answer = client.send(entity)
        names = {topic_id: t for t, topic_id in ids.items()}
        got = {
            (getattr(r, "topic", None) or names.get(r.topic_id), p.partition_index): [
                record.value for record in ops.data_records(p)
            ]
            for r in answer.responses
            for p in r.partitions
        }
        expect_equal(
            got,
            {(t, p): [f"{t}/{p}".encode()] for t, p in interleaved},
            "FetchResponse.json responses",
            f"partitions of a v{version} fetch interleaving {len(topics)} topics ({address})",
        )
