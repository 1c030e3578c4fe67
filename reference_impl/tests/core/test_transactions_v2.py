"""Transactions v2 (KIP-890) through the sans-IO broker: the epoch bumped on every end, partitions
added by Produce v12 and TxnOffsetCommit v5, verification codes per request version, the brokers'
AddPartitionsToTxn v4+, and late markers that can never end a later transaction."""

from __future__ import annotations

from reference_impl.core.mutants import LATE_MARKER_APPLIES
from reference_impl.core.txn.state import MAX_EPOCH
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request
from .test_data_path import create
from .test_transactions import add, init
from .txn_v2_driver import committed_view, create_topic, end_v, marker, produce_v, start


def test_end_txn_v5_bumps_the_epoch_and_fences_the_ended_transaction() -> None:
    """EndTxn v5 answers the producer id and the bumped epoch; the markers carry it, so a write at
    the old epoch is INVALID_PRODUCER_EPOCH; the next transaction runs at the new epoch."""
    h = BrokerHarness()
    pid, epoch = start(h, "tx", "t")
    assert produce_v(h, "tx", pid, epoch, 0, "t", [b"a"], 12).error_code == ErrorCode.none
    r = end_v(h, "tx", pid, epoch, True)
    assert (r.error_code, int(r.producer_id), int(r.producer_epoch)) == (ErrorCode.none, pid, epoch + 1)
    assert (
        produce_v(h, "tx", pid, epoch, 1, "t", [b"zombie"], 12).error_code == ErrorCode.invalid_producer_epoch
    )
    assert produce_v(h, "tx", pid, epoch + 1, 0, "t", [b"b"], 12).error_code == ErrorCode.none
    r = end_v(h, "tx", pid, epoch + 1, True)
    assert int(r.producer_epoch) == epoch + 2
    assert committed_view(h, "t")[0] == [b"a", b"b"]


def test_end_txn_v5_retries_and_the_empty_table() -> None:
    """Kafka's table for transaction version 2: a retry (the epoch just below) of the same result is
    NONE with the current id and epoch; the other result is INVALID_TXN_STATE; commit with nothing
    open is INVALID_TXN_STATE, abort with nothing open bumps the epoch; an older epoch is fenced."""
    h = BrokerHarness()
    pid, epoch = start(h, "tx", "t")
    assert int(end_v(h, "tx", pid, epoch, True).error_code) == ErrorCode.invalid_txn_state
    r = end_v(h, "tx", pid, epoch, False)
    assert (r.error_code, int(r.producer_epoch)) == (ErrorCode.none, epoch + 1)
    produce_v(h, "tx", pid, epoch + 1, 0, "t", [b"x"], 12)
    assert int(end_v(h, "tx", pid, epoch + 1, True).producer_epoch) == epoch + 2
    retry = end_v(h, "tx", pid, epoch + 1, True)
    assert (retry.error_code, int(retry.producer_id), int(retry.producer_epoch)) == (
        ErrorCode.none,
        pid,
        epoch + 2,
    )
    assert int(end_v(h, "tx", pid, epoch + 1, False).error_code) == ErrorCode.invalid_txn_state
    assert int(end_v(h, "tx", pid, epoch, True).error_code) == ErrorCode.producer_fenced


def test_an_exhausted_epoch_hands_over_a_new_producer_id() -> None:
    """Kafka's ``isProducerEpochExhausted``: an end at epoch 32766 answers a new producer id at epoch
    0; the markers went out at 32767 under the old id; a retry of the old request answers the new id."""
    h = BrokerHarness()
    pid, _epoch = start(h, "tx", "t")
    meta = h.broker.txn_coordinator.txns["tx"]
    meta.producer_epoch = MAX_EPOCH - 1
    assert produce_v(h, "tx", pid, MAX_EPOCH - 1, 0, "t", [b"last"], 12).error_code == ErrorCode.none
    r = end_v(h, "tx", pid, MAX_EPOCH - 1, True)
    new_pid = int(r.producer_id)
    assert r.error_code == ErrorCode.none and new_pid != pid and int(r.producer_epoch) == 0
    retry = end_v(h, "tx", pid, MAX_EPOCH - 1, True)
    assert (retry.error_code, int(retry.producer_id), int(retry.producer_epoch)) == (
        ErrorCode.none,
        new_pid,
        0,
    )
    assert produce_v(h, "tx", new_pid, 0, 0, "t", [b"next"], 12).error_code == ErrorCode.none
    assert end_v(h, "tx", new_pid, 0, True).error_code == ErrorCode.none
    assert committed_view(h, "t")[0] == [b"last", b"next"]


