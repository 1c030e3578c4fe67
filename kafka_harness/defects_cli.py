"""``kafka-harness defects``: the check checks itself (issue 17). Each seeded defect of the reference
broker (:data:`reference_impl.defects.ALL`, switched on by the broker config
``reference.defects=NAME``) must make at least one of the harness's checks fail.

For each defect, its checks (:data:`CHECKS`) run against a reference broker with the defect on,
each in a process of its own (``pytest -p no:cacheprovider -q -x ... --broker-config
reference.defects=NAME``, or a command such as ``kafka-harness chaos ... --broker-config ...``).
A defect is *caught* when at least one of them fails. That means something only if the same
check passes on a clean reference broker, so every check first runs once without a defect (the
baseline); a defect whose checks do not all pass clean is reported ``BASELINE FAILS``, never
caught. The output ends with one line per defect and the verdict::

    name-anchor: caught by conformance/test_k19_topic_names.py
    VERDICT: valid defects=10 caught=10

Exit 0 when every defect asked for is caught, 1 when one is not, 2 when the command could not run.
Each run's output is kept in ``reports/output/defects/<defect or clean>/<check>.log``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fixtures.targets import BROKER_CONFIGS_ENV
from kafka_harness.run.stages import Stage, StageResult, parse_verdict, run_stage
from reference_impl import defects
from reports.paths import output

ROOT = Path(__file__).resolve().parent.parent
"""Where the checks' paths are relative to (the project: ``suites/...``)."""
OUT = output("defects")
CLEAN = "clean"
"""The baseline's label: a reference broker with no defect on."""
CHECK_BUDGET_S = 600.0
"""One check's run, at most (pytest's own per-test timeout, 300 s, ends a hung test first)."""


@dataclass(frozen=True)
class Check:
    """One command that judges a reference broker: ``python -m <argv>`` plus, for a defect run,
    ``--broker-config reference.defects=NAME`` (both the pytest plugin and the harness's commands
    take that option). It passes with exit 0 and fails with exit 1 (pytest: a test failed; a
    command: ``VERDICT: invalid``); any other exit, or a pytest run where no test passed, means the
    check could not judge."""

    name: str
    argv: tuple[str, ...]
    expected_s: float = 10.0
    """Roughly how long its slower run takes (measured), so the longest start first when runs share
    the machine; it orders, it never judges."""

    @property
    def is_pytest(self) -> bool:
        return self.argv[0] == "pytest"

    def command(self, defect: str | None) -> list[str]:
        configs = ["--broker-config", f"{defects.DEFECTS_CONFIG}={defect}"] if defect else []
        return [sys.executable, "-m", *self.argv, *configs]


def pytest_check(
    *paths: str, keyword: str | None = None, expected_s: float = 10.0, security: str | None = None
) -> Check:
    """Some of the suites' tests (files or node ids) against a one-broker reference target (``-x``:
    one failure is enough), launched with ``--security`` when given."""
    name = " ".join(p.removeprefix("suites/") for p in paths) + (f" -k {keyword}" if keyword else "")
    selection = ("-k", keyword) if keyword else ()
    secured = ("--security", security) if security else ()
    argv = ("pytest", "-p", "no:cacheprovider", "-q", "-x", "--target", "reference", *secured)
    argv += (*paths, *selection)
    return Check(name, argv, expected_s)


def command_check(name: str, *argv: str, expected_s: float = 10.0) -> Check:
    """A ``kafka-harness`` command that ends with a verdict line (exit 1 when invalid)."""
    return Check(name, ("kafka_harness", *argv), expected_s)


RESTART_CHECK = command_check(
    "chaos restart check",
    "chaos", "--target", "reference", "--nemesis", "kill", "--time", "8", "--rate", "300", "--seed", "3",
    "--restart-bound", "10", "--out", str(OUT / "chaos"), expected_s=35,
)  # fmt: skip
"""A short kill campaign on one reference broker, ending with the durability-after-restart check
(:mod:`chaos.workloads.restart`): everything acknowledged readable within 10 s with no new write."""

FUZZ_CHECK = command_check(
    "fuzz",
    "fuzz", "--target", "reference", "--requests", "5000", "--time", "30", "--seed", "4",
    "--max-shrink", "1", "--shrink-time", "10", "--out", str(OUT / "fuzz"), expected_s=60,
)  # fmt: skip
"""5,000 requests of the protocol fuzzer (:mod:`chaos.fuzz`): invalid on a crash, a hang or a lost record."""

