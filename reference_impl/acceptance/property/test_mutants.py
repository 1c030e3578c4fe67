"""Every seeded bug mode is caught by the property suite at CI budget (issue 6's mutation check)."""

from __future__ import annotations

import pytest

from reference_impl.core.mutants import ALL
from reports import allure as report

from .mutation import CI, run_mode


@pytest.mark.parametrize("mode", ALL)
def test_bug_mode_is_caught(mode: str) -> None:
    report.label(epic="Property", feature="Mutation check", story=mode)
    outcome = run_mode(mode, **CI, shrink=True)  # shrunk: a timeline short enough to read, in the report
    report.attach_text(f"{mode} counterexample", outcome.timeline or outcome.line())
    assert outcome.caught, outcome.line()


def test_a_failing_run_replays_to_the_same_trace() -> None:
    """The simulator and the search are deterministic: running the same mode with the same settings
    again finds the same counterexample, step for step (what makes a failure debuggable)."""
    mode = "truncate-to-hw"
    first = run_mode(mode, **CI, shrink=False)
    again = run_mode(mode, **CI, shrink=False)
    assert first.caught and first.timeline
    assert (again.invariant, again.examples) == (first.invariant, first.examples)
    assert again.timeline == first.timeline
