"""Driving one transactional producer of transaction version 2 through the sans-IO broker (EndTxn v5,
Produce v12, WriteTxnMarkers v2 as a coordinator sends them) and reading what a read_committed
consumer delivers: shared by the transactions v2 tests and the property check
(``reference_impl/acceptance/property/txn_v2.py``)."""

from __future__ import annotations

from typing import Any

from reference_impl.core.mutants import MUTANT_CONFIG
from reference_impl.protocol.record_set import control_record_type, iter_records
from reference_impl.protocol.records import parse_header

from .harness import BrokerHarness, request
from .test_data_path import create, fetch_request
from .test_transactions import init, tx_produce


def end_v(h: BrokerHarness, tid: str, pid: int, epoch: int, commit: bool, version: int = 5) -> Any:
    return h.call(
        request(26, version, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)
    )


def produce_v(
    h: BrokerHarness, tid: str, pid: int, epoch: int, seq: int, topic: str, values: list[bytes], version: int
) -> Any:
    """A transactional batch at Produce ``version`` to partition 0 of ``topic``; its partition answer."""
    return tx_produce(h, tid, pid, epoch, seq, topic, *values, version=version)


def marker(h: BrokerHarness, pid: int, epoch: int, commit: bool, topic: str, version: int = 2) -> int:
    """A WriteTxnMarkers (as a coordinator sends) for partition 0 of ``topic``, transaction version 2."""
    fields: dict[str, Any] = {
        "producer_id": pid,
        "producer_epoch": epoch,
        "transaction_result": commit,
        "topics": [{"name": topic, "partition_indexes": [0]}],
        "coordinator_epoch": 0,
    }
    if version >= 2:
        fields["transaction_version"] = 2
    r = h.call(request(27, version, markers=[fields]))
    return int(r.markers[0].topics[0].partitions[0].error_code)


def committed_view(h: BrokerHarness, topic: str) -> tuple[list[bytes | None], int]:
    """What a read_committed consumer delivers, and the LSO. KIP-98's reader rule: a producer's
    transactional records from an aborted transaction's first offset up to that producer's next ABORT
    marker are dropped; control batches are never delivered."""
    r = h.call(fetch_request(topic, 0, 0, isolation_level=1))
    p = r.responses[0].partitions[0]
    batches = []
    position = 0
    while position < len(p.records):
        header = parse_header(p.records, position)
        position += header.size
        batches.append((header, list(iter_records(p.records, header))))
    aborts = [
        (hd.producer_id, hd.base_offset)
        for hd, recs in batches
        if hd.is_control and recs and control_record_type(recs[0]) == 0
    ]
    dropped: list[tuple[int, int, int]] = []  # (producer id, first offset, the ABORT marker's offset)
    for a in p.aborted_transactions or ():
        pid, first = int(a.producer_id), int(a.first_offset)
        end = min((offset for who, offset in aborts if who == pid and offset >= first), default=1 << 62)
        dropped.append((pid, first, end))
    values: list[bytes | None] = []
    for hd, recs in batches:
        if hd.is_control or (
            hd.is_transactional
            and any(pid == hd.producer_id and first <= hd.base_offset < end for pid, first, end in dropped)
        ):
            continue
        values += [rec.value for rec in recs]
    return values, int(p.last_stable_offset)


def create_topic(h: BrokerHarness, name: str, mutant: str | None) -> None:
    """A one-partition topic, with the seeded bug mode ``mutant`` on (``reference.mutant``)."""
    if mutant is None:
        create(h, name)
    else:
        assert MUTANT_CONFIG == "reference.mutant"
        create(h, name, reference_mutant=mutant)


def start(h: BrokerHarness, tid: str = "tx", *topics: str) -> tuple[int, int]:
    for t in topics:
        create(h, t)
    r = init(h, tid)
    return int(r.producer_id), int(r.producer_epoch)
