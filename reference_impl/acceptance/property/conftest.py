"""Hypothesis budgets for the property suite: ``ci`` by default, ``deep`` on demand.

``pytest reference_impl/acceptance/property --hypothesis-profile deep`` (or ``tox -e property-deep``)
runs hundreds of thousands of steps; the example database (``.hypothesis/``)
keeps every failure found, and it is replayed first on the next run.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep",
    max_examples=8_000,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _label_in_report(request: pytest.FixtureRequest) -> None:
    """Epic Property for the invariant runs (the mutation check labels its own results per mode)."""
    if request.node.path.stem == "test_mutants":
        return
    from reports import allure

    function = getattr(request.node, "function", None)
    doc = (getattr(function, "__doc__", None) or "").strip()
    if request.node.name == "runTest":  # the state machine itself
        story = "every invariant holds after every step under random faults"
    else:
        story = doc.splitlines()[0] if doc else request.node.name
    allure.label(epic="Property", feature="Replication invariants", story=story)


_STARTED = time.monotonic()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """State the budget actually spent: examples and steps of the replication machine, and time."""
    from .machine import ReplicationMachine

    if ReplicationMachine.examples:
        profile = settings()  # the loaded profile
        terminalreporter.write_line(
            f"property: {ReplicationMachine.examples:,} examples, {ReplicationMachine.steps():,} steps "
            f"(profile {profile.max_examples} x {profile.stateful_step_count}) "
            f"in {time.monotonic() - _STARTED:.0f} s"
        )
