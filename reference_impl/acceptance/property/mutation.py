"""The mutation check: run the property suite once per seeded bug mode and once on the correct broker.

Each mode must be caught (an invariant fails) within the example budget, and
the correct broker must pass it; the shrunk counterexample of each mode is
kept as a readable timeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from reference_impl.core.mutants import ALL

from .machine import ReplicationMachine
from .replication import InvariantViolation

CI = {"max_examples": 300, "stateful_step_count": 30}
DEEP = {"max_examples": 5_000, "stateful_step_count": 60}


@dataclass(frozen=True)
class Outcome:
    mode: str | None
    caught: bool
    invariant: str | None
    examples: int
    timeline: str

    def line(self) -> str:
        if self.mode is None:
            return (
                f"correct broker: {'passed' if not self.caught else 'FAILED'} "
                f"({self.examples} examples{', ' + str(self.invariant) if self.caught else ''})"
            )
        if self.caught:
            return f"{self.mode}: caught by {self.invariant} after {self.examples} examples"
        return f"{self.mode}: NOT CAUGHT in {self.examples} examples"


def run_mode(mode: str | None, max_examples: int, stateful_step_count: int, shrink: bool = True) -> Outcome:
    """Run the property suite with ``mode`` on; without ``shrink`` the first failing run is kept as is
    (seconds instead of minutes: the CI budget), with it the counterexample is minimised."""
    machine = cast(
        "type[ReplicationMachine]",
        type(
            f"ReplicationMachine_{mode or 'correct'}",
            (ReplicationMachine,),
            {"mutant": mode, "examples": 0, "first_failure_at": 0},
        ),
    )
    phases = [Phase.explicit, Phase.generate, Phase.target] + ([Phase.shrink] if shrink else [])
    config = settings(
        max_examples=max_examples,
        stateful_step_count=stateful_step_count,
        deadline=None,
        database=None,
        derandomize=True,
        print_blob=False,
        phases=phases,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    try:
        run_state_machine_as_test(machine, settings=config)
    except Exception as exc:
        violation = _first_violation(exc)
        if violation is not None:
            return Outcome(mode, True, violation.invariant, machine.first_failure_at, str(violation))
        # a crash of the core under a mutant is also a catch, reported with its name
        return Outcome(mode, True, f"crash ({type(exc).__name__}: {exc})", machine.examples, repr(exc))
    return Outcome(mode, False, None, machine.examples, "")


def _first_violation(exc: BaseException) -> InvariantViolation | None:
    """The invariant that failed (hypothesis groups several distinct failures in an ExceptionGroup)."""
    if isinstance(exc, InvariantViolation):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _first_violation(inner)
            if found is not None:
                return found
    return None


def run_all(
    max_examples: int, stateful_step_count: int, modes: tuple[str, ...] = ALL, shrink: bool = True
) -> list[Outcome]:
    outcomes = [run_mode(mode, max_examples, stateful_step_count, shrink) for mode in modes]
    outcomes.append(run_mode(None, max_examples, stateful_step_count, shrink))
    return outcomes
