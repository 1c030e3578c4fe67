"""What compaction keeps of each batch (sans-IO): Kafka's ``Cleaner`` and ``MemoryRecords.filterTo`` rules.

Bytes in, bytes out; no files, no clock (``now_ms`` is passed in).

* :class:`LogFacts` is learned from one pass over every batch header of the
  log (and the record of each transaction marker): which transaction each
  transactional batch belongs to and how it ended (committed, aborted, or not
  yet decided), and each producer's last batch.
* :class:`OffsetMap` maps each key of the dirty part to its latest offset
  (aborted and undecided transactional records do not count: they may never
  become visible).
* :func:`filter_batch` decides one batch: a record survives when it is the
  latest for its key (its offset is the map's, or its key is not in the
  map), and a tombstone only until its batch's delete horizon. Aborted
  transactional data goes at once; undecided data stays untouched; a
  transaction marker stays while any record of its transaction does, and
  then until its delete horizon. The first clean that keeps a tombstone or a
  marker of an emptied transaction stamps the batch with a delete horizon of
  ``now + delete.retention.ms`` (KIP-534: attribute bit 6, the horizon stored
  as the base timestamp). A producer's last batch is kept, emptied if need
  be, so its sequence numbers survive a reload (Kafka's ``RETAIN_EMPTY``).
* Offsets never change: a rewritten batch keeps its base offset and its
  ``lastOffsetDelta``, so the offsets after it stay where they were.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from crc32c import crc32c

from reference_impl.protocol.record_set import (
    CONTROL_ABORT,
    NONE,
    Record,
    compress,
    encode_record,
    iter_records,
)
from reference_impl.protocol.records import (
    COMPRESSION_MASK,
    DELETE_HORIZON_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
)

_HEADER = struct.Struct(">qiibIhiqqqhii")

TxnId = tuple[int, int]
"""A transaction: (producer id, offset of its first batch)."""


@dataclass
class LogFacts:
    """Transactions and producers as the whole log (log start to log end) shows them."""

    txn_of_batch: dict[int, TxnId] = field(default_factory=dict)
    """Base offset of a transactional data batch → its transaction."""
    txn_of_marker: dict[int, TxnId | None] = field(default_factory=dict)
    """Base offset of a marker → the transaction it ended (None: a marker with no data before it)."""
    aborted: dict[TxnId, bool] = field(default_factory=dict)
    """Decided transactions: True when aborted."""
    last_data_offset: dict[int, int] = field(default_factory=dict)
    """Producer id → last offset of its last data batch."""
    last_marker_offset: dict[int, int] = field(default_factory=dict)
    """Producer id → base offset of its last marker."""
    _open: dict[int, TxnId] = field(default_factory=dict)

    def observe(self, header: BatchHeader, control_type: int | None) -> None:
        """Feed the log's batches in offset order (``control_type`` only for markers)."""
        pid = header.producer_id
        if header.is_control:
            self.last_marker_offset[pid] = header.base_offset
            txn = self._open.pop(pid, None)
            self.txn_of_marker[header.base_offset] = txn
            if txn is not None:
                self.aborted[txn] = control_type == CONTROL_ABORT
            return
        if pid >= 0:
            self.last_data_offset[pid] = header.last_offset
        if header.is_transactional:
            txn = self._open.setdefault(pid, (pid, header.base_offset))
            self.txn_of_batch[header.base_offset] = txn

    def outcome(self, header: BatchHeader) -> str:
        """``plain`` (not transactional), ``committed``, ``aborted`` or ``undecided``."""
        txn = self.txn_of_batch.get(header.base_offset)
        if txn is None:
            return "plain"
        aborted = self.aborted.get(txn)
        if aborted is None:
            return "undecided"
        return "aborted" if aborted else "committed"

    def is_last_of_producer(self, header: BatchHeader) -> bool:
        """Kafka keeps the batch that holds a producer's state (its last data batch, else its last marker)."""
        pid = header.producer_id
        if pid < 0:
            return False
        last_data = self.last_data_offset.get(pid)
        if last_data is not None:
            return not header.is_control and header.last_offset == last_data
        return header.is_control and self.last_marker_offset.get(pid) == header.base_offset


