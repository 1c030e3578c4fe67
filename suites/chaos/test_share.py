"""One short share-group campaign (KIP-932, issue 19) on the reference broker, in the default run.

Four share consumers of one group take records through ShareGroupHeartbeat, ShareFetch and
ShareAcknowledge while the group's coordinator (the one broker here) is cut off for a few seconds:
locks run out, consumers reconnect and reopen their share sessions, records come back with their
delivery counts raised. The share checker (chaos.checkers.share) judges the history. Kills are left
to the CLI campaigns (``kafka-harness chaos --workload share --nemesis kill,partition-coordinator``):
the reference broker keeps share-partition state in memory only until the share-state APIs (83-87)
land, so a killed leader's successor delivers accepted records again (figures in chaos/README.md).
"""

from __future__ import annotations

from pathlib import Path

from chaos.checkers import CheckResult

from .conftest import valid_campaign


def _no_delivery(result: CheckResult) -> str | None:
    return None if result.stats.get("share_deliveries") else "no share consumer was given a record"


def test_share_group_on_the_reference_broker_under_coordinator_isolation_is_valid(tmp_path: Path) -> None:
    result, history = valid_campaign(
        tmp_path, workload="share", faults=["partition-coordinator"], seed=5, rate=200, unjudged=_no_delivery
    )
    stats = result.stats
    assert stats["share_ack_accept_ok"] > 100, stats
    assert stats.get("share_ack_release_ok", 0) > 0 and stats.get("share_ack_reject_ok", 0) > 0, stats
    assert stats["share_redeliveries"] > 0, "released records came back"
    ends = [op.value for op in history.ops if op.f == "share-end" and op.type == "ok"]
    assert ends and ends[0]["drained"], "the drain finished"
    isolated = [op.value for op in history.nemesis_ops() if op.f == "start"]
    assert isolated and isolated[0]["fault"] == "partition-coordinator" and isolated[0]["nodes"] == [1]
