"""The transactions v2 property (:mod:`.txn_v2`) holds on the correct broker, and its seeded bug mode
``late-marker-applies`` is caught, with a replayable timeline."""

from __future__ import annotations

from reference_impl.core.mutants import LATE_MARKER_APPLIES, TXN_MODES

from .txn_v2 import run, search


def test_no_late_marker_applies_to_a_later_transaction() -> None:
    """The correct broker holds the property in every seeded run."""
    violation = search(None)
    assert violation is None, str(violation)


def test_the_seeded_bug_mode_is_caught() -> None:
    """``late-marker-applies`` (a version 2 marker checked as version 0) is caught, with a timeline."""
    assert TXN_MODES == (LATE_MARKER_APPLIES,)
    violation = search(LATE_MARKER_APPLIES)
    assert violation is not None, "late-marker-applies was not caught in the seeded runs"
    print(violation)


def test_a_run_replays_to_the_same_timeline() -> None:
    """Runs are deterministic by seed (what makes a failure debuggable)."""
    assert run(3, None) == run(3, None)
