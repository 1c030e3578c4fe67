"""Every seeded bug mode is caught by the property suite at CI budget (issue 6's mutation check).

Each search runs in a fresh interpreter (a spawned process), as ``kafka-harness mutants`` does: in
the whole CI run, in one process after every other test, the search for truncate-to-hw found no
counterexample in 403 examples, while alone, after the simulator's tests or in a fresh process it
finds one within a few examples. Some process-wide state a test before it leaves behind changes
the derandomised search; until that is found, the check runs where no earlier test can reach it.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

from reference_impl.core.mutants import ALL
from reports import allure as report

from .mutation import CI, Outcome
from .mutation import run_mode as run_in_this_process


def run_mode(mode: str, **settings: object) -> Outcome:
    """:func:`.mutation.run_mode` in a fresh interpreter."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(run_in_this_process, mode, **settings).result()  # type: ignore[arg-type]


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
