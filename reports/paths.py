"""Where the report's files live: code in ``reports/``, everything a run generates under
``reports/output/`` (ignored by git), the Node tools in their npm project ``reports/node/``.

Every command that writes results, reports or figures takes its default folder
from here, so one ignored folder holds all of it and ``reports/`` itself stays
code, the findings pages and the npm project.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports"
OUTPUT = REPORTS / "output"
"""Everything generated: results, the HTML report, main-job work, figures, timelines (git ignores it)."""
ALLURE_RESULTS = OUTPUT / "allure-results"
"""Allure results every command appends to (``kafka-harness report`` reads them)."""
HTML = OUTPUT / "html"
"""The HTML report (``index.html``), with Allure's history for the trends."""
FINDINGS = REPORTS / "findings"
"""Per-target findings pages, generated from the expectations files and committed."""
MATRIX = REPORTS / "matrix"
"""The published compatibility matrix (``kafka-harness matrix``): ``index.html`` and ``scores.json``,
committed like the findings pages; the runs it reads stay under ``OUTPUT/matrix``."""
NODE_PROJECT = REPORTS / "node"
"""The npm project (``package.json``): the Allure CLI and kafkajs, installed into its node_modules."""


def output(name: str) -> Path:
    """A folder of its own under :data:`OUTPUT` for one kind of generated file (``bench``, ``run``...)."""
    return OUTPUT / name
