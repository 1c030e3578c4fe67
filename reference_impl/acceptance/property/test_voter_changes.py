"""The KIP-853 voter change property (:mod:`.voter_changes`, over the simulator's
``reference_impl/sim/raft/voter_fuzz.py``): with voters added and removed one at a time amid crashes,
partitions and lossy links, no epoch has two leaders and no committed record is lost or changed, on
the correct replica; the seeded mode ``voters-old-majority`` (a VotersRecord committed under the old
set's majority) is caught."""

from __future__ import annotations

import time

from reference_impl.core.mutants import RAFT_MODES, VOTERS_OLD_MAJORITY
from reference_impl.sim.raft.voter_fuzz import run

from .voter_changes import CHANGE_RATE, outcome


def test_voter_changes_keep_every_raft_claim() -> None:
    """The correct replica holds every claim in every seeded schedule; figures printed."""
    started = time.monotonic()
    result = outcome(None)
    assert not result.caught, result.timeline
    added = removed = 0
    for seed in range(3):
        r = run(seed, change_rate=CHANGE_RATE)
        added, removed = added + r.added, removed + r.removed
    assert added > 0 and removed > 0, "the schedules must change the voters to test anything"
    print(
        f"{result.examples} schedules held; 3 of them asked {added} adds, {removed} removals "
        f"({time.monotonic() - started:.1f} s)"
    )


def test_the_seeded_raft_mode_is_caught() -> None:
    assert RAFT_MODES == (VOTERS_OLD_MAJORITY,)
    result = outcome(VOTERS_OLD_MAJORITY)
    assert result.caught, "voters-old-majority was not caught in the seeded schedules"
    print(result.line(), result.timeline)


def test_a_schedule_replays_exactly() -> None:
    assert run(5, change_rate=CHANGE_RATE) == run(5, change_rate=CHANGE_RATE)
