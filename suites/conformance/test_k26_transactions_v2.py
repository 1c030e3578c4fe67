"""Transactions v2 (KIP-890): EndTxn v5 (26), Produce v12 (0), TxnOffsetCommit v5 (28) and the
brokers' AddPartitionsToTxn v4+ (24), each at the versions the target advertises.

Rules from KIP-890 and Kafka's broker: the transaction version is decided per request version
(``TransactionVersion.transactionVersionForEndTxn``: EndTxn v5+; ``transactionVersionForAddPartitionsToTxn``:
AddPartitionsToTxn v4+; ``AddPartitionsToTxnManager``: Produce v12+ and TxnOffsetCommit v5+ add the
partition to the transaction); under version 2 every EndTxn bumps the producer epoch and answers the
producer id and epoch to use next, so a write of the ended transaction is fenced; Kafka's
``TransactionCoordinator.endTransaction`` table for retries and for ends with nothing open; and
transactional produce verification (``transaction.partition.verification.enable``, on by default):
a transactional batch for a partition its transaction has not added is refused with
INVALID_TXN_STATE up to Produce v10 and TRANSACTION_ABORTABLE from v11. Versions below keep the
version 1 rules (EndTxn v0-4: no bump).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, ops

from .coordinators import TXN_KEY, Txn, committed_after
from .expect import expect, expect_code, expect_equal
from .test_k24_transactions import consumer_view

FEATURE = "Transactions v2"
RULE = "KIP-890"
SETTLE_S = 10.0


def committed_values(router: Router, caps: Capabilities, topic: str, partition: int, end_offset: int) -> Any:
    """What a read_committed consumer delivers from ``topic``-``partition`` once the LSO reaches
    ``end_offset`` (markers are written after EndTxn is answered); at most 10 s."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        _r, part = ops.fetch(
            router, caps, topic, 0, partition=partition, isolation_level=ops.READ_COMMITTED, max_wait_ms=100
        )
        expect(part is not None, "Protocol guide, Fetch", "the partition is missing from the fetch answer")
        if int(part.last_stable_offset) >= end_offset or time.monotonic() > deadline:
            return consumer_view(part)
        time.sleep(0.1)


def placements(router: Router, topic_factory: Callable[..., str], txn: Txn) -> list[tuple[str, int]]:
    """Partitions to write to: on one broker partition 0; on a cluster one led by the transaction's
    coordinator and one led by another broker (which must ask the coordinator, KIP-890)."""
    if not router.is_cluster:
        return [(topic_factory(), 0)]
    node = router.coordinator_of(txn.tid, TXN_KEY)
    topic = topic_factory(partitions=8)
    router.refresh([topic])
    leaders = {p: router.leader_of(topic, p) for p in range(8)}
    local = [p for p, leader in leaders.items() if leader == node]
    remote = [p for p, leader in leaders.items() if leader is not None and leader != node]
    expect(bool(local and remote), RULE, f"{topic}'s leaders {leaders} around the coordinator {node}")
    return [(topic, local[0]), (topic, remote[0])]


