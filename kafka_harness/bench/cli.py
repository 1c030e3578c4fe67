"""``kafka-harness bench``: throughput and end-to-end latency, reference broker against Tansu, same run.

Every figure comes from a real client (confluent-kafka, librdkafka) against
real broker processes on loopback. Two scenarios, each for every record size:
``single`` (one broker, acks=1: the reference broker and Tansu, started once,
repetitions interleaved reference, tansu, reference, ... so drift on a noisy
machine hits both alike) and ``cluster`` (three reference brokers, topics with
replication factor 3, acks=all; Tansu with memory storage is a single broker,
so its cell says so). Each repetition measures produce and fetch throughput,
then end-to-end latency at a fixed rate. The table shows medians and the
reference/Tansu ratio. ``--security ssl|sasl_ssl`` adds the reference launched secured as a column of
its own (``reference+sasl_ssl``: TLS, SCRAM-SHA-512, the cluster's links secured too), measured in
the same run, interleaved with the PLAINTEXT one. This is a benchmark, not a test: it prints figures and
asserts nothing. JSON (and the table as text) go to ``reports/output/bench/``;
``--alluredir`` adds one Allure result (epic Benchmarks) with both attached.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

from fixtures.targets import Target, TargetUnavailableError, launch, parse_target
from fixtures.wire.security import run_security_scope
from reports.paths import output

from .measurements import MIN_VALUE_SIZE, TopicError, measure_latency, measure_throughput
from .model import CLUSTER, FAILED, NOT_APPLICABLE, OK, SINGLE, UNAVAILABLE, Result, Scenario
from .output import payload, write_allure
from .table import Settings, format_table

DEFAULT_OUT = output("bench")
DEFAULT_RATE = 500.0
"""Records per second for the latency runs: under a fifth of the lowest produce throughput
measured here (the 3-broker acks=all reference cluster) and far under the single-node ones."""
SCENARIO_KINDS = {"single": SINGLE, "cluster": CLUSTER}
SECURED_MARK = "+"
"""``reference+sasl_ssl``: the reference launched with ``--security sasl_ssl`` (a column of its own)."""
SECURED_CHOICES = ("ssl", "sasl_ssl", "sasl_plaintext")
BASE_RECORDS = 300_000
"""The same count on one broker and on the cluster, so their ratio compares like with like. The
cluster once ran 30,000 (at 29,000 rec/s, a second's work); at 100,000 rec/s and more that was a
0.1 s window, mostly the first and last acks=all round trips: 1 KiB measured 102,000-120,000 rec/s
over 10,000 records and 128,000-136,000 over 100,000, same cluster, same run."""
MAX_VALUE_SIZE = 1_048_576
TANSU_SINGLE = "Tansu with memory storage runs as a single broker"


def default_records(value_size: int) -> int:
    """Records per throughput run, on one broker as on the cluster: 300,000 at 100 B; a third at 1 KiB."""
    return BASE_RECORDS if value_size <= 128 else BASE_RECORDS // 3


def build_scenarios(kinds: list[str], sizes: list[int], records: int | None) -> list[Scenario]:
    scenarios = []
    for kind in kinds:
        for size in sizes:
            n = records or default_records(size)
            if kind == CLUSTER:
                scenarios.append(Scenario(kind, size, n, acks="all", brokers=3, replication_factor=3))
            else:
                scenarios.append(Scenario(kind, size, n))
    return scenarios


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-harness bench",
        description="Throughput and end-to-end latency, reference broker against Tansu, same run.",
    )
    parser.add_argument("--targets", default="reference,tansu", help="comma-separated target specs")
    parser.add_argument(
        "--scenarios", default="single,cluster",
        help="comma-separated: single (1 broker, acks=1), cluster (3 brokers, RF=3, acks=all)",
    )
    parser.add_argument(
        "--value-size", type=int, action="append",
        help=f"record value size in bytes, repeatable (default 100 and 1024; at least {MIN_VALUE_SIZE})",
    )
    parser.add_argument("--records", type=int,
                        help="records per throughput run (default 300,000 for 100 B, a third of that "
                             "for larger records; the same on one broker and on the cluster)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repetitions (default 3)")
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE,
                        help=f"records per second in the latency runs (default {DEFAULT_RATE:.0f})")
    parser.add_argument("--latency-seconds", type=float, default=10.0,
                        help="length of each latency run (default 10)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where bench.json and bench.txt go")
    parser.add_argument("--alluredir", type=Path, help="also write one Allure result (epic Benchmarks) here")
    parser.add_argument(
        "--security", action="append", choices=SECURED_CHOICES, default=[],
        help="also measure each reference target launched secured (repeatable), in the same run: a "
             f"column 'reference{SECURED_MARK}ssl' beside PLAINTEXT's (the whole cluster secured)",
    )
    return parser


def _parse(argv: list[str]) -> argparse.Namespace:
    """Parse and check the arguments; anything wrong ends in parser.error (exit 2)."""
    parser = _parser()
    args = parser.parse_args(argv)
    specs = [t.strip() for t in args.targets.split(",") if t.strip()]
    if not specs:
        parser.error("--targets names no target")
    if len(set(specs)) != len(specs):
        parser.error(f"--targets names a target twice: {args.targets}")
    for spec in specs:
        try:
            parse_target(spec)
        except ValueError as exc:
            parser.error(str(exc))
    kinds = [k.strip() for k in args.scenarios.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in SCENARIO_KINDS]
    if not kinds or unknown:
        parser.error(f"--scenarios takes single and/or cluster, not {args.scenarios!r}")
    sizes = args.value_size or [100, 1024]
    for size in sizes:
        if not MIN_VALUE_SIZE <= size <= MAX_VALUE_SIZE:
            parser.error(f"--value-size {size} is outside {MIN_VALUE_SIZE}..{MAX_VALUE_SIZE} bytes "
                         f"(each record carries a {MIN_VALUE_SIZE}-byte send stamp)")
    if args.records is not None and not 0 < args.records <= 10_000_000:
        parser.error("--records must be between 1 and 10,000,000")
    if not 0 < args.repeat <= 100:
        parser.error("--repeat must be between 1 and 100")
    if not (math.isfinite(args.rate) and 0 < args.rate <= 1_000_000):
        parser.error("--rate must be a positive number of records per second, at most 1,000,000")
    if not (math.isfinite(args.latency_seconds) and 0 < args.latency_seconds <= 600):
        parser.error("--latency-seconds must be more than 0 and at most 600")
    if args.rate * args.latency_seconds > 10_000_000:
        parser.error("--rate times --latency-seconds must stay under 10,000,000 records")
    for name in ("out", "alluredir"):
        path = getattr(args, name)
        if path is not None and path.exists() and not path.is_dir():
            parser.error(f"--{name} {path} exists and is not a directory")
    references = [s for s in specs if parse_target(s).kind == "reference"]
    specs += [f"{s}{SECURED_MARK}{security}" for security in dict.fromkeys(args.security) for s in references]
    if args.security and not any(SECURED_MARK in s for s in specs):
        parser.error("--security measures a reference target secured: name one in --targets")
    args.specs = specs
    args.kinds = [SCENARIO_KINDS[k] for k in dict.fromkeys(kinds)]
    args.sizes = list(dict.fromkeys(sizes))
    return args


def _say(line: str) -> None:
    print(line, flush=True)


def _run_one(
    result: Result, bootstrap: str, args: argparse.Namespace, progress: Callable[[str], None]
) -> None:
    """Throughput then latency, one repetition; a failure marks the result and ends its repetitions."""
    sc = result.scenario
    figures = None
    try:
        figures = measure_throughput(bootstrap, sc, progress)
        latency = measure_latency(bootstrap, sc, args.rate, args.latency_seconds, progress)
    except TopicError as exc:
        # unavailable only when no replicated topic was ever had; one that came and went is a failure
        never = sc.replication_factor > 1 and not result.runs and figures is None
        result.status, result.reason = (UNAVAILABLE if never else FAILED), str(exc)
    except Exception as exc:  # a client or broker error: reported in the table, the bench goes on
        result.status, result.reason = FAILED, f"{type(exc).__name__}: {exc}"
    else:
        figures.p50_ms, figures.p99_ms, figures.p999_ms = latency.p50_ms, latency.p99_ms, latency.p999_ms
        figures.latency = latency
        result.runs.append(figures)
        return
    progress(f"  {result.target} {result.status}: {result.reason}")


def _interleave(results: list[Result], running: dict[str, Target], args: argparse.Namespace) -> None:
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    for rep in range(args.repeat):
        for sc in scenarios:
            for r in results:
                if r.scenario != sc or r.target not in running or r.status != OK:
                    continue
                _say(f"[{rep + 1}/{args.repeat}] {r.target}: {sc.label}, {sc.records:,} records, "
                     f"then {args.rate:,.0f} rec/s for {args.latency_seconds:g} s")
                target = running[r.target]
                with run_security_scope(target.secured.properties if target.secured else None):
                    _run_one(r, target.bootstrap_servers, args, _say)


def _launch(spec: str, brokers: int = 1) -> Target:
    """``spec``, or ``spec+SECURITY``: the same target launched secured (its listeners and links)."""
    base, _, security = spec.partition(SECURED_MARK)
    return launch(base, brokers=brokers, security=security or None)


def _close(running: dict[str, Target]) -> None:
    for target in running.values():
        target.close()
    running.clear()


def run_single(scenarios: list[Scenario], args: argparse.Namespace) -> list[Result] | str:
    """The one-broker scenarios; a target that cannot start ends the bench (the message is returned)."""
    results = [Result(sc, spec) for sc in scenarios for spec in args.specs]
    running: dict[str, Target] = {}
    try:
        for spec in args.specs:
            _say(f"starting {spec} ...")
            try:
                running[spec] = _launch(spec)
            except (TargetUnavailableError, ValueError) as exc:
                return f"cannot start {spec}: {exc}"
        _interleave(results, running, args)
    finally:
        _close(running)
    return results


def run_cluster(scenarios: list[Scenario], args: argparse.Namespace) -> list[Result]:
    """The 3-broker RF=3 scenarios: unavailable (with the reason) rather than fatal when no cluster starts."""
    results = [Result(sc, spec) for sc in scenarios for spec in args.specs]
    running: dict[str, Target] = {}
    try:
        for spec in args.specs:
            mine = [r for r in results if r.target == spec]
            if parse_target(spec.partition(SECURED_MARK)[0]).kind == "tansu":
                for r in mine:
                    r.status, r.reason = NOT_APPLICABLE, TANSU_SINGLE
                continue
            _say(f"starting {spec} with 3 brokers ...")
            try:
                running[spec] = _launch(spec, brokers=3)
            except Exception as exc:  # the cluster is the part most likely to be missing or broken
                for r in mine:
                    r.status, r.reason = UNAVAILABLE, f"cannot start 3 brokers: {type(exc).__name__}: {exc}"
                _say(f"  {spec} unavailable: {mine[0].reason}")
        _interleave(results, running, args)
    finally:
        _close(running)
    return results


def main(argv: list[str]) -> int:
    try:
        args = _parse(argv)
    except SystemExit as exc:  # argparse has printed the message (or the help)
        return int(exc.code or 0)
    start_ms = int(time.time() * 1000)
    singles = build_scenarios([k for k in args.kinds if k == SINGLE], args.sizes, args.records)
    clusters = build_scenarios([k for k in args.kinds if k == CLUSTER], args.sizes, args.records)
    results: list[Result] = []
    if singles:
        single = run_single(singles, args)
        if isinstance(single, str):
            print(f"kafka-harness bench: {single}", file=sys.stderr)
            return 2
        results += single
    if clusters:
        results += run_cluster(clusters, args)
    table = format_table(results, args.specs, Settings(args.rate, args.latency_seconds, args.repeat))
    print()
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, text_path = args.out / "bench.json", args.out / "bench.txt"
    json_path.write_text(json.dumps(payload(results, args, table), indent=2))
    text_path.write_text(table + "\n")
    print(f"\nwritten to {json_path} and {text_path}")
    if args.alluredir is not None:
        write_allure(args, results, [("bench table", text_path), ("bench.json", json_path)], start_ms)
        print(f"Allure result written to {args.alluredir}")
    return 1 if any(r.status == FAILED for r in results) else 0
