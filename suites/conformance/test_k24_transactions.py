"""Transactions: InitProducerId (22) with a transactional id, AddPartitionsToTxn (24),
AddOffsetsToTxn (25), EndTxn (26), TxnOffsetCommit (28), and what read_committed readers see.

Rules from KIP-98 (transactions: the last stable offset (LSO) bounds what read_committed fetches
return; Fetch v4+ reports aborted_transactions so the reader drops aborted batches; a control
batch marks the end of each transaction; a new InitProducerId for the same transactional id
bumps the epoch and fences the old producer), KIP-360/KIP-588 (PRODUCER_FENCED and
INVALID_PRODUCER_EPOCH), KIP-447 (offsets committed in a transaction become visible at commit;
require_stable reads UNSTABLE_OFFSET_COMMIT while they are pending) and seed D1-M37 (with
transactions, consumers read up to the LSO).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, ops
from reference_impl.protocol.record_set import control_record_type

from .coordinators import TXN_KEY, Txn, committed_after
from .expect import expect, expect_code, expect_equal

FEATURE = "Transactions"
FENCED = ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")


def consumer_view(part: Any) -> list[bytes | None]:
    """The values a read_committed consumer delivers from one fetch answer (KIP-98 reader rule):
    a transactional batch of a producer listed in aborted_transactions (from its first_offset on)
    is dropped until that producer's abort marker; control batches are never delivered."""
    aborted = sorted((int(a.first_offset), int(a.producer_id)) for a in (part.aborted_transactions or ()))
    active: set[int] = set()
    out: list[bytes | None] = []
    for header, records in ops.batches(part):
        while aborted and aborted[0][0] <= header.base_offset + header.last_offset_delta:
            active.add(aborted.pop(0)[1])
        if header.is_control:
            if records and control_record_type(records[0]) == 0:
                active.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in active:
            continue
        out.extend(r.value for r in records)
    return out


def read(wire: ops.Conn, caps: Capabilities, topic: str, isolation: int, version: int | None = None) -> Any:
    _r, part = ops.fetch(wire, caps, topic, 0, isolation_level=isolation, max_wait_ms=100, version=version)
    expect(part is not None, "Protocol guide, Fetch", "the partition is missing from the fetch answer")
    return part


def settle(wire: ops.Conn, caps: Capabilities, topic: str, end_offset: int) -> Any:
    """Read read_committed until the LSO reaches ``end_offset`` (the markers are written after EndTxn
    is answered on some brokers); at most 10 s."""
    deadline = time.monotonic() + 10
    part = read(wire, caps, topic, ops.READ_COMMITTED)
    while int(part.last_stable_offset) < end_offset and time.monotonic() < deadline:
        time.sleep(0.1)
        part = read(wire, caps, topic, ops.READ_COMMITTED)
    return part


