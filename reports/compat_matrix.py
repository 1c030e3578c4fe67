"""The compatibility matrix: Allure results of the conformance suites and the client matrix, one folder
per target, become one self-contained HTML page.

Three tables: API × version × target, client × scenario × target, and a score per target (cases
passed of cases applicable). Each cell is the worst outcome of the tests it covers:

* ``fail``: a test failed or broke that the target's expectations do not declare;
* ``expected``: a declared deviation (a strict xfail: ``suites/expectations/<target>.toml``);
* ``pass``: every test of the cell passed;
* ``not advertised``: the target's ApiVersions does not list the API (or not at that version);
* ``skipped``: the tests did not apply here (a client or feature unavailable, a secured suite on a
  plaintext target); not counted in the score.

A case is applicable when it ran (passed, failed, broke, or deviated as declared); the score is
passed / applicable. The rows come from the labels the report plugin writes (``api``,
``api_version``; else the feature and the ``version`` parameter), so results of any run of
``suites/conformance`` and ``suites/clients`` with ``--alluredir`` can be read, old or new.

Only reads files and writes one; imports nothing of the harness (the ``reports`` layer).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .html_report import read_results

OUTCOMES = ("fail", "expected", "pass", "not advertised", "skipped")
"""Worst first: a cell shows the first of these any of its tests had."""
APPLICABLE = ("pass", "expected", "fail")
MAX_RESULT_FILES = 200_000
"""A results folder with more files than this is not a run's (bounded read)."""
MAX_RESULT_BYTES = 4 << 20
"""A single result file larger than this is skipped (Allure results are a few kB)."""


def outcome_of(result: dict[str, Any]) -> str:
    """One Allure result → one of :data:`OUTCOMES`."""
    status = str(result.get("status") or "unknown")
    details = result.get("statusDetails") or {}
    message = str(details.get("message") or "") if isinstance(details, dict) else ""
    if status == "passed":
        return "pass"
    if status == "skipped":
        if message.startswith("XFAIL"):
            return "expected"
        if "not advertised" in message:
            return "not advertised"
        return "skipped"
    return "fail"  # failed, broken, unknown


def _labels(result: dict[str, Any]) -> dict[str, str]:
    return {
        str(lb.get("name")): str(lb.get("value")) for lb in result.get("labels") or () if isinstance(lb, dict)
    }


def _parameters(result: dict[str, Any]) -> dict[str, str]:
    return {
        str(p.get("name")): str(p.get("value")).strip("'\"")
        for p in result.get("parameters") or ()
        if isinstance(p, dict)
    }


@dataclass(frozen=True)
class Case:
    """One test result of one target, placed in the matrix."""

    target: str
    table: str  # "api" or "client"
    row: tuple[str, str]  # (API, version) or (client, scenario)
    outcome: str
    name: str
    message: str


EPIC_BY_MODULE = {"suites.conformance.": "Conformance", "suites.clients.": "Clients"}
"""A test skipped in its setup (an API not advertised) carries no labels: its module says where it goes."""
ABSENT_API = re.compile(r"not advertised: the target(?:'s ApiVersions does not list| serves) (\w+)")


def api_name(name: str) -> str:
    """``add_partitions_to_txn`` (kio's name) → ``AddPartitionsToTxn`` (Kafka's); other names unchanged."""
    if "_" in name or name.islower():
        return "".join(word[:1].upper() + word[1:] for word in name.split("_"))
    return name


def _module_label(full_name: str) -> tuple[str | None, str]:
    """(epic, feature) of an unlabelled result from its module (``suites.conformance.test_k01_fetch#...``)."""
    module = full_name.split("#", 1)[0]
    epic = next((e for prefix, e in EPIC_BY_MODULE.items() if module.startswith(prefix)), None)
    words = module.rsplit(".", 1)[-1].removeprefix("test_").split("_")
    if words and words[0][:1] == "k" and words[0][1:].isdigit():
        words = words[1:]
    text = " ".join(words)
    return epic, text[:1].upper() + text[1:]