class OffsetMap:
    """Key → latest offset over the dirty part, ``capacity`` keys at most (Kafka's dedupe buffer)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self.latest: dict[bytes, int] = {}

    def full(self) -> bool:
        return len(self.latest) >= self.capacity

    def add(self, records: Sequence[Record]) -> None:
        for record in records:
            if record.key is not None:
                self.latest[record.key] = record.offset

    def superseded(self, record: Record) -> bool:
        """A later record with the same key is in the map."""
        assert record.key is not None
        return self.latest.get(record.key, -1) > record.offset


@dataclass(frozen=True, slots=True)
class Filtered:
    """What one batch became."""

    data: bytes | None
    """The batch to write (the original bytes when nothing changed), or None to drop it."""
    kept_records: int
    horizon_ms: int | None
    """The delete horizon the written batch carries, if any."""


def delete_horizon(header: BatchHeader) -> int | None:
    """The batch's delete horizon (KIP-534), or None when none was stamped."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_BIT else None


def filter_batch(
    batch: bytes,
    header: BatchHeader,
    *,
    facts: LogFacts,
    offset_map: OffsetMap,
    txn_has_data: dict[TxnId, bool],
    now_ms: int,
    delete_retention_ms: int,
) -> Filtered:
    """Decide one batch (``header.position`` is 0 in ``batch``); updates ``txn_has_data`` as data is kept."""
    horizon = delete_horizon(header)
    keep_empty = facts.is_last_of_producer(header)
    if header.is_control:
        txn = facts.txn_of_marker.get(header.base_offset)
        if txn is not None and txn_has_data.get(txn, False):
            return Filtered(batch, header.records_count, horizon)
        if horizon is None:
            return Filtered(_rebuild(header, list(iter_records(batch, header)), now_ms + delete_retention_ms),
                            header.records_count, now_ms + delete_retention_ms)
        if now_ms < horizon:
            return Filtered(batch, header.records_count, horizon)
        return _dropped(header, keep_empty)
    outcome = facts.outcome(header)
    if outcome == "undecided":
        return Filtered(batch, header.records_count, horizon)
    if outcome == "aborted":
        return _dropped(header, keep_empty)
    records = list(iter_records(batch, header))
    kept: list[Record] = []
    stamp = False
    for record in records:
        if record.key is None or offset_map.superseded(record):
            continue  # Kafka drops keyless records from a compacted log
        if record.value is None:
            if horizon is None:
                stamp = True
            elif now_ms >= horizon:
                continue
        kept.append(record)
    if kept and outcome == "committed":
        txn_has_data[facts.txn_of_batch[header.base_offset]] = True
    if not kept:
        return _dropped(header, keep_empty)
    if len(kept) == len(records) and not stamp:
        return Filtered(batch, len(kept), horizon)
    new_horizon = now_ms + delete_retention_ms if stamp else horizon
    return Filtered(_rebuild(header, kept, new_horizon), len(kept), new_horizon)


def _dropped(header: BatchHeader, keep_empty: bool) -> Filtered:
    if not keep_empty:
        return Filtered(None, 0, None)
    return Filtered(_rebuild(header, [], None), 0, None)


def _rebuild(header: BatchHeader, records: list[Record], horizon: int | None) -> bytes:
    """The batch with only ``records``, same base offset and ``lastOffsetDelta``; CRC recomputed.

    With a horizon the base timestamp becomes the horizon and record
    timestamps are re-encoded relative to it. An empty batch is a bare,
    uncompressed header, as Kafka writes it.
    """
    attributes = header.attributes
    if horizon is not None:
        attributes |= DELETE_HORIZON_BIT
        base_ts = horizon
    else:
        base_ts = header.base_timestamp
    if not records:
        attributes &= ~COMPRESSION_MASK
        payload = b""
        max_ts = header.max_timestamp
    else:
        raw = b"".join(
            encode_record(r.offset - header.base_offset, r.timestamp - base_ts, r.key, r.value, r.headers)
            for r in records
        )
        codec = header.compression
        payload = compress(codec, raw) if codec != NONE else raw
        max_ts = header.max_timestamp if header.is_log_append_time else max(r.timestamp for r in records)
    head = bytearray(
        _HEADER.pack(
            header.base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(payload),
            header.partition_leader_epoch,
            header.magic,
            0,
            attributes,
            header.last_offset_delta,
            base_ts,
            max_ts,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            len(records),
        )
    )
    body = bytes(head[21:]) + payload
    struct.pack_into(">I", head, 17, crc32c(body))
    return bytes(head[:21]) + body