CHECKS: Mapping[str, tuple[Check, ...]] = {
    defects.UNBOUNDED_DECODE: (
        pytest_check("suites/conformance/test_malformed_requests.py"),
        FUZZ_CHECK,
    ),
    defects.UNVALIDATED_RECORDS: (pytest_check("suites/conformance/test_k00_produce_validation.py"),),
    defects.UNBOUNDED_DECOMPRESSION: (pytest_check("suites/abuse/test_decompression_bombs.py"),),
    defects.UNBOUNDED_BUFFERING: (
        pytest_check("suites/abuse/test_pipelining.py"),
        pytest_check("suites/abuse/test_fairness.py", expected_s=16),
        pytest_check("suites/abuse/test_slow_clients.py::test_idle_connections_are_closed", expected_s=14),
        pytest_check("suites/abuse/test_slowloris.py", expected_s=15),
    ),
    # with the defect on, the broker makes 100,000 partitions' files before it runs out of descriptors
    defects.UNBOUNDED_PARTITIONS: (pytest_check("suites/abuse/test_partition_counts.py", expected_s=70),),
    defects.NAME_ANCHOR: (pytest_check("suites/conformance/test_k19_topic_names.py"),),
    defects.INTERNAL_TOPIC_WRITES: (pytest_check("suites/conformance/test_internal_topics.py"),),
    defects.QUORUM_ON_CLIENT_LISTENER: (pytest_check("suites/conformance/test_controller_listener.py"),),
    defects.LATE_HIGH_WATERMARK: (RESTART_CHECK,),
    defects.FETCH_PLACEHOLDER_ORDER: (
        pytest_check("suites/conformance/test_k01_fetch.py", keyword="interleaving"),
    ),
    defects.ALLOW_BEATS_DENY: (
        pytest_check("suites/conformance/test_security_acls.py", security="sasl_plaintext", expected_s=17),
    ),
}
"""Which checks each seeded defect must fail, each verified to pass clean and fail with the defect.
Item 4 (unbounded buffering) has four sides, one check each: memory behind a long poll
(pipelining), a starved client (fairness), idle connections never closed, and requests that never
complete (slowloris)."""


# -- one run's outcome ------------------------------------------------------------------------------

PASS, FAIL, ERROR = "passed", "failed", "error"
_PYTEST_COUNTS = re.compile(r"(\d+) (passed|failed|errors?)\b")


@dataclass(frozen=True)
class Outcome:
    """What one run of one check said: ``passed``, ``failed`` or ``error`` (could not judge)."""

    status: str
    summary: str
    seconds: float = 0.0


def pytest_counts(text: str) -> dict[str, int]:
    """pytest's closing line (``3 failed, 61 passed, 1 warning in 2.03s``) as counts."""
    for line in reversed(text.splitlines()):
        if re.search(r" in [0-9.]+s", line):
            counts = {word.rstrip("s") if word.startswith("error") else word: int(n)
                      for n, word in _PYTEST_COUNTS.findall(line)}  # fmt: skip
            if counts:
                return counts
    return {}


def classify(
    check: Check, returncode: int | None, timed_out: bool, text: str, seconds: float = 0.0
) -> Outcome:
    """One run's outcome from its exit code and output."""
    if timed_out:
        return Outcome(ERROR, f"overran {CHECK_BUDGET_S:.0f} s", seconds)
    if check.is_pytest:
        counts = pytest_counts(text)
        summary = ", ".join(f"{n} {word}" for word, n in counts.items()) or f"exit {returncode}"
        if returncode == 1 and (counts.get("failed") or counts.get("error")):
            return Outcome(FAIL, summary, seconds)
        if returncode == 0 and counts.get("passed"):
            return Outcome(PASS, summary, seconds)
        if returncode == 0:
            return Outcome(ERROR, f"no test passed ({summary})", seconds)
        return Outcome(ERROR, f"exit {returncode} ({summary})", seconds)
    verdict, counts = parse_verdict(text)
    pairs = " ".join(f"{k}={v}" for k, v in counts.items())
    summary = f"VERDICT: {verdict} {pairs}".strip() if verdict else f"exit {returncode}, no verdict"
    if returncode == 1 and verdict == "invalid":
        return Outcome(FAIL, summary, seconds)
    if returncode == 0 and verdict == "valid":
        return Outcome(PASS, summary, seconds)
    return Outcome(ERROR, summary, seconds)


# -- the judgement ----------------------------------------------------------------------------------


def judge(defect: str, checks: Sequence[Check], baseline: Mapping[Check, Outcome],
          seeded: Mapping[Check, Outcome]) -> tuple[bool, str]:  # fmt: skip
    """Whether ``defect`` is caught, and its output line: caught by the checks that passed clean and
    failed with it; ``BASELINE FAILS`` when one of its checks did not pass clean (the check cannot
    tell this defect from its own failure); else ``NOT CAUGHT``."""
    unclean = [c for c in checks if baseline[c].status != PASS]
    if unclean:
        why = "; ".join(f"{c.name}: {baseline[c].status}, {baseline[c].summary}" for c in unclean)
        return False, f"{defect}: BASELINE FAILS ({why})"
    caught = [c.name for c in checks if seeded[c].status == FAIL]
    if caught:
        return True, f"{defect}: caught by {', '.join(caught)}"
    errors = [f"{c.name}: {seeded[c].summary}" for c in checks if seeded[c].status == ERROR]
    return False, f"{defect}: NOT CAUGHT" + (f" ({'; '.join(errors)})" if errors else "")


