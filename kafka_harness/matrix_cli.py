"""``kafka-harness matrix``: the compatibility matrix of several targets, one HTML page.

    kafka-harness matrix --targets reference,tansu,noida [--command-config FILE] [--from-results DIR]

Runs ``kafka-harness conformance --no-report`` (the conformance suites and the client matrix) once per
target, each into ``DIR/<target>`` (default ``reports/output/matrix/results``), or with
``--from-results DIR`` reads what earlier runs left there. Writes the page (API × version × target,
client × scenario × target, a score per target: cases passed of cases applicable) to ``--out``
(default ``reports/matrix/index.html``, with ``scores.json``), attaches it to an Allure result in
``--alluredir`` (so the HTML report links it), and with ``--screenshot PNG`` takes a headless-Chromium
picture of it. Ends with a verdict line: valid when every target ran and nothing failed undeclared.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from fixtures.targets import parse_target
from reports.compat_matrix import Matrix, load, write
from reports.paths import ALLURE_RESULTS, MATRIX, output

from .run.stages import parse_verdict, python_cli

EXIT_OK, EXIT_FAILED, EXIT_CANNOT_RUN = 0, 1, 2
MAX_TARGETS = 8


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafka-harness matrix", description=__doc__.split("\n\n")[0])
    p.add_argument("--targets", required=True, help="comma-separated targets, e.g. reference,tansu,noida")
    p.add_argument(
        "--from-results",
        type=Path,
        default=None,
        metavar="DIR",
        help="read DIR/<target> (Allure results of earlier runs) instead of running",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=output("matrix") / "results",
        help="where each target's run writes DIR/<target> (emptied first)",
    )
    p.add_argument("--out", type=Path, default=MATRIX, help="folder of the page (index.html, scores.json)")
    p.add_argument(
        "--alluredir",
        default=str(ALLURE_RESULTS),
        help="Allure results to add the matrix to (the page attached); '' for none",
    )
    p.add_argument(
        "--command-config",
        default=None,
        metavar="FILE",
        help="client properties (security.protocol, sasl.*, ssl.*) for every target's run",
    )
    p.add_argument("--client", default="", help="client matrix with these clients only")
    p.add_argument("-k", dest="keyword", default="", help="pytest -k expression (a smaller matrix)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds each target's run may take")
    p.add_argument(
        "--screenshot",
        type=Path,
        default=None,
        metavar="PNG",
        help="a headless-Chromium screenshot of the page",
    )
    return p


def _run_target(target: str, results: Path, args: argparse.Namespace) -> str:
    """One target's conformance run; returns a note for the page ('' when it ran to a verdict)."""
    command = [*python_cli("conformance"), "--target", target, "--results", str(results), "--no-report"]
    if args.command_config:
        command += ["--command-config", str(Path(args.command_config).resolve())]
    if args.client:
        command += ["--client", args.client]
    if args.keyword:
        command += ["-k", args.keyword]
    print(f"== {target}: $ {' '.join(command)}", flush=True)
    started = time.monotonic()
    log = results.parent / f"{target}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with log.open("w") as sink:
            done = subprocess.run(
                command, stdout=sink, stderr=subprocess.STDOUT, text=True, timeout=args.timeout
            )
    except subprocess.TimeoutExpired:
        return f"the run overran {args.timeout:.0f} s (results so far shown; log {log})"
    verdict, _ = parse_verdict(log.read_text(errors="replace"))
    print(
        f"   {target}: exit {done.returncode}, VERDICT {verdict}, {time.monotonic() - started:.0f} s "
        f"(log {log})",
        flush=True,
    )
    if done.returncode not in (0, 1) or verdict is None:
        return f"could not run (exit {done.returncode}; log {log})"
    return ""


def _attach(matrix: Matrix, page: Path, alluredir: Path) -> None:
    from reports.allure import write_result

    scores = matrix.scores()
    lines = [
        f"{t}: {scores[t].line()}" + (f" ({matrix.notes[t]})" if t in matrix.notes else "")
        for t in matrix.targets
    ]
    write_result(
        alluredir,
        name=f"compatibility matrix: {', '.join(matrix.targets)}",
        full_name=f"kafka_harness.matrix.{'.'.join(matrix.targets)}",
        epic="Conformance",
        feature="Compatibility matrix",
        story="Score per target",
        passed=not matrix.notes and all(s.counts["fail"] == 0 for s in scores.values()),
        message="\n".join(lines),
        parameters={"targets": ", ".join(matrix.targets)},
        attachments=[("compatibility matrix", page), ("scores", page.parent / "scores.json")],
        steps=[
            (line, scores[t].counts["fail"] == 0 and t not in matrix.notes)
            for t, line in zip(matrix.targets, lines, strict=True)
        ],
    )


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if not targets or len(targets) > MAX_TARGETS or len(set(targets)) != len(targets):
        print(f"kafka-harness matrix: --targets takes 1 to {MAX_TARGETS} distinct targets", file=sys.stderr)
        return EXIT_CANNOT_RUN
    try:
        for t in targets if args.from_results is None else ():  # read results may name any target
            parse_target(t)
    except ValueError as exc:
        print(f"kafka-harness matrix: {exc}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    folder_of = {t: t.replace("/", "_").replace(":", "_") for t in targets}
    ran_notes: dict[str, str] = {}
    if args.from_results is not None:
        base = args.from_results
        missing = [t for t in targets if not (base / folder_of[t]).is_dir()]
        if len(missing) == len(targets):
            print(f"kafka-harness matrix: no results under {base} for {', '.join(missing)}", file=sys.stderr)
            return EXIT_CANNOT_RUN
    else:
        import shutil

        base = args.results
        for t in targets:
            shutil.rmtree(base / folder_of[t], ignore_errors=True)
            (base / folder_of[t]).mkdir(parents=True)
            note = _run_target(t, base / folder_of[t], args)
            if note:
                ran_notes[t] = note
    matrix = load({t: base / folder_of[t] for t in targets})
    matrix.notes.update(ran_notes)
    generated = f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC from {base}."
    page = write(matrix, args.out, generated=generated)
    print(f"matrix: {page}")
    if args.alluredir.strip():  # '' for none (Path('') would be the working directory)
        _attach(matrix, page, Path(args.alluredir))
    if args.screenshot is not None:
        from reports.browser import BrowserUnavailableError, screenshot

        try:
            print(f"screenshot: {screenshot(page, args.screenshot)}")
        except (BrowserUnavailableError, subprocess.TimeoutExpired) as exc:
            print(f"kafka-harness matrix: no screenshot: {exc}", file=sys.stderr)
    scores = matrix.scores()
    for t in targets:
        print(f"  {t}: {scores[t].line()}" + (f" — {matrix.notes[t]}" if t in matrix.notes else ""))
    fails = sum(s.counts["fail"] for s in scores.values())
    cases = sum(s.applicable for s in scores.values())
    if matrix.notes and len(matrix.notes) == len(targets):
        print(f"VERDICT: could not run targets={len(targets)} could_not_run={len(matrix.notes)}")
        return EXIT_CANNOT_RUN
    verdict = "invalid" if fails or matrix.notes else "valid"
    pairs = " ".join(f"{t}={scores[t].percent:.1f}%" for t in targets)
    print(
        f"VERDICT: {verdict} targets={len(targets)} cases={cases} failed={fails} "
        f"could_not_run={len(matrix.notes)} {pairs}"
    )
    return EXIT_FAILED if verdict == "invalid" else EXIT_OK