@pytest.mark.requires("find_coordinator", min_version=1)
def test_transaction_coordinator_is_found(
    wire: WireClient, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-98 FindCoordinator key_type 1: a transactional id has a coordinator among the brokers."""
    tid = unique("tx")
    deadline = time.monotonic() + 30
    code, node, _h, _p = ops.find_coordinator(wire, caps, tid, TXN_KEY)
    while code.value != 0 and time.monotonic() < deadline:
        time.sleep(0.2)
        code, node, _h, _p = ops.find_coordinator(wire, caps, tid, TXN_KEY)
    expect_code(code, "NONE", rule="KIP-98 FindCoordinator")
    brokers = {int(b.node_id) for b in ops.metadata(wire, caps, []).brokers}
    expect(node in brokers, "KIP-98 FindCoordinator", f"coordinator {node} is not a broker {sorted(brokers)}")


@pytest.mark.versions("init_producer_id")
def test_init_again_bumps_the_epoch_and_fences_the_old_one(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """KIP-98: InitProducerId for a transactional id that has one returns the same producer id with
    the epoch raised by one; the old epoch is fenced (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH)."""
    txn = Txn(router, caps, unique("tx"))
    old_epoch = txn.epoch
    pid, epoch = txn.init(version)
    expect_equal((pid, epoch), (txn.pid, old_epoch + 1), "KIP-98", "(producer id, epoch) after a second init")
    codes = txn.add_partitions(topic)
    expect_code(codes[0], *FENCED, rule="KIP-98 fencing", where="AddPartitionsToTxn with the old epoch")


@pytest.mark.versions("add_partitions_to_txn", hi=3)
def test_add_partitions_answers_per_partition(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic_factory: Callable[..., str],
) -> None:
    """KIP-98 AddPartitionsToTxn: existing partitions are added (NONE for each); a partition the
    topic does not have is UNKNOWN_TOPIC_OR_PARTITION and then nothing of that request is added
    (the others get OPERATION_NOT_ATTEMPTED)."""
    topic = topic_factory(partitions=2)
    txn = Txn(router, caps, unique("tx"))
    expect_equal(
        {p: c.name for p, c in txn.add_partitions(topic, (0, 1), version).items()},
        {0: "none", 1: "none"},
        "KIP-98 AddPartitionsToTxn",
        "per-partition errors",
    )
    mixed = txn.add_partitions(topic, (0, 9), version)
    expect_code(mixed[9], "UNKNOWN_TOPIC_OR_PARTITION", rule="KIP-98 AddPartitionsToTxn")
    expect_code(mixed[0], "OPERATION_NOT_ATTEMPTED", rule="KIP-98 AddPartitionsToTxn")
    txn.end(False)


@pytest.mark.requires("end_txn")
def test_open_transaction_is_hidden_below_the_lso(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-98 (LSO) and seed D1-M37: while a transaction is open, read_committed fetches stop at the
    last stable offset (the transaction's first offset), ListOffsets latest for read_committed
    answers the LSO, and read_uncommitted sees the records up to the high watermark."""
    reader = router
    expect_code(ops.produce_values(reader, caps, topic, [b"before"]).error_code, "NONE", rule="setup")
    txn = Txn(router, caps, unique("tx"))
    expect_code(txn.add_partitions(topic)[0], "NONE", rule="KIP-98")
    expect_code(txn.produce(topic, [b"open-1", b"open-2"]).error_code, "NONE", rule="KIP-98")
    committed = read(reader, caps, topic, ops.READ_COMMITTED)
    expect_equal(
        (int(committed.high_watermark), int(committed.last_stable_offset)), (3, 1), "KIP-98 LSO", "(HW, LSO)"
    )
    expect_equal(consumer_view(committed), [b"before"], "KIP-98 LSO", "read_committed values")
    if caps.supports("list_offsets", 2):
        latest = ops.list_offset(
            reader, caps, topic, ops.LATEST_TIMESTAMP, isolation_level=ops.READ_COMMITTED
        )
        expect_equal(int(latest.offset), 1, "KIP-98 LSO", "ListOffsets latest (read_committed)")
    uncommitted = read(reader, caps, topic, ops.READ_UNCOMMITTED)
    expect_equal(
        [r.value for r in ops.data_records(uncommitted)],
        [b"before", b"open-1", b"open-2"],
        "KIP-98",
        "read_uncommitted values",
    )
    txn.end(False)


@pytest.mark.versions("fetch", lo=4)
def test_read_committed_never_delivers_aborted_records(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """KIP-98: after an abort, a read_committed fetch (v4+) reports the aborted transaction in
    aborted_transactions (producer id, first offset) so that the consumer drops its records; what
    a read_committed consumer delivers holds the committed records and none of the aborted ones."""
    reader = router
    txn = Txn(router, caps, unique("tx"))
    txn.write(topic, [b"aborted-1", b"aborted-2"], commit=False)
    txn.write(topic, [b"committed"], commit=True)
    part = settle(reader, caps, topic, 5)  # 2 aborted + marker + 1 committed + marker
    part = read(reader, caps, topic, ops.READ_COMMITTED, version)
    expect_equal(consumer_view(part), [b"committed"], "KIP-98 read_committed", "values a consumer delivers")
    listed = [(int(a.producer_id), int(a.first_offset)) for a in part.aborted_transactions or ()]
    expect_equal(listed, [(txn.pid, 0)], "KIP-98 read_committed", "aborted_transactions")


@pytest.mark.versions("end_txn")
def test_commit_makes_records_visible_after_a_marker(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """KIP-98: EndTxn(commit) writes a COMMIT control batch after the transaction's records; the LSO
    moves past it and read_committed readers see the records."""
    reader = router
    txn = Txn(router, caps, unique("tx"))
    expect_code(txn.add_partitions(topic)[0], "NONE", rule="KIP-98")
    expect_code(txn.produce(topic, [b"c1", b"c2"]).error_code, "NONE", rule="KIP-98")
    expect_code(txn.end(True, version=version), "NONE", rule="KIP-98 EndTxn")
    part = settle(reader, caps, topic, 3)
    expect_equal(int(part.last_stable_offset), 3, "KIP-98", "LSO after the commit marker")
    expect_equal(consumer_view(part), [b"c1", b"c2"], "KIP-98", "read_committed values")
    markers = [
        (h.base_offset, control_record_type(recs[0]))
        for h, recs in ops.batches(part)
        if h.is_control and recs
    ]
    expect_equal(markers, [(2, 1)], "KIP-98 control batch", "(offset, type) of the markers (1 = COMMIT)")


@pytest.mark.requires("end_txn")
def test_end_txn_with_an_old_epoch_is_fenced(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-98 / KIP-588: EndTxn from an epoch older than the transactional id's current one is
    answered PRODUCER_FENCED (INVALID_PRODUCER_EPOCH on older versions), on the same connection."""
    txn = Txn(router, caps, unique("tx"))
    stale = txn.epoch
    txn.pid, txn.epoch = txn.init()
    expect_code(txn.end(True, epoch=stale), *FENCED, rule="KIP-588")


@pytest.mark.requires("txn_offset_commit")
def test_offsets_committed_in_a_transaction_appear_at_commit(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-98 / KIP-447: AddOffsetsToTxn then TxnOffsetCommit stage offsets that OffsetFetch does not
    show as committed until EndTxn(commit); then they appear with their metadata."""
    group = unique("g")
    group_wire = router.to_coordinator(group)
    txn = Txn(router, caps, unique("tx"))
    answer = txn.coord.request(
        "add_offsets_to_txn",
        caps.best("add_offsets_to_txn"),
        transactional_id=txn.tid,
        producer_id=txn.pid,
        producer_epoch=txn.epoch,
        group_id=group,
    )
    expect_code(answer.error_code, "NONE", rule="KIP-98 AddOffsetsToTxn")
    staged = txn.commit_offset(group_wire, group, topic, 33, "tx", caps.best("txn_offset_commit"))
    expect_code(staged, "NONE", rule="KIP-98 TxnOffsetCommit")
    _e, before = ops.fetch_offsets(group_wire, caps, {group: [(topic, 0)]})[group]
    expect_equal(before[(topic, 0)][1], -1, "KIP-98", "committed offset before EndTxn")
    expect_code(txn.end(True), "NONE", rule="KIP-98 EndTxn")
    after = committed_after(group_wire, caps, group, topic, 10)
    expect_equal(after, (33, "tx"), "KIP-447", "(offset, metadata) after the commit")