def cases_of(target: str, results: Iterable[dict[str, Any]]) -> list[Case]:
    """Place each Conformance result under (API, version) and each Clients result under (client, scenario)."""
    out: list[Case] = []
    for r in results:
        labels, params = _labels(r), _parameters(r)
        name = str(r.get("fullName") or r.get("name") or "?")
        inferred_epic, inferred_feature = _module_label(name)
        epic = labels.get("epic") or inferred_epic
        message = str((r.get("statusDetails") or {}).get("message") or "")[:300]
        outcome = outcome_of(r)
        absent = ABSENT_API.search(message)
        if epic == "Conformance":
            api = api_name(
                labels.get("api")
                or (absent.group(1) if absent else "")
                or labels.get("feature")
                or inferred_feature
            )
            version = labels.get("api_version") or params.get("version") or ""
            version = f"v{version}" if version.isdigit() else "any"
            out.append(Case(target, "api", (api, version), outcome, name, message))
        elif epic == "Clients":
            client = params.get("client_name") or params.get("client") or "(no client)"
            scenario = labels.get("feature") or inferred_feature
            out.append(Case(target, "client", (client, scenario), outcome, name, message))
    return out


def read_target(results_dir: Path) -> list[dict[str, Any]]:
    """The results of one target's run (latest per test), bounded in files and bytes."""
    if not results_dir.is_dir():
        raise FileNotFoundError(f"no results folder {results_dir}")
    for files, _path in enumerate(results_dir.iterdir(), 1):
        if files > MAX_RESULT_FILES:
            raise ValueError(f"{results_dir} holds more than {MAX_RESULT_FILES} files: not one run's results")
    return read_results(results_dir, max_bytes=MAX_RESULT_BYTES)


@dataclass
class Score:
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def applicable(self) -> int:
        return sum(self.counts[o] for o in APPLICABLE)

    @property
    def passed(self) -> int:
        return self.counts["pass"]

    @property
    def percent(self) -> float:
        return 100.0 * self.passed / self.applicable if self.applicable else 0.0

    def line(self) -> str:
        return (
            f"{self.passed} of {self.applicable} applicable cases passed ({self.percent:.1f} %); "
            f"{self.counts['expected']} expected deviations, {self.counts['fail']} failures, "
            f"{self.counts['not advertised']} not advertised, {self.counts['skipped']} skipped"
        )


@dataclass
class Matrix:
    targets: list[str]
    cases: list[Case]
    notes: dict[str, str] = field(default_factory=dict)
    """Per target: what else the page should say (a run that could not finish, its exit)."""

    def scores(self) -> dict[str, Score]:
        out = {t: Score() for t in self.targets}
        for c in self.cases:
            out[c.target].counts[c.outcome] += 1
        return out

    def cells(self, table: str) -> dict[tuple[str, str], dict[str, Counter[str]]]:
        """row → target → outcome counts."""
        grid: dict[tuple[str, str], dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
        for c in self.cases:
            if c.table == table:
                grid[c.row][c.target][c.outcome] += 1
        return grid


def load(results_by_target: dict[str, Path]) -> Matrix:
    cases: list[Case] = []
    notes: dict[str, str] = {}
    for target, folder in results_by_target.items():
        try:
            cases += cases_of(target, read_target(folder))
        except (OSError, ValueError) as exc:
            notes[target] = f"no results: {exc}"
    return Matrix(list(results_by_target), cases, notes)


def worst(counts: Counter[str]) -> str:
    return next((o for o in OUTCOMES if counts[o]), "")


def _version_key(row: tuple[str, str]) -> tuple[str, int, str]:
    api, version = row
    return (api.lower(), int(version[1:]) if version[1:].isdigit() else -1, version)


def _cell(counts: Counter[str] | None, examples: Sequence[Case]) -> str:
    if not counts:
        return '<td class="none" title="no test here">·</td>'
    outcome = worst(counts)
    applicable = sum(counts[o] for o in APPLICABLE)
    text = {
        "fail": "fail",
        "expected": "expected",
        "pass": "pass",
        "not advertised": "n/a",
        "skipped": "skip",
    }[outcome]
    if applicable:
        text += f" {counts['pass']}/{applicable}"
    tip = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
    shown = [c for c in examples if c.outcome == outcome][:3]
    if shown and outcome in ("fail", "expected", "not advertised"):
        tip += "\n" + "\n".join(f"{c.name}: {c.message[:160]}" for c in shown)
    return f'<td class="{outcome.replace(" ", "-")}" title="{html.escape(tip)}">{html.escape(text)}</td>'


def _table(matrix: Matrix, table: str, headings: tuple[str, str]) -> str:
    grid = matrix.cells(table)
    by_row: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c in matrix.cases:
        if c.table == table:
            by_row[c.row].append(c)
    rows = sorted(grid, key=_version_key) if table == "api" else sorted(grid)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headings)
    head += "".join(f"<th>{html.escape(t)}</th>" for t in matrix.targets)
    body = []
    previous = ""
    for row in rows:
        first = row[0] if row[0] != previous else ""
        previous = row[0]
        cells = "".join(
            _cell(grid[row].get(t), [c for c in by_row[row] if c.target == t]) for t in matrix.targets
        )
        body.append(
            f'<tr><th class="row">{html.escape(first)}</th><td class="sub">{html.escape(row[1])}</td>'
            f"{cells}</tr>"
        )
    if not body:
        body.append(f'<tr><td colspan="{2 + len(matrix.targets)}">no results</td></tr>')
    return f'<table class="grid"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


