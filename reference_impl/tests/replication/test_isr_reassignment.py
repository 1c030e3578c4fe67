"""A leader whose assignment changes under the same leader epoch (a reassignment adds or drops
replicas) tracks the new followers, so an added replica that catches up can join the ISR."""

from __future__ import annotations

from reference_impl.core.replication.isr import IsrTracker


def test_an_added_replica_is_tracked_and_can_join_a_dropped_one_is_forgotten() -> None:
    tracker = IsrTracker(1, (1, 2, 3), (1, 2, 3), now_ms=0)
    tracker.record_fetch(4, 10, 10, now_ms=5)
    assert 4 not in tracker.followers  # not a replica yet: its fetches are ignored
    tracker.set_replicas((2, 3, 4, 1), (1, 2, 3), now_ms=10)
    tracker.record_fetch(4, 10, 10, now_ms=20)
    assert tracker.expansion_candidates(high_watermark=10, epoch_start_offset=0) == [4]
    tracker.set_replicas((2, 3, 4), (2, 3, 4), now_ms=30)
    assert sorted(tracker.followers) == [2, 3, 4]
    assert tracker.followers[4].log_end_offset == 10  # kept: the same follower, still tracked
