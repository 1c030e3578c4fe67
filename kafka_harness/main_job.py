"""``kafka-harness run``: every level of checks against one target, one report, one verdict.

The main job runs the same commands a user would, in order, each in its own
process with a budget: a smoke round trip through two real clients, the
conformance suites and the client matrix, the property suite with its mutation
check, chaos campaigns, and a Spark load with verification. Every stage writes
Allure results; the job merges them into ``reports/output/allure-results``, builds
``reports/output/html/index.html`` with ``kafka-harness report``, prints a table of
what passed, failed and deviated as expected, and exits 0 only when nothing
failed (1 when a check failed, 2 when the job could not run: a stage said it cannot run here, such as
``load`` without the ``spark`` extra; that stage is "could not run" in the table and the report, not a
failure). Every stage is in the report: one that died before writing a result is a broken result
with its log, so the report's overview is never green under an invalid verdict.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from fixtures.targets import add_security_options, parse_target, security_from_args
from reports.paths import ALLURE_RESULTS, HTML, output

from .run.plan import PROFILES, build_plan
from .run.stages import Stage, StageResult, python_cli, run_stage
from .run.summary import Row, row_for, settle, table, tally_results

EXIT_OK, EXIT_FAILED, EXIT_CANNOT_RUN = 0, 1, 2


def _say(line: str) -> None:
    print(line, flush=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafka-harness run", description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="reference",
                   help="reference (default) | tansu | bootstrap:HOST:PORT[,...] | container[:IMAGE]")
    p.add_argument("--profile", choices=PROFILES, default="quick", help="quick (≤ 10 min) or full")
    p.add_argument("--brokers", type=int, default=3,
                   help="reference cluster size for the chaos stages (default 3; Tansu runs one)")
    p.add_argument("--only", default=None, help="comma-separated stage names to run (default: all)")
    p.add_argument("--results", type=Path, default=ALLURE_RESULTS,
                   help="merged Allure results (emptied first)")
    p.add_argument("--html", type=Path, default=HTML, help="where the HTML report goes")
    p.add_argument("--work", type=Path, default=output("run"),
                   help="stage logs, per-stage results, outputs")
    p.add_argument("--no-report", action="store_true", help="skip building the HTML report")
    p.add_argument("--list", action="store_true", help="print the plan and exit")
    add_security_options(p, launches=True)
    return p


def security_args(args: argparse.Namespace) -> list[str]:
    """What every stage that reaches the target is given: ``--security P`` (each launches the reference
    secured) or ``--command-config FILE`` (each connects with those settings). ValueError for a file
    that cannot be used, both given, or ``--security`` on a target not launched here."""
    client = security_from_args(args)
    if args.security:
        if parse_target(args.target).kind != "reference":
            raise ValueError(f"--security launches a reference, not {args.target} (use --command-config)")
        return ["--security", args.security]
    if client is not None:
        return ["--command-config", str(Path(args.command_config).resolve())]
    return []


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        spec = parse_target(args.target)
    except ValueError as exc:
        print(f"kafka-harness run: {exc}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if args.brokers < 1:
        print("kafka-harness run: --brokers must be at least 1", file=sys.stderr)
        return EXIT_CANNOT_RUN
    try:
        secured = security_args(args)
    except ValueError as exc:
        print(f"kafka-harness run: {exc}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    brokers = args.brokers if spec.kind == "reference" else 1
    plan = build_plan(args.target, spec.kind, spec.name, args.profile, args.work, brokers, secured)
    if args.only:
        wanted = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = wanted - {s.name for s in plan}
        if unknown:
            print(f"kafka-harness run: no stage {', '.join(sorted(unknown))} in this plan "
                  f"({', '.join(s.name for s in plan)})", file=sys.stderr)
            return EXIT_CANNOT_RUN
        plan = [s for s in plan if s.name in wanted]
    if args.list:
        for s in plan:
            _say(f"{s.name:20} {s.level:12} budget {s.budget_s:5.0f} s  {' '.join(s.argv[1:])}")
        return EXIT_OK
    return run_plan(plan, args, secured)


def run_plan(plan: list[Stage], args: argparse.Namespace, secured: Sequence[str] = ()) -> int:
    """Run ``plan``'s stages in order, merge their results (each stage settled first: see
    :func:`~kafka_harness.run.summary.settle`), build the report, print the table and the verdict.

    ``args`` holds ``target``, ``profile``, ``results``, ``html``, ``work`` and ``no_report``;
    ``secured`` the security options every stage was given (shown in the header and the table)."""
    shutil.rmtree(args.work, ignore_errors=True)
    shutil.rmtree(args.results, ignore_errors=True)
    args.results.mkdir(parents=True)
    began = time.monotonic()
    _say(f"kafka-harness run: target {args.target}, profile {args.profile}, {len(plan)} stages"
         + (f", security {' '.join(secured)}" if secured else ""))
    rows: list[Row] = []
    for s in plan:
        _say(f"\n== {s.name} ({s.level}, budget {s.budget_s:.0f} s)")
        result: StageResult = run_stage(s, args.work / "logs")
        stage_results = args.work / "results" / s.name
        settle(result, stage_results, args.target)
        tally = tally_results(stage_results)
        _merge(stage_results, args.results)
        row = row_for(result, tally)
        rows.append(row)
        word = "ok" if row.ok else "could not run" if row.could_not_run else "FAIL"
        _say(f"   {s.name}: {word} — {row.detail} (log: {result.log})")
    _write_environment(args, secured)
    extra = {"target": args.target, "profile": args.profile, "time": f"{time.monotonic() - began:.0f} s"}
    if secured:
        extra["security"] = " ".join(secured)
    if not args.no_report:
        extra["report"] = _build_report(args.results, args.html)
    _say("\n" + table(rows, extra))
    failed = [r.level for r in rows if not r.ok and not r.could_not_run]
    skipped = [r.level for r in rows if r.could_not_run]
    if failed:
        verdict, code = "invalid", EXIT_FAILED
    elif skipped:
        verdict, code = "could not run", EXIT_CANNOT_RUN
    else:
        verdict, code = "valid", EXIT_OK
    _say(f"VERDICT: {verdict} stages={len(rows)} failed={len(failed)} could_not_run={len(skipped)}")
    return code


def _merge(stage_results: Path, merged: Path) -> None:
    """Copy a stage's Allure files into the run's results (names are UUIDs; nothing collides)."""
    if not stage_results.is_dir():
        return
    for path in stage_results.iterdir():
        if path.name in ("environment.properties", "categories.json"):
            continue
        shutil.copy2(path, merged / path.name)


def _security_label(secured: Sequence[str]) -> str:
    """The report's ``security`` key: the protocol given, ``--command-config``, or PLAINTEXT."""
    if not secured:
        return "PLAINTEXT"
    return secured[1] if secured[0] == "--security" else "--command-config"


def _write_environment(args: argparse.Namespace, secured: Sequence[str]) -> None:
    from reports.allure import write_categories, write_environment

    write_categories(args.results)
    props = {"target": args.target, "profile": args.profile, "python": sys.version.split()[0],
             "security": _security_label(secured)}
    for stage_dir in sorted((args.work / "results").glob("*")):
        env = stage_dir / "environment.properties"
        if env.exists():
            for line in env.read_text().splitlines():
                key, sep, value = line.partition("=")
                if sep:
                    props.setdefault(key.strip(), value.strip())
    write_environment(args.results, props)


def _build_report(results: Path, html: Path) -> str:
    """``kafka-harness report``; the summary says where the report is, or why there is none."""
    command = [*python_cli("report"), "--results", str(results), "--out", str(html)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "not built: kafka-harness report overran 600 s"
    if done.returncode != 0:
        reason = (done.stderr or done.stdout).strip().splitlines()
        return f"not built: {reason[-1] if reason else f'exit {done.returncode}'}"
    return str(html / "index.html")
