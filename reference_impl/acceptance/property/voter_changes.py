"""The voter change property for ``kafka-harness mutants``: the simulator's KIP-853 schedules
(:mod:`reference_impl.sim.raft.voter_fuzz`: voters added and removed one at a time amid crashes,
partitions and lossy links, every Raft claim checked after every event) hold on the correct replica,
and each seeded Raft mode (:data:`reference_impl.core.mutants.RAFT_MODES`) breaks one of them."""

from __future__ import annotations

from reference_impl.sim.raft.voter_fuzz import search

from .mutation import Outcome

SEEDS = 12
"""Schedules per check: about 0.4 s each (40 actions, 400 ms apart, on the virtual clock)."""
CHANGE_RATE = 0.5
"""Half the fault actions become voter changes: the modes bite only while a change is in flight."""


def outcome(mode: str | None) -> Outcome:
    """The check as ``kafka-harness mutants`` reports it: caught (with the failing claim) or not."""
    caught = search(mode, range(SEEDS), change_rate=CHANGE_RATE)
    if caught is None:
        return Outcome(mode, False, None, SEEDS, "")
    invariant = caught.problem.split(" violated", 1)[0] if " violated" in caught.problem else "settle"
    return Outcome(mode, True, invariant, caught.seed + 1, f"seed {caught.seed}: {caught.problem}")
