"""Abuse: segment files a broker deletes must not stay open (issue 17, item 5: bounded descriptors).

``kafka-harness fuzz --target reference --seed 1`` found the reference's descriptors growing by about
0.5 per 1,000 requests, some of them segment files already removed: ``/proc/PID/fd`` names them
"(deleted)", and neither the descriptor nor the disk space comes back until the process closes it.
Kafka closes a segment's files as it deletes them
(storage/src/main/java/org/apache/kafka/storage/internals/log/LocalLog.java, ``deleteSegmentFiles``:
renamed ``.deleted``, then, ``file.delete.delay.ms`` later, ``LogSegment.deleteIfExists``, whose
``FileRecords.deleteIfExists`` closes the channel before deleting the file), so it never holds a
removed file either.

One test, every way a broker removes segment files while a consumer has read them (so that a broker
serving fetches from its own descriptors holds them):

* DeleteRecords to the high watermark, then the retention check removes the segments below it;
* a topic whose ``retention.bytes`` is lowered (AlterConfigs) below its size;
* a compacted topic whose ``min.compaction.lag.ms`` (an hour at first) is lowered to 0, so the
  cleaner replaces its segments;
* DeleteTopics of a topic.

Each topic has 1 MiB segments (``segment.bytes``' floor since KIP-1030) and about 3.5 MiB of records,
read to the end by Fetch before the deletion. The target's descriptors are then watched for
``DELETE_BOUND_S``: the bound is that none names a removed file at the end. On a local target whose
periodic work the harness configured (the reference: ``log.retention.check.interval.ms`` and
``log.cleaner.backoff.ms`` at 200 ms) the test also asserts the deletions happened, so it can fail;
elsewhere what was removed is printed (a target whose own retention period is longer removes nothing
within the bound, which proves nothing either way). A remote target cannot be measured.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.targets import TargetSession, deleted_files, held_files, replaced_or_removed
from fixtures.wire import NotAdvertisedError, WireError, ops
from reference_impl.protocol.record_set import build_batch

from .conftest import AbusedTarget, abused_target, report

SEGMENT_BYTES = 1 << 20
BATCH_VALUES = 16
VALUE_BYTES = 16 << 10
BATCHES = 14
"""14 batches of 16 × 16 KiB: about 3.5 MiB, three rolled segments and an active one."""
PERIOD_MS = 200
DELETE_BOUND_S = 20.0
"""How long the test waits for the deletions and for the descriptors of removed files to close."""
PERIODIC = {"log.retention.check.interval.ms": str(PERIOD_MS), "log.cleaner.backoff.ms": str(PERIOD_MS)}
TOPIC = 2
"""ConfigResource type of a topic (AlterConfigs)."""


@pytest.fixture
def abused_periodic(target_session: TargetSession, request: pytest.FixtureRequest) -> Any:
    with abused_target(target_session, request, PERIODIC) as target:
        yield target


def _fill(abused: AbusedTarget, topic: str, configs: dict[str, str], *, keyed: bool) -> None:
    """Create ``topic``, produce BATCHES batches, then Fetch it to the end."""
    wire, caps = abused.wire(), abused.caps
    ops.ensure_topic(wire, caps, topic, 1, configs)
    value = b"v" * VALUE_BYTES
    for i in range(BATCHES):
        pairs = [(b"k%d" % (j % 4) if keyed else None, value) for j in range(BATCH_VALUES)]
        batch = build_batch(pairs, base_timestamp=int(time.time() * 1000))
        answer = ops.produce_batch(wire, caps, topic, batch)
        ops.check(answer.error_code, f"Produce {topic} batch {i}")
    end, offset, fetches = BATCHES * BATCH_VALUES, 0, 0
    while offset < end and fetches < 4 * BATCHES:  # bounded: each fetch returns at least one batch
        fetches += 1
        _, part = ops.fetch(
            wire, caps, topic, offset, max_bytes=SEGMENT_BYTES, partition_max_bytes=SEGMENT_BYTES
        )
        got = ops.batches(part)
        assert got, f"Fetch {topic} at {offset} returned no batch"
        offset = got[-1][0].last_offset + 1
    assert offset == end, f"Fetch read {topic} to {offset}, not {end}"


def _alter(abused: AbusedTarget, topic: str, configs: dict[str, str]) -> None:
    """Legacy AlterConfigs (the whole set of the topic's configs: it replaces them)."""
    wire = abused.wire()
    answer = wire.request(
        "alter_configs",
        abused.caps.best("alter_configs"),
        resources=[{"resource_type": TOPIC, "resource_name": topic,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        validate_only=False,
    )
    ops.check(answer.responses[0].error_code, f"AlterConfigs {topic}")


class Steps:
    """Runs the test's exchanges: on the configured reference each must succeed; on another target one
    it refuses or fails (an API it lacks, a closed connection) is recorded and the others still run,
    since what is measured is the descriptors of whatever it did remove."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.failed: dict[str, str] = {}

    def run(self, name: str, action: Callable[[], object]) -> bool:
        if self.strict:
            action()
            return True
        try:
            action()
        except (WireError, NotAdvertisedError, AssertionError, OSError) as exc:
            self.failed[name] = str(exc).splitlines()[0][:160]
            return False
        return True


def test_removed_segment_files_are_not_held_open(abused_periodic: AbusedTarget) -> None:
    abused = abused_periodic
    periodic = all(abused.configured.get(k) == v for k, v in PERIODIC.items())
    steps = Steps(strict=periodic)
    stamp = f"{int(time.time() * 1000) % 10**8}"
    small = {"segment.bytes": str(SEGMENT_BYTES)}
    trimmed, retained = f"kh-deleted-records-{stamp}", f"kh-deleted-retention-{stamp}"
    compacted, dropped = f"kh-deleted-compacted-{stamp}", f"kh-deleted-topic-{stamp}"
    # nothing cleanable until the lag is lowered (a fresh log's dirty ratio is 1, above any ratio)
    compact = {**small, "cleanup.policy": "compact", "min.compaction.lag.ms": "3600000"}
    filled = {
        topic: steps.run(f"fill {topic}", functools.partial(_fill, abused, topic, configs, keyed=keyed))
        for topic, configs, keyed in ((trimmed, small, False), (retained, small, False),
                                      (compacted, compact, True), (dropped, small, False))
    }

    held_before = (held_files(abused.pid) or {}) if abused.pid is not None else {}
    started = time.monotonic()

    def delete_records() -> None:
        wire = abused.wire()
        partitions = [{"partition_index": 0, "offset": -1}]  # -1: the high watermark (KIP-107)
        answer = wire.request("delete_records", abused.caps.best("delete_records"), timeout=10_000,
                              topics=[{"name": trimmed, "partitions": partitions}])
        ops.check(answer.topics[0].partitions[0].error_code, f"DeleteRecords {trimmed}")

    def delete_topic() -> None:
        wire = abused.wire()
        answer = ops.controller_request(
            wire,
            "delete_topics",
            abused.caps.best("delete_topics", hi=5),
            {"timeout": 10_000, "topic_names": [dropped]},
            lambda r: r.responses[0].error_code,
        )
        ops.check(answer.responses[0].error_code, f"DeleteTopics {dropped}")

    lowered = {**compact, "min.compaction.lag.ms": "0", "min.cleanable.dirty.ratio": "0.01"}
    bounded = {**small, "retention.bytes": str(SEGMENT_BYTES)}
    deletions: dict[str, tuple[str, Callable[[], object]]] = {
        trimmed: ("DeleteRecords", delete_records),
        retained: ("retention.bytes", lambda: _alter(abused, retained, bounded)),
        compacted: ("compaction", lambda: _alter(abused, compacted, lowered)),
        dropped: ("DeleteTopics", delete_topic),
    }
    asked = {t for t, (name, action) in deletions.items() if filled[t] and steps.run(name, action)}
    if not abused.local:
        report("deleted_files", target=abused.name, measured="n/a (remote target)",
               failed_steps=steps.failed or None)
        return
    assert abused.pid is not None

    want = asked if periodic else set()
    deadline = started + DELETE_BOUND_S
    peak_deleted = 0
    while True:  # bounded by DELETE_BOUND_S
        still = deleted_files(abused.pid)
        assert still is not None, "the target died"
        peak_deleted = max(peak_deleted, len(still))
        removed = replaced_or_removed(held_before)  # files it held that are gone now
        seen = {t for t in asked if any(f"/{t}-0" in p for p in removed)}
        if (not still and want <= seen) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    waited = time.monotonic() - started
    report("deleted_files", target=abused.name, held_before=len(held_before), removed=len(removed),
           topics_with_removed_files=len(seen), still_held_removed=len(still), peak_held_removed=peak_deleted,
           waited_s=waited, failed_steps=steps.failed or None)
    assert not still, (f"{len(still)} removed file(s) still held open {waited:.1f} s after the deletions "
                       f"(disk space not freed, descriptors leaked): {still[:6]}")
    if periodic:
        assert seen == want, (f"within {DELETE_BOUND_S} s the target removed none of the files it held of "
                              f"{sorted(want - seen)}: the deletions this test relies on did not happen")
