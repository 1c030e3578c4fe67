"""``kafka-harness conformance``: the conformance and client-matrix suites against a target, and the report.

Runs ``pytest suites/conformance suites/clients --target T`` with Allure
results in ``--results`` (emptied first unless ``--append``, so runs against
several targets can share one report), builds the HTML report, and ends with
a verdict line: valid when every test passed or failed as its target's
expectations declare.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from fixtures.clients import CLIENTS
from fixtures.targets import add_security_options, check_broker_configs, parse_target, security_from_args
from reports.paths import ALLURE_RESULTS, HTML

ROOT = Path(__file__).resolve().parent.parent
SUITES = ("suites/conformance", "suites/clients")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--target", required=True, help="reference | tansu | bootstrap:HOST:PORT[,...] | container[:IMAGE]"
    )
    parser.add_argument("--client", default="", help=f"client matrix with these only ({', '.join(CLIENTS)})")
    parser.add_argument("-k", dest="keyword", default="", help="pytest -k expression selecting tests")
    parser.add_argument("--results", type=Path, default=ALLURE_RESULTS)
    parser.add_argument("--out", type=Path, default=HTML, help="HTML report folder")
    parser.add_argument(
        "--append", action="store_true", help="keep earlier results (several targets, one report)"
    )
    parser.add_argument("--no-report", action="store_true", help="write Allure results only")
    parser.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config for the reference brokers (repeatable), e.g. reference.defects=name-anchor",
    )
    add_security_options(parser, launches=True)
    args = parser.parse_args(argv)
    try:
        check_broker_configs(args.broker_config, parse_target(args.target).kind)
        security_from_args(args)
    except ValueError as exc:
        print(f"kafka-harness conformance: {exc}", file=sys.stderr)
        return 2
    unknown = [c for c in args.client.split(",") if c.strip() and c.strip() not in CLIENTS]
    if unknown:
        print(
            f"kafka-harness conformance: unknown client {unknown[0]!r}; clients are {', '.join(CLIENTS)}",
            file=sys.stderr,
        )
        return 2

    if not args.append and args.results.exists():
        shutil.rmtree(args.results)
    args.results.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pytest",
        *SUITES,
        "--target",
        args.target,
        "--alluredir",
        str(args.results),
        "-p",
        "no:cacheprovider",
        "-q",
        "-rfEX",
    ]
    if args.client:
        command += ["--client", args.client]
    if args.keyword:
        command += ["-k", args.keyword]
    for kv in args.broker_config:
        command += ["--broker-config", kv]
    if args.security:
        command += ["--security", args.security]
    if args.command_config:
        command += ["--command-config", str(Path(args.command_config).resolve())]
    print(f"$ {' '.join(command)}", flush=True)
    start = time.monotonic()
    code = subprocess.run(command, cwd=ROOT).returncode
    took = time.monotonic() - start
    if code not in (0, 1):
        print(f"kafka-harness conformance: pytest could not run the suites (exit {code})", file=sys.stderr)
        print(f"VERDICT: invalid could_not_run=1 seconds={took:.0f}")
        return 2

    from reports.html_report import ReportError, build, read_results, totals

    found = totals(read_results(args.results))
    if not args.no_report:
        try:
            _, seconds = build(args.results, args.out)
            print(f"report: {args.out / 'index.html'} ({seconds:.1f} s)")
        except ReportError as exc:
            print(f"kafka-harness conformance: no report: {exc}", file=sys.stderr)
    counts = " ".join(f"{status}={n}" for status, n in sorted(found.by_status.items()))
    verdict = "valid" if code == 0 else "invalid"
    print(f"VERDICT: {verdict} {counts} expected_deviations={found.expected_deviations} seconds={took:.0f}")
    return code
