"""Offsets committed inside a transaction (the coordinator side of TxnOffsetCommit, KIP-98).

They stay invisible until the transaction's marker reaches the group's shard
of ``__consumer_offsets``; a COMMIT applies them, an ABORT drops them, and a
fetch with ``require_stable`` is told UNSTABLE_OFFSET_COMMIT meanwhile. The
log replays the same outcome after a restart.
"""

from __future__ import annotations

from reference_impl.core.group.coordinator import OffsetCommitItem
from reference_impl.protocol.errors import ErrorCode

from ..core.harness import BrokerHarness, request
from ..core.test_transactions import end, init
from .helpers import GROUP_CONFIGS, commit, committed, fetch, harness, topic


def _txn_commit(
    h: BrokerHarness, txn_id: str, group: str, offset: int, generation: int = -1, member_id: str = ""
) -> tuple[int, int, dict[tuple[str, int], ErrorCode]]:
    r = init(h, txn_id)
    pid, epoch = int(r.producer_id), int(r.producer_epoch)
    added = h.call(
        request(25, 3, transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, group_id=group)
    )
    assert added.error_code == ErrorCode.none
    codes: dict[tuple[str, int], ErrorCode] = {}
    coordinator = h.broker.group_coordinator
    with coordinator.operation(h.now_ms):
        coordinator.commit_transactional_offsets(
            group,
            pid,
            epoch,
            generation,
            member_id,
            None,
            [OffsetCommitItem("t", 0, offset, -1, "tx")],
            codes.update,
            h.now_ms,
        )
    return pid, epoch, codes


def test_committed_transaction_makes_its_offsets_visible() -> None:
    h = harness()
    topic(h, "t", 1)
    commit(h, "g", {("t", 0): 1})
    pid, epoch, codes = _txn_commit(h, "tx-1", "g", 5)
    assert codes == {("t", 0): ErrorCode.none}
    assert committed(h, "g", [("t", 0)]) == {("t", 0): 1}  # pending: the old offset still shows
    stable = fetch(h, "g", [("t", 0)], stable=True).topics[0].partitions[0]
    assert (stable.error_code, stable.committed_offset) == (ErrorCode.unstable_offset_commit, -1)
    assert end(h, "tx-1", pid, epoch, True) == ErrorCode.none
    assert committed(h, "g", [("t", 0)]) == {("t", 0): 5}
    assert fetch(h, "g", [("t", 0)], stable=True).topics[0].partitions[0].error_code == ErrorCode.none


def test_aborted_transaction_leaves_the_previous_offset() -> None:
    h = harness()
    topic(h, "t", 1)
    commit(h, "g", {("t", 0): 1})
    pid, epoch, _codes = _txn_commit(h, "tx-2", "g", 9)
    assert end(h, "tx-2", pid, epoch, False) == ErrorCode.none
    assert committed(h, "g", [("t", 0)]) == {("t", 0): 1}
    assert fetch(h, "g", [("t", 0)], stable=True).topics[0].partitions[0].error_code == ErrorCode.none


def test_a_generation_for_an_unknown_group_is_illegal() -> None:
    h = harness()
    topic(h, "t", 1)
    _pid, _epoch, codes = _txn_commit(h, "tx-3", "nobody", 2, generation=4)
    assert codes == {("t", 0): ErrorCode.illegal_generation}


def test_transaction_outcomes_replay_after_a_restart() -> None:
    h = harness()
    topic(h, "t", 1)
    pid, epoch, _codes = _txn_commit(h, "tx-done", "done", 7)
    assert end(h, "tx-done", pid, epoch, True) == ErrorCode.none
    open_pid, open_epoch, _codes = _txn_commit(h, "tx-open", "open", 3)
    restarted = BrokerHarness(*GROUP_CONFIGS, store=h.store, now_ms=h.now_ms + 1)
    assert committed(restarted, "done", [("t", 0)]) == {("t", 0): 7}
    pending = fetch(restarted, "open", [("t", 0)], stable=True).topics[0].partitions[0]
    assert pending.error_code == ErrorCode.unstable_offset_commit
    assert end(restarted, "tx-open", open_pid, open_epoch, True) == ErrorCode.none
    assert committed(restarted, "open", [("t", 0)]) == {("t", 0): 3}


def test_a_consumer_protocol_member_commits_at_its_member_epoch() -> None:
    """KIP-848 (``ConsumerGroup.validateOffsetCommit``, transactional): the member at its epoch is
    accepted, another epoch is STALE_MEMBER_EPOCH, a stranger UNKNOWN_MEMBER_ID."""
    h = harness()
    topic(h, "t", 1)
    joined = h.call(
        request(
            68,
            1,
            group_id="cg",
            member_id="a",
            member_epoch=0,
            rebalance_timeout=30_000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
    )
    epoch = int(joined.member_epoch)
    assert _txn_commit(h, "tx-4", "cg", 3, epoch, "a")[2] == {("t", 0): ErrorCode.none}
    assert _txn_commit(h, "tx-5", "cg", 3, epoch + 1, "a")[2] == {("t", 0): ErrorCode.stale_member_epoch}
    assert _txn_commit(h, "tx-6", "cg", 3, epoch, "b")[2] == {("t", 0): ErrorCode.unknown_member_id}
