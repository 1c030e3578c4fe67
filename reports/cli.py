"""``kafka-harness report``: build reports/output/html/index.html from reports/output/allure-results."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .html_report import ReportError, build, describe
from .paths import ALLURE_RESULTS as DEFAULT_RESULTS
from .paths import HTML as DEFAULT_OUT


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kafka-harness report",
        description="Render Allure results as one self-contained HTML page (Allure 2 CLI, installed under "
        "reports/node on first use), keeping the previous report's history for trends.",
    )
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="Allure results folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="report folder (index.html goes there)")
    args = parser.parse_args(argv)
    try:
        found, seconds = build(args.results, args.out)
    except ReportError as exc:
        print(f"kafka-harness report: {exc}", file=sys.stderr)
        return 2
    print(f"report: {args.out / 'index.html'} ({seconds:.1f} s)")
    for epic, counts in sorted(found.by_epic.items()):
        print(f"  {epic}: {describe(counts)}")
    return 0
