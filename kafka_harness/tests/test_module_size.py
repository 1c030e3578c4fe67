"""The layout issue's size rule, kept: no Python module of the project over 800 lines, data tables
excepted (docs/ARCHITECTURE.md, "Modules stay small"). A module that grows past it is split by what
it does, not by line count; a new data table is named in DATA_TABLES with the reason it is one."""

from __future__ import annotations

import subprocess
from pathlib import Path

LIMIT = 800
ROOT = Path(__file__).resolve().parents[2]
DATA_TABLES: dict[str, str] = {}
"""Path relative to the root → why the file is a table of Kafka's definitions, not logic."""


def _tracked_modules(root: Path) -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "*.py"], capture_output=True, text=True, check=False
    )
    if listed.returncode == 0 and listed.stdout.strip():
        return [root / line for line in listed.stdout.splitlines()]
    return [p for p in root.rglob("*.py") if not {".venv", ".tox"} & set(p.parts)]


def _too_long(root: Path, paths: list[Path]) -> dict[str, int]:
    counts = {}
    for path in paths:
        if not path.is_file():
            continue
        lines = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
        name = path.relative_to(root).as_posix()
        if lines > LIMIT and name not in DATA_TABLES:
            counts[name] = lines
    return counts


def test_no_module_over_the_limit() -> None:
    modules = _tracked_modules(ROOT)
    assert len(modules) > 100, "the project's modules were not found"
    assert _too_long(ROOT, modules) == {}


def test_the_rule_flags_a_long_module_and_spares_a_short_one(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "small.py").write_text("x = 1\n" * LIMIT)
    found = _too_long(tmp_path, sorted(tmp_path.glob("*.py")))
    assert found == {"big.py": LIMIT + 1}
