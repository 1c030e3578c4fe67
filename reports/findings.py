"""Findings per target, generated from the target's expectations file so the two cannot drift.

``suites/expectations/<target>.toml`` lists every test the target is known to fail, with the
reason and the evidence (the one-line command that reproduces it and what it observed against
what Kafka does). ``reports/findings/<target>.md`` is that list for people: one section per
deviation (entries sharing a reason are one deviation), each with its reproducing commands.

    python -m reports.findings tansu          # rewrite reports/findings/tansu.md
    python -m reports.findings tansu --check  # exit 1 when the file is not what the toml gives
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from .paths import FINDINGS, ROOT

EXPECTATIONS = ROOT / "suites" / "expectations"


def load(target: str) -> dict[str, dict[str, str]]:
    with open(EXPECTATIONS / f"{target}.toml", "rb") as f:
        return {k: v for k, v in tomllib.load(f).items() if isinstance(v, dict)}


def render(target: str) -> str:
    """The findings page of ``target``: deviations in the order the expectations file lists them."""
    entries = load(target)
    by_reason: dict[str, list[tuple[str, str]]] = {}
    for test_id, entry in entries.items():
        by_reason.setdefault(entry["reason"], []).append((test_id, entry["evidence"]))
    lines = [
        f"# Deviations of `{target}` found by the suites",
        "",
        f"Generated from `suites/expectations/{target}.toml` by `python -m reports.findings {target}`;",
        "do not edit by hand. Each deviation is found by the tests (or main-job stages) named under",
        f"it (strict xfail on `--target {target}`); the command after each one reproduces it, with what",
        "it observed.",
        "",
        f"{len(by_reason)} deviations, {len(entries)} expectation entries.",
        "",
    ]
    for number, (reason, tests) in enumerate(by_reason.items(), 1):
        lines += [f"## {number}. {reason}", ""]
        for test_id, evidence in tests:
            command, _, observed = evidence.partition(": ")
            lines.append(f"- `{test_id}`")
            lines.append(f"  - reproduce: `{command}`")
            if observed:
                lines.append(f"  - observed: {observed}")
        lines.append("")
    return "\n".join(lines)


def path_of(target: str) -> Path:
    return FINDINGS / f"{target}.md"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0].startswith("-"):
        print("usage: python -m reports.findings TARGET [--check]", file=sys.stderr)
        return 2
    target, text = args[0], render(args[0])
    if "--check" in args:
        current = path_of(target).read_text() if path_of(target).exists() else ""
        if current != text:
            print(f"{path_of(target)} is stale: run python -m reports.findings {target}", file=sys.stderr)
            return 1
        return 0
    path_of(target).parent.mkdir(parents=True, exist_ok=True)
    path_of(target).write_text(text)
    print(path_of(target))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