def test_end_txn_v4_keeps_version_1_rules() -> None:
    """EndTxn v0-4 is transaction version 0 whatever came before: no bump, the same epoch goes on."""
    h = BrokerHarness()
    pid, epoch = start(h, "tx", "t")
    assert add(h, "tx", pid, epoch, ("t", 0)) == [0]
    produce_v(h, "tx", pid, epoch, 0, "t", [b"a"], 9)
    assert int(end_v(h, "tx", pid, epoch, True, version=4).error_code) == ErrorCode.none
    assert add(h, "tx", pid, epoch, ("t", 0)) == [0]
    assert produce_v(h, "tx", pid, epoch, 1, "t", [b"b"], 9).error_code == ErrorCode.none
    assert int(end_v(h, "tx", pid, epoch, True, version=4).error_code) == ErrorCode.none
    assert committed_view(h, "t")[0] == [b"a", b"b"]


def test_verification_codes_by_produce_version() -> None:
    """A transactional batch for a partition its transaction did not add: INVALID_TXN_STATE up to
    v10, TRANSACTION_ABORTABLE at v11, and at v12 the broker adds the partition (KIP-890)."""
    h = BrokerHarness()
    pid, epoch = start(h, "tx", "t")
    for version, code in ((3, ErrorCode.invalid_txn_state), (10, ErrorCode.invalid_txn_state)):
        assert produce_v(h, "tx", pid, epoch, 0, "t", [b"v"], version).error_code == code
    assert produce_v(h, "tx", pid, epoch, 0, "t", [b"v"], 11).error_code == ErrorCode.transaction_abortable
    assert produce_v(h, "tx", pid, epoch, 0, "t", [b"v"], 12).error_code == ErrorCode.none
    assert h.broker.txn_coordinator.txns["tx"].partitions == {("t", 0)}
    assert produce_v(h, "tx", pid, epoch, 1, "t", [b"w"], 9).error_code == ErrorCode.none  # now added
    assert (
        produce_v(h, "tx", pid, epoch + 3, 0, "t", [b"f"], 12).error_code == ErrorCode.invalid_producer_epoch
    )


def test_a_late_marker_never_ends_the_next_transaction() -> None:
    """KIP-890's fencing: transaction 1 ended at epoch E (its markers at E+1); transaction 2 writes at
    E+1. A late copy of transaction 1's marker (E+1) is INVALID_PRODUCER_EPOCH and transaction 2 stays
    open (hidden below the LSO); its own end commits it. With the seeded bug mode
    ``late-marker-applies`` the late marker ends transaction 2 and its records show uncommitted."""
    for mutant in (None, LATE_MARKER_APPLIES):
        h = BrokerHarness()
        pid, epoch = start(h, "tx")
        create_topic(h, "t", mutant)
        produce_v(h, "tx", pid, epoch, 0, "t", [b"one"], 12)
        assert int(end_v(h, "tx", pid, epoch, True).producer_epoch) == epoch + 1
        produce_v(h, "tx", pid, epoch + 1, 0, "t", [b"two"], 12)
        late = marker(h, pid, epoch + 1, True, "t")
        visible, _lso = committed_view(h, "t")
        if mutant is None:
            assert late == ErrorCode.invalid_producer_epoch
            assert visible == [b"one"]
            assert end_v(h, "tx", pid, epoch + 1, True).error_code == ErrorCode.none
            assert committed_view(h, "t")[0] == [b"one", b"two"]
        else:
            assert late == ErrorCode.none and visible == [b"one", b"two"]  # the bug: committed by nobody


