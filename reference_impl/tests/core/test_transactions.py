"""Transactions through the sans-IO broker (KIP-98 as shipped): markers, LSO, fencing, timeouts."""

from __future__ import annotations

from typing import Any

from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch, iter_records
from reference_impl.protocol.records import parse_header

from .harness import START_MS, BrokerHarness, request
from .test_data_path import create, fetch_request


def init(h: BrokerHarness, txn_id: str, timeout_ms: int = 60_000, version: int = 4) -> Any:
    return h.call_as_client(
        request(
            22,
            version,
            transactional_id=txn_id,
            transaction_timeout=timeout_ms,
            producer_id=-1,
            producer_epoch=-1,
        )
    )


def add(h: BrokerHarness, txn_id: str, pid: int, epoch: int, *keys: tuple[str, int]) -> list[int]:
    topics: dict[str, list[int]] = {}
    for t, p in keys:
        topics.setdefault(t, []).append(p)
    r = h.call(
        request(
            24,
            3,
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
        )
    )
    return [
        int(p.partition_error_code) for t in r.results_by_topic_v3_and_below for p in t.results_by_partition
    ]


def end(h: BrokerHarness, txn_id: str, pid: int, epoch: int, commit: bool) -> int:
    r = h.call(
        request(26, 3, transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit)
    )
    return int(r.error_code)


def tx_produce(
    h: BrokerHarness,
    txn_id: str | None,
    pid: int,
    epoch: int,
    seq: int,
    topic: str,
    *vals: bytes,
    transactional: bool = True,
    version: int = 9,
) -> Any:
    batch = build_batch(
        [(None, v) for v in vals],
        base_timestamp=START_MS,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=transactional,
    )
    r = h.call(
        request(
            0,
            version,
            acks=-1,
            timeout=1000,
            transactional_id=txn_id,
            topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        )
    )
    return r.responses[0].partition_responses[0]


def read(h: BrokerHarness, topic: str, isolation: int) -> tuple[list[bytes | None], Any]:
    r = h.call(fetch_request(topic, 0, 0, isolation_level=isolation))
    p = r.responses[0].partitions[0]
    data = []
    position = 0
    while position < len(p.records):
        header = parse_header(p.records, position)
        if not header.is_control:
            data += [rec.value for rec in iter_records(p.records, header)]
        position += header.size
    return data, p


def test_commit_and_abort_with_markers_lso_and_aborted_list() -> None:
    """Markers end transactions; read_committed reads below the LSO, and the aborted list tells
    the consumer which producer's records to drop (KIP-98)."""
    h = BrokerHarness()
    create(h, "t")
    r = init(h, "tx")
    pid, epoch = int(r.producer_id), int(r.producer_epoch)
    assert add(h, "tx", pid, epoch, ("t", 0)) == [0]
    assert tx_produce(h, "tx", pid, epoch, 0, "t", b"c1", b"c2").error_code == ErrorCode.none
    _, open_txn = read(h, "t", 1)
    assert open_txn.last_stable_offset == 0 and open_txn.high_watermark == 2
    assert read(h, "t", 1)[0] == []
    assert end(h, "tx", pid, epoch, True) == ErrorCode.none
    assert end(h, "tx", pid, epoch, True) == ErrorCode.none  # a retry of a completed commit
    assert add(h, "tx", pid, epoch, ("t", 0)) == [0]
    tx_produce(h, "tx", pid, epoch, 2, "t", b"a1")
    assert end(h, "tx", pid, epoch, False) == ErrorCode.none
    everything, committed = read(h, "t", 1)
    assert committed.last_stable_offset == committed.high_watermark == 5
    assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(pid, 3)]
    assert everything == [b"c1", b"c2", b"a1"]  # the consumer drops a1 using the aborted list
    assert read(h, "t", 0)[1].aborted_transactions is None


def test_zombie_fencing_aborts_the_open_transaction() -> None:
    """A second InitProducerId fences the first producer: its open transaction is aborted with a
    bumped epoch, and its later writes are INVALID_PRODUCER_EPOCH (KIP-98 zombie fencing)."""
    h = BrokerHarness()
    create(h, "t")
    first = init(h, "tx")
    pid, epoch = int(first.producer_id), int(first.producer_epoch)
    add(h, "tx", pid, epoch, ("t", 0))
    tx_produce(h, "tx", pid, epoch, 0, "t", b"zombie")
    assert int(init(h, "tx").error_code) == ErrorCode.concurrent_transactions
    again = init(h, "tx")
    assert again.error_code == ErrorCode.none and int(again.producer_epoch) > epoch
    assert tx_produce(h, "tx", pid, epoch, 1, "t", b"late").error_code in (
        ErrorCode.invalid_producer_epoch,
        ErrorCode.invalid_txn_state,
    )
    assert end(h, "tx", pid, epoch, True) == ErrorCode.producer_fenced  # v2+: KIP-588
    committed, meta = read(h, "t", 1)
    assert b"zombie" not in committed or [a.first_offset for a in meta.aborted_transactions] == [0]


def test_unverified_partitions_and_bad_state() -> None:
    """KIP-890: a transactional batch for a partition not added is refused; EndTxn without a
    transaction is INVALID_TXN_STATE; an unknown mapping is INVALID_PRODUCER_ID_MAPPING."""
    h = BrokerHarness()
    create(h, "t")
    r = init(h, "tx")
    pid, epoch = int(r.producer_id), int(r.producer_epoch)
    assert tx_produce(h, "tx", pid, epoch, 0, "t", b"x").error_code == ErrorCode.invalid_txn_state
    assert end(h, "tx", pid, epoch, True) == ErrorCode.invalid_txn_state
    assert end(h, "tx", pid + 1, epoch, True) == ErrorCode.invalid_producer_id_mapping
    assert add(h, "tx", pid, epoch, ("nope", 0)) == [ErrorCode.unknown_topic_or_partition]
    assert int(init(h, "tx", timeout_ms=10**9).error_code) == ErrorCode.invalid_transaction_timeout


def test_timed_out_transactions_are_aborted_and_state_survives_restart() -> None:
    """transaction.timeout.ms: the coordinator aborts a stale transaction with an epoch bump;
    the coordinator's state is replayed from __transaction_state after a restart."""
    h = BrokerHarness("transaction.abort.timed.out.transaction.cleanup.interval.ms=100")
    create(h, "t")
    r = init(h, "tx", timeout_ms=1000)
    pid, epoch = int(r.producer_id), int(r.producer_epoch)
    add(h, "tx", pid, epoch, ("t", 0))
    tx_produce(h, "tx", pid, epoch, 0, "t", b"stale")
    h.advance(1200)
    meta = h.broker.txn_coordinator.txns["tx"]
    assert meta.state.label == "CompleteAbort" and meta.producer_epoch == epoch + 1
    _, p = read(h, "t", 1)
    assert p.last_stable_offset == p.high_watermark and [a.producer_id for a in p.aborted_transactions] == [
        pid
    ]
    h.broker.shutdown(h.now_ms)
    again = BrokerHarness(store=h.store, now_ms=h.now_ms + 1)
    replayed = again.broker.txn_coordinator.txns["tx"]
    assert (replayed.state, replayed.producer_id, replayed.producer_epoch) == (meta.state, pid, epoch + 1)
    listed = again.call(
        request(66, 1, state_filters=["CompleteAbort", "Bogus"], producer_id_filters=[], duration_filter=-1)
    )
    assert [t.transactional_id for t in listed.transaction_states] == ["tx"]
    assert list(listed.unknown_state_filters) == ["Bogus"]