STYLE = """
body{font-family:'Liberation Sans',Arial,sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
p.lede{color:#555;margin:0 0 16px;max-width:1000px}
table{border-collapse:collapse;font-size:12px} th,td{border:1px solid #ddd;padding:3px 7px;text-align:center}
thead th{background:#f4f4f4;position:sticky;top:0} th.row{text-align:left;background:#fafafa}
td.sub{color:#555;text-align:left}
td.pass{background:#c8efc8} td.expected{background:#ffe7a8} td.fail{background:#f6b2b2;font-weight:bold}
td.not-advertised{background:#e4e4ee;color:#666} td.skipped{background:#f4f4f4;color:#888} td.none{color:#bbb}
table.scores td,table.scores th{font-size:14px;padding:6px 12px} .big{font-size:20px;font-weight:bold}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #ddd}
"""


def render(matrix: Matrix, *, title: str = "kafka-harness compatibility matrix", generated: str = "") -> str:
    """The page: scores first, then the two tables (one self-contained HTML document)."""
    scores = matrix.scores()
    score_rows = []
    for t in matrix.targets:
        s = scores[t]
        note = matrix.notes.get(t, "")
        score_rows.append(
            f"<tr><th class='row'>{html.escape(t)}</th><td class='big'>{s.percent:.1f} %</td>"
            f"<td>{s.passed} / {s.applicable}</td><td>{s.counts['expected']}</td><td>{s.counts['fail']}</td>"
            f"<td>{s.counts['not advertised']}</td><td>{s.counts['skipped']}</td>"
            f"<td>{html.escape(note)}</td></tr>"
        )
    legend = (
        '<p class="legend"><span>p/n in a cell: p of its n applicable tests passed; the word is its worst '
        'outcome</span><span style="background:#c8efc8">pass: all passed</span>'
        '<span style="background:#ffe7a8">expected: a declared deviation (expectations file)</span>'
        '<span style="background:#f6b2b2">fail: an undeclared failure</span>'
        '<span style="background:#e4e4ee">n/a: not advertised</span>'
        '<span style="background:#f4f4f4">skip: not applicable here</span></p>'
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p class="lede">The conformance suites (raw protocol, per API and version) and the client matrix
(real clients,
per scenario) run against each target. A case is applicable when it ran; the score is cases passed of cases
applicable (a declared deviation counts as applicable, not passed). Hover a cell for its tests.
{html.escape(generated)}</p>
<h2>Score per target</h2>
<table class="scores" id="scores"><thead><tr><th>target</th><th>score</th><th>passed / applicable</th>
<th>expected deviations</th><th>failures</th><th>not advertised</th><th>skipped</th><th>note</th></tr></thead>
<tbody>{"".join(score_rows)}</tbody></table>
{legend}
<h2>API × version × target</h2>
{_table(matrix, "api", ("API", "version"))}
<h2>Client × scenario × target</h2>
{_table(matrix, "client", ("client", "scenario"))}
</body></html>
"""


def write(matrix: Matrix, out_dir: Path, *, generated: str = "") -> Path:
    """``out_dir/index.html`` and ``out_dir/scores.json`` (the figures, for the README and scripts)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "index.html"
    page.write_text(render(matrix, generated=generated))
    scores = {
        t: {
            "passed": s.passed,
            "applicable": s.applicable,
            "percent": round(s.percent, 1),
            **{o: s.counts[o] for o in OUTCOMES},
        }
        for t, s in matrix.scores().items()
    }
    (out_dir / "scores.json").write_text(
        json.dumps({"generated": generated, "scores": scores, "notes": matrix.notes}, indent=2) + "\n"
    )
    return page
