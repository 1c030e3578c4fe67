"""Quiet partitions (issue 22): a follower's idle partitions, left out of the last incremental
answer and not named again, are taken as idle on its next fetch without their checks while the
partition's stamp holds; and any change of theirs (records, the log start, the ISR) ends that."""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl.core.partition import Partition
from reference_impl.protocol.errors import ErrorCode
from reference_impl.tests.core.cluster_harness import ClusterHarness
from reference_impl.tests.core.harness import request

from .test_follower_fetch_session import TOPIC, produce, setup


def two_led_by_one(c: ClusterHarness) -> tuple[int, int, int]:
    """(leader, busy index, quiet index): two partitions of the topic with the same leader."""
    by_leader: dict[int, list[int]] = {}
    for index, info in sorted(c.brokers[1].image.topics[TOPIC].partitions.items()):
        by_leader.setdefault(info.leader, []).append(index)
    leader, indexes = next((n, ixs) for n, ixs in sorted(by_leader.items()) if len(ixs) >= 2)
    return leader, indexes[0], indexes[1]


def led(c: ClusterHarness, leader: int, index: int) -> Partition:
    part = c.brokers[leader].partition(TOPIC, index)
    assert part is not None and part.tracker is not None
    return part


def checks_counted(monkeypatch: Any, part: Partition) -> list[int]:
    """Each fetch of ``part`` that went through :meth:`Partition.note_follower_fetch`, by follower."""
    calls: list[int] = []
    original = part.note_follower_fetch

    def spy(replica_id: int, *args: Any) -> Any:
        calls.append(replica_id)
        return original(replica_id, *args)

    monkeypatch.setattr(part, "note_follower_fetch", spy)
    return calls


def test_an_idle_partition_is_not_checked_on_every_round_trip_of_a_busy_one(monkeypatch: Any) -> None:
    """Writes to one partition make its followers fetch again and again; the other partition they
    follow from the same leader is checked once, then quiet, and its followers stay caught up."""
    c, _fetches = setup()
    leader, busy, quiet = two_led_by_one(c)
    for i in range(3):
        produce(c, busy, b"warm-%d" % i)
    checked = checks_counted(monkeypatch, led(c, leader, quiet))
    for i in range(10):
        _leader, answer = produce(c, busy, b"v-%d" % i)
        assert answer.error_code == ErrorCode.none
    assert checked == []
    part = led(c, leader, quiet)
    assert part.tracker is not None
    for state in part.tracker.followers.values():
        assert state.last_caught_up_ms == state.last_fetch_ms == c.now_ms  # told of each idle fetch
    assert set(part.isr) == {1, 2, 3}


def test_a_quiet_partition_replicates_its_next_write() -> None:
    """acks=all with min.insync.replicas=3 on the quiet partition completes: both followers fetch
    the new batch (the leader's log version moved, so the stamp no longer holds)."""
    c, _fetches = setup()
    leader, busy, quiet = two_led_by_one(c)
    for i in range(5):
        produce(c, busy, b"busy-%d" % i)
    _leader, answer = produce(c, quiet, b"wakes")
    assert answer.error_code == ErrorCode.none
    c.advance(100)
    ends = {n: c.brokers[n].partition(TOPIC, quiet).log.log_end_offset for n in (1, 2, 3)}  # type: ignore[union-attr]
    assert ends == {1: 1, 2: 1, 3: 1}
    assert led(c, leader, quiet).high_watermark == 1


def test_a_quiet_partition_passes_on_a_log_start_moved_by_delete_records() -> None:
    """DeleteRecords moves only the log start (no record, the log end as it was): the followers'
    next answers carry it, and their log starts follow."""
    c, _fetches = setup()
    leader, busy, quiet = two_led_by_one(c)
    for i in range(2):
        produce(c, quiet, b"q-%d" % i)
    for i in range(5):
        produce(c, busy, b"busy-%d" % i)
    cut = [{"partition_index": quiet, "offset": 1}]
    body = request(21, 2, timeout=1000, topics=[{"name": TOPIC, "partitions": cut}])
    deleted = c.call(leader, body).topics[0].partitions[0]
    assert deleted.error_code == ErrorCode.none
    for i in range(3):
        produce(c, busy, b"after-%d" % i)
    c.advance(100)
    starts = {n: c.brokers[n].partition(TOPIC, quiet).log.log_start_offset for n in (1, 2, 3)}  # type: ignore[union-attr]
    assert starts == {1: 1, 2: 1, 3: 1}


@pytest.mark.parametrize("moved", ["high watermark", "isr"])
def test_a_stamp_moves_with_the_state_an_idle_fetch_depends_on(moved: str) -> None:
    """The partition's stamp covers what :meth:`IsrTracker.record_idle_fetch` and the answer read
    besides the log: the high watermark, and the ISR (a follower dropped from it must take the
    full path, where its fetch puts it back)."""
    c, _fetches = setup()
    leader, _busy, quiet = two_led_by_one(c)
    part = led(c, leader, quiet)
    before = part.quiet_stamp()
    assert part.quiet_stamp() == before
    if moved == "isr":
        assert part.tracker is not None
        part.tracker.isr = (leader,)  # both followers out
    else:
        part.high_watermark += 1
    assert part.quiet_stamp() != before
