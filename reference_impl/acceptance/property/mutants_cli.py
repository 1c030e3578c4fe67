"""``kafka-harness mutants``: the mutation check of the property suite.

Runs the replication property suite once per seeded bug mode
(``reference_impl/core/mutants.py``) and once on the correct broker, then the transactions v2
check (``txn_v2.py``) for its modes (``TXN_MODES``) and on the correct broker, then the KIP-853
voter change property (``voter_changes.py``) for the Raft modes (``RAFT_MODES``) and on the correct
replica, and
prints one line per mode, ``MODE: caught by INVARIANT after N examples`` or
``MODE: NOT CAUGHT``, then the correct broker's line. Each counterexample's
timeline is written to ``reports/output/mutants/MODE.txt``. Exit status 0 when every
mode is caught and the correct broker passes, 1 otherwise.

The model drives the reference broker's own partition state machines, so this
command is a reference entry point: the ``kafka-harness`` dispatcher names it
and imports it only when the command runs (the harness never imports the core).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from reference_impl.core.mutants import ALL, RAFT_MODES, STARTUP_MODES, TXN_MODES
from reports.paths import output

from . import txn_v2, voter_changes
from .mutation import CI, DEEP, Outcome, run_mode


def main(argv: list[str]) -> int:
    if "--black-box" in argv:  # the same modes in broker processes, judged by chaos campaigns
        from kafka_harness import mutants_blackbox

        # the broker-start modes exist only in processes: the black box alone can catch them
        return mutants_blackbox.main(argv, ALL + STARTUP_MODES)
    parser = argparse.ArgumentParser(prog="kafka-harness mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profile", choices=("ci", "deep"), default="ci", help="example budget (ci: seconds)"
    )
    parser.add_argument(
        "--mode", action="append", choices=ALL + TXN_MODES + RAFT_MODES, help="only these modes (repeatable)"
    )
    parser.add_argument("--no-shrink", action="store_true", help="keep the first counterexample as found")
    parser.add_argument("--out", type=Path, default=output("mutants"), help="where timelines go")
    parser.add_argument(
        "--black-box",
        action="store_true",
        help="run the modes in reference broker processes against chaos campaigns instead "
        "(kafka_harness/mutants_blackbox.py; --black-box --help)",
    )
    parser.add_argument(
        "--alluredir",
        type=Path,
        default=None,
        help="also write each mode as an Allure result with its timeline attached",
    )
    args = parser.parse_args(argv)
    budget = CI if args.profile == "ci" else DEEP
    args.out.mkdir(parents=True, exist_ok=True)
    failures = 0
    replication = [m for m in (args.mode or ALL) if m in ALL]
    transactions = [m for m in (args.mode or TXN_MODES) if m in TXN_MODES]
    raft = [m for m in (args.mode or RAFT_MODES) if m in RAFT_MODES]
    checks = [(m, "") for m in ([*replication, None] if replication else [])]
    checks += [(m, "txn") for m in ([*transactions, None] if transactions else [])]
    checks += [(m, "raft") for m in ([*raft, None] if raft else [])]
    for mode, kind in checks:
        started = time.monotonic()
        started_ms = int(time.time() * 1000)
        if kind == "txn":
            outcome = txn_v2.outcome(mode)
        elif kind == "raft":
            outcome = voter_changes.outcome(mode)
        else:
            outcome = run_mode(mode, **budget, shrink=not args.no_shrink)
        label = {"txn": " (transactions v2 check)", "raft": " (KIP-853 voter change check)"}.get(kind, "")
        print(f"{outcome.line()}{label}  ({time.monotonic() - started:.1f} s)", flush=True)
        suffix = {"txn": "correct-transactions-v2", "raft": "correct-voter-changes"}.get(kind, "correct")
        timeline = args.out / f"{mode or suffix}.txt"
        if outcome.timeline:
            timeline.write_text(outcome.timeline + "\n")
        if args.alluredir is not None:
            _write_allure(
                args.alluredir,
                mode,
                outcome,
                timeline if outcome.timeline else None,
                started_ms,
                args.profile,
                not args.no_shrink,
            )
        if (mode is None) == outcome.caught:
            failures += 1
    print("VERDICT: valid" if not failures else f"VERDICT: invalid problems={failures}")
    return 0 if not failures else 1


def _write_allure(
    results: Path,
    mode: str | None,
    outcome: Outcome,
    timeline: Path | None,
    started_ms: int,
    profile: str,
    shrunk: bool,
) -> None:
    """One result per mode: passed when the mode was caught (or, for the correct broker, when
    nothing was), the counterexample's timeline attached so a person can read how the bug bites."""
    from reports.allure import write_result

    correct = mode is None
    write_result(
        results,
        name=outcome.line(),
        full_name=f"property.mutants.{mode or 'correct'}",
        epic="Property",
        feature="Mutation check",
        story=mode or "the correct broker keeps every invariant",
        passed=outcome.caught != correct,
        message="" if outcome.caught != correct else outcome.line(),
        parameters={
            "profile": profile,
            "shrunk": shrunk,
            "examples": outcome.examples,
            "invariant": outcome.invariant or "-",
        },
        attachments=[("counterexample timeline", timeline)] if timeline else [],
        start_ms=started_ms,
    )