def verdict_line(selected: int, caught: int) -> str:
    return f"VERDICT: {'valid' if caught == selected else 'invalid'} defects={selected} caught={caught}"


def selected_defects(only: str | None) -> list[str]:
    """The defects to run, in :data:`reference_impl.defects.ALL`'s order; ValueError for an unknown one."""
    if not only:
        return list(defects.ALL)
    names = defects.parse(only)  # UnknownDefectError (a ValueError) names what is known
    return [d for d in defects.ALL if d in names]


# -- running ----------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def run_check(check: Check, defect: str | None, logs: Path = OUT) -> Outcome:
    """One check against a fresh reference broker (``defect`` on, or clean), in a process of its own."""
    stage = Stage(
        _slug(check.name), "defects", check.command(defect), CHECK_BUDGET_S,
        # the command picks its target itself: nothing inherited from a caller's run
        env={BROKER_CONFIGS_ENV: "", "KH_TARGET": "reference", "KH_BROKERS": "1"},
    )  # fmt: skip
    result: StageResult = run_stage(stage, logs / (defect or CLEAN), echo=False)
    text = result.log.read_text(errors="replace")
    return classify(check, result.returncode, result.timed_out, text, result.seconds)


Runner = Callable[[Check, "str | None"], Outcome]
Baseline = dict[Check, Outcome]
Seeded = dict[tuple[str, Check], Outcome]


def run_all(
    chosen: Iterable[str], jobs: int, runner: Runner = run_check, say: Callable[[str], None] = print
) -> tuple[Baseline, Seeded]:
    """Every check of ``chosen`` once clean and once per defect, ``jobs`` at a time."""
    chosen = list(chosen)
    clean_checks = list(dict.fromkeys(c for d in chosen for c in CHECKS[d]))
    work: list[tuple[str | None, Check]] = [(None, c) for c in clean_checks]
    work += [(d, c) for d in chosen for c in CHECKS[d]]
    work.sort(key=lambda item: -item[1].expected_s)  # stable: the longest first, else in table order

    def one(item: tuple[str | None, Check]) -> Outcome:
        defect, check = item
        outcome = runner(check, defect)
        shown = f"{outcome.status} ({outcome.summary}) {outcome.seconds:.1f} s"
        say(f"  [{defect or CLEAN}] {check.name}: {shown}")
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        outcomes = list(pool.map(one, work))
    baseline: Baseline = {}
    seeded: Seeded = {}
    for (defect, check), outcome in zip(work, outcomes, strict=True):
        if defect is None:
            baseline[check] = outcome
        else:
            seeded[(defect, check)] = outcome
    return baseline, seeded


def list_checks(chosen: Iterable[str]) -> str:
    return "\n".join(f"{d}: {', '.join(c.name for c in CHECKS[d])}" for d in chosen)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness defects", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", default=None, metavar="NAME,...", help=f"these defects only ({', '.join(defects.ALL)})"
    )
    parser.add_argument("--list", action="store_true", help="print each defect's checks and exit")
    parser.add_argument("--jobs", type=int, default=2, help="checks run at once (default 2)")
    args = parser.parse_args(argv)
    try:
        chosen = selected_defects(args.only)
    except ValueError as exc:
        print(f"kafka-harness defects: {exc}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    if args.list:
        print(list_checks(chosen))
        return 0
    if args.jobs < 1:
        print("kafka-harness defects: --jobs must be at least 1", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    started = time.monotonic()
    logs = OUT.relative_to(ROOT) if OUT.is_relative_to(ROOT) else OUT
    print(f"{len(chosen)} defects; each check once on a clean reference broker, then with the defect on "
          f"({args.jobs} at a time; logs in {logs}/)", flush=True)  # fmt: skip
    baseline, seeded = run_all(chosen, args.jobs, say=lambda line: print(line, flush=True))
    print(f"wall time {time.monotonic() - started:.0f} s\n")
    caught = 0
    for defect in chosen:
        checks = CHECKS[defect]
        ok, line = judge(defect, checks, baseline, {c: seeded[(defect, c)] for c in checks})
        caught += ok
        print(line)
    print(verdict_line(len(chosen), caught))
    return 0 if caught == len(chosen) else 1