@pytest.mark.versions("end_txn", lo=5)
def test_end_txn_v5_bumps_the_epoch_and_fences_the_ended_transaction(
    version: int, router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """EndTxn v5 answers NONE with the same producer id and the epoch raised by one; a write at the
    ended transaction's epoch is then INVALID_PRODUCER_EPOCH, and the next transaction runs at the
    new epoch."""
    txn = Txn(router, caps, unique("tx"))
    expect_code(txn.add_partitions(topic)[0], "NONE", rule=RULE)
    expect_code(txn.produce(topic, [b"first"]).error_code, "NONE", rule=RULE)
    pid, epoch = txn.pid, txn.epoch
    answer = txn.end_answer(True, version=version)
    expect_code(answer.error_code, "NONE", rule=f"{RULE} EndTxn v{version}")
    expect_equal(
        (int(answer.producer_id), int(answer.producer_epoch)), (pid, epoch + 1), RULE, "(producer id, epoch)"
    )
    expect_equal(committed_values(router, caps, topic, 0, 2), [b"first"], RULE, "read_committed values")
    zombie = txn.produce(topic, [b"zombie"], epoch=epoch)
    expect_code(zombie.error_code, "INVALID_PRODUCER_EPOCH", rule=RULE, where="a write at the ended epoch")
    txn.write(topic, [b"second"], commit=True)
    expect_equal(
        committed_values(router, caps, topic, 0, 4), [b"first", b"second"], RULE, "read_committed values"
    )


@pytest.mark.versions("end_txn", lo=5)
def test_end_txn_v5_retry_answers_the_current_epoch(
    version: int, router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """Kafka's version 2 table: an EndTxn repeated at the epoch just below the current one (a retry
    whose answer was lost) of the same result is NONE with the current producer id and epoch (once
    the markers are written; CONCURRENT_TRANSACTIONS meanwhile, retried as clients do); of
    the other result INVALID_TXN_STATE; two epochs below PRODUCER_FENCED."""
    txn = Txn(router, caps, unique("tx"))
    expect_code(txn.add_partitions(topic)[0], "NONE", rule=RULE)
    expect_code(txn.produce(topic, [b"r"]).error_code, "NONE", rule=RULE)
    old = txn.epoch
    expect_code(txn.end(True, version=version), "NONE", rule=RULE)
    deadline = time.monotonic() + SETTLE_S  # while the markers are written: CONCURRENT_TRANSACTIONS
    retry = txn.end_answer(True, epoch=old, version=version)
    while retry.error_code.name.upper() == "CONCURRENT_TRANSACTIONS" and time.monotonic() < deadline:
        time.sleep(0.05)
        retry = txn.end_answer(True, epoch=old, version=version)
    expect_code(retry.error_code, "NONE", rule=RULE, where="a retried commit")
    expect_equal(
        (int(retry.producer_id), int(retry.producer_epoch)), (txn.pid, txn.epoch), RULE, "the retry's answer"
    )
    expect_code(
        txn.end(False, epoch=old, version=version), "INVALID_TXN_STATE", rule=RULE, where="abort retry"
    )
    if old > 0:
        expect_code(txn.end(True, epoch=old - 1, version=version), "PRODUCER_FENCED", rule=RULE)


@pytest.mark.versions("end_txn", lo=5)
def test_end_txn_v5_with_nothing_open(
    version: int, router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """With no transaction open, EndTxn v5 commit is INVALID_TXN_STATE and abort bumps the epoch
    (NONE with the new epoch)."""
    txn = Txn(router, caps, unique("tx"))
    epoch = txn.epoch
    expect_code(txn.end(True, version=version), "INVALID_TXN_STATE", rule=RULE, where="commit of nothing")
    answer = txn.end_answer(False, version=version)
    expect_code(answer.error_code, "NONE", rule=RULE, where="abort of nothing")
    expect_equal(int(answer.producer_epoch), epoch + 1, RULE, "epoch after an abort of nothing")


@pytest.mark.versions("end_txn", hi=4)
def test_end_txn_before_v5_keeps_the_epoch(
    version: int, router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """EndTxn v0-4 is transaction version 0 on any broker: the epoch is not bumped, so the next
    transaction of the same producer runs at the same epoch (its AddPartitionsToTxn is retried while
    the previous markers are written, as clients do)."""
    txn = Txn(router, caps, unique("tx"))
    epoch = txn.epoch
    for value in (b"a", b"b"):
        deadline = time.monotonic() + SETTLE_S
        code = txn.add_partitions(topic)[0]
        while code.name.upper() == "CONCURRENT_TRANSACTIONS" and time.monotonic() < deadline:
            time.sleep(0.05)
            code = txn.add_partitions(topic)[0]
        expect_code(code, "NONE", rule=RULE, where=f"AddPartitionsToTxn at epoch {epoch}")
        expect_code(txn.produce(topic, [value]).error_code, "NONE", rule=RULE)
        expect_code(txn.end(True, version=version), "NONE", rule=f"{RULE} EndTxn v{version}")
        expect_equal(txn.epoch, epoch, RULE, "the producer's epoch")


@pytest.mark.requires("end_txn", min_version=5)
@pytest.mark.versions("produce", lo=12)
def test_produce_v12_adds_the_partition_to_the_transaction(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic_factory: Callable[..., str],
) -> None:
    """Produce v12+ (transaction version 2): a transactional batch for a partition the transaction has
    not added is accepted and the partition joins the transaction; its commit makes it visible."""
    txn = Txn(router, caps, unique("tx"))
    places = placements(router, topic_factory, txn)
    for topic, partition in places:
        answer = txn.produce(topic, [b"implicit"], partition, version=version)
        expect_code(
            answer.error_code, "NONE", rule=f"{RULE} Produce v{version}", where=f"partition {partition}"
        )
    expect_code(txn.end(True), "NONE", rule=RULE)
    for topic, partition in places:
        expect_equal(
            committed_values(router, caps, topic, partition, 2),
            [b"implicit"],
            RULE,
            f"read_committed values of partition {partition}",
        )


@pytest.mark.versions("produce", lo=3, hi=11)
def test_produce_to_a_partition_not_added_is_refused(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic_factory: Callable[..., str],
) -> None:
    """Produce v3-11: a transactional batch for a partition its transaction has not added is refused
    (Kafka verifies it with the coordinator): INVALID_TXN_STATE up to v10, TRANSACTION_ABORTABLE at
    v11; nothing is appended."""
    txn = Txn(router, caps, unique("tx"))
    wanted = "TRANSACTION_ABORTABLE" if version >= 11 else "INVALID_TXN_STATE"
    for topic, partition in placements(router, topic_factory, txn):
        answer = txn.produce(topic, [b"unadded"], partition, version=version)
        where = f"Produce v{version}, partition {partition}"
        expect_code(answer.error_code, wanted, rule=f"{RULE} verification", where=where)


@pytest.mark.versions("add_partitions_to_txn", lo=4)
def test_add_partitions_to_txn_batched_verify_only(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic_factory: Callable[..., str],
) -> None:
    """AddPartitionsToTxn v4+ (the brokers' batched form): ``verify_only`` answers NONE for a partition
    in the open transaction and TRANSACTION_ABORTABLE for one it has not added, and adds nothing;
    without it the partitions are added (NONE)."""
    added, other, later = topic_factory(), topic_factory(), topic_factory()
    txn = Txn(router, caps, unique("tx"))

    def call(verify_only: bool, *topics: str) -> dict[str, str]:
        answer = txn.coord.request(
            "add_partitions_to_txn",
            version,
            transactions=[
                {
                    "transactional_id": txn.tid,
                    "producer_id": txn.pid,
                    "producer_epoch": txn.epoch,
                    "verify_only": verify_only,
                    "topics": [{"name": t, "partitions": [0]} for t in topics],
                }
            ],
        )
        expect_code(answer.error_code, "NONE", rule=f"{RULE} AddPartitionsToTxn v{version}")
        return {
            str(t.name): p.partition_error_code.name.upper()
            for r in answer.results_by_transaction
            for t in r.topic_results
            for p in t.results_by_partition
        }

    expect_equal(call(False, added), {added: "NONE"}, RULE, "add")
    expect_equal(
        call(True, added, other), {added: "NONE", other: "TRANSACTION_ABORTABLE"}, RULE, "verify_only"
    )
    expect_equal(call(True, other), {other: "TRANSACTION_ABORTABLE"}, RULE, "verify_only added nothing")
    expect_equal(call(False, later), {later: "NONE"}, RULE, "add")
    txn.end(False)


@pytest.mark.versions("txn_offset_commit", lo=5)
def test_txn_offset_commit_v5_adds_the_offsets_partition(
    version: int, router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """TxnOffsetCommit v5+ needs no AddOffsetsToTxn: the group's offsets partition joins the
    transaction, and the offsets appear when it commits."""
    txn = Txn(router, caps, unique("tx"))
    node = router.coordinator_of(txn.tid, TXN_KEY)
    group = unique("g")
    for _ in range(50):  # the group's coordinator is the transaction's (one broker: any group)
        if router.coordinator_of(group) == node:
            break
        group = unique("g")
    group_wire = router.to_coordinator(group)
    staged = txn.commit_offset(group_wire, group, topic, 21, "v2", version)
    expect_code(staged, "NONE", rule=f"{RULE} TxnOffsetCommit v{version}")
    expect_code(txn.end(True), "NONE", rule=RULE)
    after = committed_after(group_wire, caps, group, topic, SETTLE_S)
    expect_equal(after, (21, "v2"), RULE, "(offset, metadata) after the commit")
