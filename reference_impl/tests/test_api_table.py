"""docs/APIVERSIONS.md is what the handler registry and the listener rules say today, and every
difference from Kafka has its reason in the gap ledger (reference_impl/tools/kafka_apis.py)."""

from __future__ import annotations

from pathlib import Path

from reference_impl.core.handlers import HANDLERS
from reference_impl.tools.api_table import main, problems, render, rows

DOC = Path(__file__).resolve().parents[2] / "docs" / "APIVERSIONS.md"


def test_document_matches_the_registry() -> None:
    """The checked-in table is the generated one (regenerate with ``kafka-harness api-table --write``)."""
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/APIVERSIONS.md is stale: run kafka-harness api-table --write docs/APIVERSIONS.md"
    )


def test_every_difference_has_a_reason() -> None:
    assert problems(rows()) == []


def test_every_handler_is_in_the_table() -> None:
    """Each registered API appears with its registered range on a listener that serves it."""
    table = {r.api_key: r for r in rows()}
    for key, handler in HANDLERS.items():
        row = table[key]
        assert (handler.min_version, handler.max_version) in (row.ref_broker, row.ref_controller), key


def test_check_flags_a_stale_document(tmp_path: Path) -> None:
    stale = tmp_path / "APIVERSIONS.md"
    stale.write_text(render().replace("| 75 | DescribeTopicPartitions", "| 75 | Renamed"), encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert main(["--check", str(DOC)]) == 0
