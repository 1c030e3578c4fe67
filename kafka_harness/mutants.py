"""``kafka-harness mutants``: the mutation check of the property suite.

Runs the replication property suite once per seeded bug mode
(``reference_impl/core/mutants.py``) and once on the correct broker, and
prints one line per mode, ``MODE: caught by INVARIANT after N examples`` or
``MODE: NOT CAUGHT``, then the correct broker's line. Each counterexample's
timeline is written to ``reports/mutants/MODE.txt``. Exit status 0 when every
mode is caught and the correct broker passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from reference_impl.core.mutants import ALL
from suites.property.mutation import CI, DEEP, run_mode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profile", choices=("ci", "deep"), default="ci", help="example budget (ci: seconds)"
    )
    parser.add_argument("--mode", action="append", choices=ALL, help="only these modes (repeatable)")
    parser.add_argument("--no-shrink", action="store_true", help="keep the first counterexample as found")
    parser.add_argument("--out", type=Path, default=Path("reports/mutants"), help="where timelines go")
    args = parser.parse_args(argv)
    budget = CI if args.profile == "ci" else DEEP
    args.out.mkdir(parents=True, exist_ok=True)
    failures = 0
    for mode in [*(args.mode or ALL), None]:
        started = time.monotonic()
        outcome = run_mode(mode, **budget, shrink=not args.no_shrink)
        print(f"{outcome.line()}  ({time.monotonic() - started:.1f} s)", flush=True)
        if outcome.timeline:
            (args.out / f"{mode or 'correct'}.txt").write_text(outcome.timeline + "\n")
        if (mode is None) == outcome.caught:
            failures += 1
    print("VERDICT: valid" if not failures else f"VERDICT: invalid problems={failures}")
    return 0 if not failures else 1