def test_add_partitions_to_txn_v4_verify_only_and_add() -> None:
    """The brokers' batched AddPartitionsToTxn: verify_only answers NONE for a partition in the open
    transaction and TRANSACTION_ABORTABLE otherwise; without it the partitions are added (v5)."""
    h = BrokerHarness()
    pid, epoch = start(h, "tx", "t", "u")

    def call(version: int, verify_only: bool, *topics: str) -> tuple[int, dict[str, int]]:
        r = h.call(
            request(
                24,
                version,
                transactions=[
                    {
                        "transactional_id": "tx",
                        "producer_id": pid,
                        "producer_epoch": epoch,
                        "verify_only": verify_only,
                        "topics": [{"name": t, "partitions": [0]} for t in topics],
                    }
                ],
            )
        )
        codes = {
            str(t.name): int(p.partition_error_code)
            for res in r.results_by_transaction
            for t in res.topic_results
            for p in t.results_by_partition
        }
        return int(r.error_code), codes

    assert call(5, False, "t") == (0, {"t": 0})
    assert call(4, True, "t", "u") == (0, {"t": 0, "u": ErrorCode.transaction_abortable})
    assert call(4, True, "nope") == (0, {"nope": ErrorCode.unknown_topic_or_partition})


def test_txn_offset_commit_v5_adds_the_offsets_partition() -> None:
    """TxnOffsetCommit v5 needs no AddOffsetsToTxn (the broker adds the group's partition); v3 without
    it is INVALID_TXN_STATE, v4 TRANSACTION_ABORTABLE."""
    h = BrokerHarness()
    pid, epoch = start(h, "tx", "t")
    h.call(request(10, 4, key_type=0, coordinator_keys=["g"]))  # as clients do: the group's coordinator

    def commit(version: int) -> int:
        r = h.call(
            request(
                28,
                version,
                transactional_id="tx",
                group_id="g",
                producer_id=pid,
                producer_epoch=epoch,
                topics=[
                    {
                        "name": "t",
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 5, "committed_metadata": None}
                        ],
                    }
                ],
            )
        )
        return int(r.topics[0].partitions[0].error_code)

    assert commit(3) == ErrorCode.invalid_txn_state
    assert commit(4) == ErrorCode.transaction_abortable
    assert commit(5) == ErrorCode.none
    assert end_v(h, "tx", pid, epoch, True).error_code == ErrorCode.none


def test_add_partitions_to_txn_v4_with_no_transaction_is_answered() -> None:
    """An AddPartitionsToTxn v4+ naming no transaction is answered at once (empty results)."""
    h = BrokerHarness()
    r = h.call(request(24, 5, transactions=[]))
    assert int(r.error_code) == ErrorCode.none and r.results_by_transaction == ()


def test_a_timed_out_version_2_transaction_is_aborted_with_its_markers() -> None:
    """A transaction opened by Produce v12 and left open past its timeout is aborted with a bumped
    epoch: its marker is written (the LSO passes it) and the records are not delivered; at the
    highest epoch the abort keeps the epoch and writes a version 0 marker, which the partition takes."""
    for first_epoch in (None, MAX_EPOCH - 1):
        h = BrokerHarness()
        r = init(h, "tx", timeout_ms=1_000)
        pid = int(r.producer_id)
        create(h, "t")
        if first_epoch is not None:
            h.broker.txn_coordinator.txns["tx"].producer_epoch = first_epoch
        epoch = h.broker.txn_coordinator.txns["tx"].producer_epoch
        assert produce_v(h, "tx", pid, epoch, 0, "t", [b"open"], 12).error_code == ErrorCode.none
        h.advance(5_000)
        h.broker.txn_coordinator.expire_timed_out(h.now_ms)
        h.advance(1_000)
        visible, lso = committed_view(h, "t")
        assert (visible, lso) == ([], 2), first_epoch
