"""One short transactional list-append campaign on the reference broker (issue 21), in the default run.

The reference broker is killed for a few seconds while four processors run transactions that poll
and send to several partitions; the dependency graph (chaos.checkers.graph) and the queue checkers
judge the history. Longer campaigns and batches are CLI commands
(``kafka-harness chaos --workload txn-append --campaigns N``; figures in chaos/README.md).
"""

from __future__ import annotations

from pathlib import Path

from .conftest import valid_campaign


def test_txn_append_on_the_reference_broker_under_kill_is_valid(tmp_path: Path) -> None:
    result, history = valid_campaign(tmp_path, workload="txn-append", faults=["kill"], seed=3, rate=100)
    committed = [op for op in history.ops if op.f == "txn" and op.type == "ok"]
    assert len(committed) >= 20, "transactions committed around the kill"
    assert any(op.records and op.value["read"] for op in committed), "transactions both read and wrote"
    assert result.stats["graph_transactions"] >= len(committed) and result.stats["graph_edges"] > 0
    assert any(w["fault"] == "kill" for w in (op.value for op in history.nemesis_ops()))
