"""The replica fetcher's backoff never leaves a deadline in the past behind it."""

from __future__ import annotations

from types import SimpleNamespace

from reference_impl.core.replication.fetcher import ReplicaFetcher


def test_a_backoff_for_a_leader_no_longer_followed_is_dropped_when_it_ends() -> None:
    """Found by the broker simulator: a follower backed off from leader 4 (unreachable), then
    stopped following 4 (it became leader itself). The stale entry kept ``next_deadline_ms`` at
    a past instant, so the shell woke the broker again at once, for ever (a busy loop)."""
    broker = SimpleNamespace(partitions={}, node_id=5, followed_by_leader=dict)
    fetcher = ReplicaFetcher(broker)
    fetcher.backoff_until[4] = 1_000
    fetcher.maybe_fetch(500)
    assert fetcher.next_deadline_ms() == 1_000  # still backing off: wake when it ends
    fetcher.maybe_fetch(1_000)
    assert fetcher.next_deadline_ms() is None
    assert fetcher.backoff_until == {}


def test_the_entries_kept_for_a_leader_no_longer_followed_are_dropped() -> None:
    """The fetcher keeps each followed partition's last fetch entry, by leader (issue 22); once
    nothing is followed from a leader, what it kept for that leader goes."""
    broker = SimpleNamespace(partitions={}, node_id=5, followed_by_leader=dict)
    fetcher = ReplicaFetcher(broker)
    fetcher.entries[4] = {}
    fetcher.maybe_fetch(0)
    assert fetcher.entries == {}
