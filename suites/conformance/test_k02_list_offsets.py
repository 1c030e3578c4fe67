"""ListOffsets (key 2): earliest, latest, by timestamp, max timestamp, errors.

Rules from the protocol guide (ListOffsets API), KIP-79 (lookup by timestamp returns the
earliest offset whose timestamp is >= the target, -1 when none), KIP-734 (-3 = the
offset of the record with the largest timestamp, v7+) and KIP-107 (earliest follows the
log start offset after DeleteRecords).
"""

from __future__ import annotations

import time

import pytest

from fixtures.wire import Capabilities, Router, ops
from reference_impl.protocol.record_set import build_batch

from .expect import expect_code, expect_equal

FEATURE = "ListOffsets"


def produce_stamped(router: Router, caps: Capabilities, topic: str, stamps: list[int]) -> None:
    for ts in stamps:
        answer = ops.produce_batch(
            router, caps, topic, build_batch([(None, b"at-%d" % ts)], base_timestamp=ts)
        )
        expect_code(answer.error_code, "NONE", rule="setup: Produce")


@pytest.mark.versions("list_offsets")
def test_earliest_and_latest(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """Protocol guide, ListOffsets: -2 gives the log start offset (0), -1 the log end offset."""
    ops.produce_values(router, caps, topic, [b"a", b"b", b"c"])
    earliest = ops.list_offset(router, caps, topic, ops.EARLIEST_TIMESTAMP, version=version)
    latest = ops.list_offset(router, caps, topic, ops.LATEST_TIMESTAMP, version=version)
    expect_code(earliest.error_code, "NONE", rule="Protocol guide, ListOffsets")
    expect_equal(
        (int(earliest.offset), int(latest.offset)),
        (0, 3),
        "Protocol guide, ListOffsets",
        "(earliest, latest)",
    )


def _recent_base() -> int:
    """A minute ago, in ms: record timestamps near now, so time-based retention (7 days by
    default) cannot delete the records while the test reads them."""
    return int(time.time() * 1000) - 60_000


@pytest.mark.versions("list_offsets")
def test_lookup_by_timestamp(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-79: a timestamp lookup returns the first offset whose timestamp is >= the target, with that
    record's timestamp; past the largest timestamp it returns offset -1."""
    base = _recent_base()
    produce_stamped(router, caps, topic, [base + 1000, base + 2000, base + 3000])
    cases = {base + 2000: (1, base + 2000), base + 2500: (2, base + 3000), base: (0, base + 1000)}
    for wanted, (offset, stamp) in cases.items():
        got = ops.list_offset(router, caps, topic, wanted, version=version)
        expect_code(got.error_code, "NONE", rule="KIP-79")
        expect_equal((int(got.offset), int(got.timestamp)), (offset, stamp), "KIP-79", f"lookup of {wanted}")
    beyond = ops.list_offset(router, caps, topic, base + 9000, version=version)
    expect_equal(int(beyond.offset), -1, "KIP-79", "offset for a timestamp past every record")


@pytest.mark.versions("list_offsets", lo=7)
def test_max_timestamp_lookup(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-734: timestamp -3 returns the offset and timestamp of the record with the largest timestamp."""
    base = _recent_base()
    produce_stamped(router, caps, topic, [base + 1000, base + 5000, base + 3000])
    got = ops.list_offset(router, caps, topic, ops.MAX_TIMESTAMP, version=version)
    expect_code(got.error_code, "NONE", rule="KIP-734")
    expect_equal((int(got.offset), int(got.timestamp)), (1, base + 5000), "KIP-734", "(offset, timestamp)")


def test_unknown_partition(router: Router, caps: Capabilities, topic: str) -> None:
    """Protocol guide, ListOffsets: a partition the topic does not have is UNKNOWN_TOPIC_OR_PARTITION."""
    got = ops.list_offset(router, caps, topic, ops.LATEST_TIMESTAMP, partition=9)
    expect_code(got.error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule="Protocol guide, ListOffsets")


def test_unknown_topic(router: Router, caps: Capabilities, unique: object) -> None:
    """Protocol guide, ListOffsets: a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION."""
    got = ops.list_offset(router, caps, unique("absent"), ops.LATEST_TIMESTAMP)  # type: ignore[operator]
    expect_code(got.error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule="Protocol guide, ListOffsets")


def test_empty_partition(router: Router, caps: Capabilities, topic: str) -> None:
    """Protocol guide, ListOffsets: on an empty partition earliest and latest are both 0, and a timestamp
    lookup
    finds nothing (-1)."""
    got = [
        int(ops.list_offset(router, caps, topic, t).offset)
        for t in (ops.EARLIEST_TIMESTAMP, ops.LATEST_TIMESTAMP)
    ]
    expect_equal(got, [0, 0], "Protocol guide, ListOffsets", "(earliest, latest) of an empty partition")
    expect_equal(
        int(ops.list_offset(router, caps, topic, 1_000).offset), -1, "KIP-79", "lookup on an empty partition"
    )
