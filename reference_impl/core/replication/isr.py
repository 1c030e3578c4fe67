"""The leader's view of its followers: log end offsets, catch-up times, the ISR and the high watermark.

Seed 002 and KIP-320, as Kafka's ``Partition`` and ``Replica`` implement them:

* a follower's log end offset (LEO) is the offset it asks to fetch from;
* a follower is *caught up* at the time of a fetch that reaches the leader's
  LEO, or that reaches the LEO the leader had at the follower's previous fetch
  (it is then at most one fetch behind); a follower not caught up for
  ``replica.lag.time.max.ms`` leaves the ISR;
* a follower joins the ISR when its LEO has reached the high watermark *and*
  the first offset of the leader's current epoch, so a replica that has not
  yet seen this epoch cannot become a leader candidate with a stale log;
* the high watermark is the smallest LEO over the ISR, and never moves back.

ISR changes are proposals: the controller accepts or refuses them
(AlterPartition), and while one is pending the *maximal* ISR, the union of
the current and proposed members, is used both for the high watermark and
for acks=all, so neither can get ahead of what either ISR would allow.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FollowerState:
    replica_id: int
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = -1
    last_fetch_leader_leo: int = -1
    checked_fetch: tuple[int, int] | None = None
    """(last fetched epoch, fetch offset) of the last fetch found not diverging in this leader
    epoch: the same pair at the same log end cannot diverge either (a leader's log below its end
    does not change within its epoch), so an idle follower's repeat fetch skips the epoch lookup."""

    def fetched_idle(self, now_ms: int) -> None:
        """What :meth:`IsrTracker.record_idle_fetch` records once it found the fetch idle."""
        self.last_caught_up_ms = now_ms
        self.last_fetch_ms = now_ms


@dataclass(frozen=True, slots=True)
class IsrProposal:
    """An ISR the leader asks the controller for (AlterPartition)."""

    new_isr: tuple[int, ...]
    partition_epoch: int
    leader_epoch: int


class IsrTracker:
    """Leader-side bookkeeping for one partition; pure state, time passed in."""

    def __init__(self, local_id: int, replicas: tuple[int, ...], isr: tuple[int, ...], now_ms: int) -> None:
        self.local_id = local_id
        self.replicas = replicas
        self.isr = isr
        self.pending: IsrProposal | None = None
        self.followers = {
            r: FollowerState(r, last_caught_up_ms=now_ms if r in isr else 0)
            for r in replicas
            if r != local_id
        }

    def set_replicas(self, replicas: tuple[int, ...], isr: tuple[int, ...], now_ms: int) -> None:
        """The assignment changed under the same leader epoch (a reassignment adds or drops
        replicas): track the new followers from scratch, forget the ones that left."""
        self.replicas = replicas
        self.isr = isr
        for r in replicas:
            if r != self.local_id and r not in self.followers:
                self.followers[r] = FollowerState(r, last_caught_up_ms=now_ms if r in isr else 0)
        for r in [r for r in self.followers if r not in replicas]:
            del self.followers[r]

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending is None:
            return self.isr
        return tuple(sorted(set(self.isr) | set(self.pending.new_isr)))

    def record_fetch(self, replica_id: int, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
        state = self.followers.get(replica_id)
        if state is None:
            return
        if fetch_offset >= leader_leo:
            state.last_caught_up_ms = now_ms
        elif state.last_fetch_leader_leo >= 0 and fetch_offset >= state.last_fetch_leader_leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.last_fetch_ms = now_ms
        state.last_fetch_leader_leo = leader_leo

    def record_idle_fetch(
        self, replica_id: int, fetch_offset: int, last_fetched_epoch: int, leader_leo: int, now_ms: int
    ) -> bool:
        """A fetch that repeats the follower's last one at the leader's unchanged log end, by an ISR
        member: what :meth:`record_fetch` would do comes down to "caught up now", and neither the
        high watermark nor the ISR can change through it. True if recorded so; False: take the
        full path (checks, :meth:`record_fetch`, the high watermark and ISR expansion).

        Why a fast path: a follower fetches every partition it follows from this leader in one
        fetch session (KIP-227), and on a cluster most of them are idle (``__consumer_offsets``'
        50): the full path's checks for each, on every fetch, dominated an acks=all round trip's
        CPU (issue 22)."""
        state = self.followers.get(replica_id)
        if (
            state is None
            or fetch_offset != leader_leo
            or state.log_end_offset != leader_leo
            or state.last_fetch_leader_leo != leader_leo
            or state.checked_fetch != (last_fetched_epoch, fetch_offset)
            or replica_id not in self.isr
            or (self.pending is not None and replica_id not in self.pending.new_isr)
        ):
            return False
        state.fetched_idle(now_ms)
        return True

    def high_watermark_candidate(self, leader_leo: int, members: tuple[int, ...] | None = None) -> int:
        """The smallest LEO over the maximal ISR (the leader counts with its own LEO)."""
        lowest = leader_leo
        for member in self.maximal_isr if members is None else members:
            if member == self.local_id:
                continue
            state = self.followers.get(member)
            lowest = min(lowest, state.log_end_offset if state else -1)
        return lowest

    def expansion_candidates(self, high_watermark: int, epoch_start_offset: int) -> list[int]:
        """Followers out of the ISR whose LEO reached both the HW and the current epoch's start."""
        return sorted(
            r
            for r, s in self.followers.items()
            if r not in self.maximal_isr and s.log_end_offset >= max(high_watermark, epoch_start_offset)
        )

    def lagging(self, now_ms: int, max_lag_ms: int) -> list[int]:
        """ISR members not caught up for longer than ``max_lag_ms``."""
        return sorted(
            r
            for r in self.isr
            if r != self.local_id
            and r in self.followers
            and now_ms - self.followers[r].last_caught_up_ms > max_lag_ms
        )
