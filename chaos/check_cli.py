"""``kafka-harness check HISTORY [--json OUT]``: run the checkers alone on a recorded history."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from chaos.checkers import CheckResult, check
from chaos.history import read_jsonl


def print_result(result: CheckResult, out: TextIO | None = None) -> None:
    """Anomaly counts with a few examples each, then the availability figures (to stdout by default,
    looked up when called, so a test capturing stdout sees them)."""
    out = out or sys.stdout
    for name, items in result.anomalies.items():
        if not items:
            continue
        mark = "BAD" if name in result.bad else "allowed"
        print(f"  {name}: {len(items)} ({mark})", file=out)
        for anomaly in items[:3]:
            print(f"    - {anomaly.description} (ops {anomaly.ops[:6]})", file=out)
    summary = result.availability.summary()
    print(
        f"  stats: {result.stats}; ok rate {summary['ok_rate_per_s']}/s, errors {summary['errors']}", file=out
    )
    if "restart_acked" in result.stats:
        stats = result.stats
        readable = stats.get("restart_readable_s")
        print(
            f"  restart: {stats['restart_acked']} writes acknowledged before every broker was killed; "
            f"down {stats.get('restart_down_s')} s; "
            + (
                f"all readable again {readable} s after the restart, with no new write"
                if readable is not None
                else f"{stats['unreadable_after_restart']} not readable within the bound"
            ),
            file=out,
        )
    for item in summary["recovery"]:
        print(
            f"  fault {item['fault']} {item['start']}-{item['end']} s: recovered in {item['recovery_s']} s",
            file=out,
        )


def write_graphs(result: CheckResult, directory: Path, per_class: int = 5) -> list[Path]:
    """Each drawn anomaly (the dependency graph's: ``detail["dot"]``) as ``<class>-<n>.dot`` with its
    explanation as a comment; Graphviz renders them (``dot -Tsvg``). Returns the files written."""
    written = []
    for name, items in result.anomalies.items():
        drawn = [a for a in items if "dot" in a.detail][:per_class]
        for n, anomaly in enumerate(drawn):
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{name}-{n}.dot"
            comment = "\n".join(f"// {line}" for line in anomaly.description.split("; then "))
            path.write_text(f"{comment}\n{anomaly.detail['dot']}\n", encoding="utf-8")
            written.append(path)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness check", description=__doc__)
    parser.add_argument(
        "history", help="a history.jsonl from kafka-harness chaos (format: chaos/history/README.md)"
    )
    parser.add_argument("--json", help="also write the full result as JSON here")
    parser.add_argument(
        "--graphs", type=Path, help="write each drawn anomaly as a DOT file in this directory"
    )
    args = parser.parse_args(argv)
    try:
        history = read_jsonl(args.history)
    except FileNotFoundError:
        print(f"kafka-harness check: no such file {args.history}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    except (ValueError, UnicodeDecodeError) as exc:
        print(f"kafka-harness check: {args.history} is not a history: {exc}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    start = time.perf_counter()
    result = check(history)
    print(f"checked {len(history):,} ops in {time.perf_counter() - start:.2f} s")
    print_result(result)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result.to_json(), out, indent=1, default=str)
    if args.graphs:
        for path in write_graphs(result, args.graphs):
            print(f"graph: {path}")
    print(result.verdict_line())
    return 0 if result.valid is True else 1
