"""Idempotent and transactional producer state of one partition (KIP-98, Kafka's ProducerStateManager).

For every producer id that wrote to the partition the leader remembers its
epoch, the metadata of its last five batches (sequence range and offsets:
a retried batch that matches one of them is a duplicate, answered with the
original offsets and not appended again), the offset where its open
transaction began, and the coordinator epoch of its last transaction marker.
From the open transactions follows the first unstable offset, which bounds
the last stable offset that read_committed consumers read up to; aborted
transactions are remembered for the aborted-transaction index.

Checks, as Kafka's ``ProducerAppendInfo``: an epoch older than the known one
is INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0, and the same
epoch must continue at the last sequence + 1 (OUT_OF_ORDER_SEQUENCE_NUMBER),
unless nothing is known of the producer (its state was removed by retention),
when any sequence is accepted; a non-transactional batch while a transaction
is open is INVALID_TXN_STATE; a marker from an older coordinator epoch is
TRANSACTION_COORDINATOR_FENCED.

Pure state: the snapshot's bytes are made and read here, the log stores them.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from crc32c import crc32c

from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.records import NO_PRODUCER_EPOCH, NO_SEQUENCE, BatchHeader

BATCHES_TO_RETAIN = 5
SNAPSHOT_VERSION = 1
_SNAPSHOT_HEAD = struct.Struct(">hI")
_ENTRY = struct.Struct(">qhiqiqiq")
_COUNT = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    current_txn_first_offset: int | None = None
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One line of the aborted-transaction index (Kafka's ``.txnindex`` entry)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == 2**31 - 1)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}
        """producer id → first offset of its open transaction."""

    # -- leader appends ------------------------------------------------------------------------

    def check_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        """The original batch if ``header`` retries one of the producer's last five."""
        if not header.has_producer_id or header.base_sequence < 0:
            return None
        entry = self.producers.get(header.producer_id)
        return entry.find_duplicate(header) if entry else None

    def validate(self, header: BatchHeader, *, check_sequence: bool = True) -> None:
        """Raise the KafkaError Kafka would for a client batch; changes nothing.

        ``check_sequence=False`` for a coordinator's write (no sequence numbers): only epochs count."""
        if not header.has_producer_id:
            return
        entry = self.producers.get(header.producer_id)
        current_epoch = entry.epoch if entry else NO_PRODUCER_EPOCH
        if header.producer_epoch < current_epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than {current_epoch}",
            )
        first_seq = header.base_sequence
        if not check_sequence:
            pass
        elif header.producer_epoch != current_epoch:
            if first_seq != 0 and current_epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(
                    ErrorCode.out_of_order_sequence_number,
                    f"new epoch {header.producer_epoch} of producer {header.producer_id} "
                    f"starts at sequence {first_seq}, not 0",
                )
        elif entry is not None and entry.batches and not _in_sequence(entry.last_seq, first_seq):
            raise KafkaError(
                ErrorCode.out_of_order_sequence_number,
                f"producer {header.producer_id} sent sequence {first_seq} after {entry.last_seq}",
            )
        if entry is not None and entry.current_txn_first_offset is not None and not header.is_transactional:
            raise KafkaError(
                ErrorCode.invalid_txn_state,
                f"non-transactional write from producer {header.producer_id} inside a transaction",
            )

    def validate_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        transaction_version: int = 0,
        *,
        strict: bool = True,
    ) -> None:
        """Kafka's ``ProducerAppendInfo.checkProducerEpoch`` for a marker: older epochs are fenced;
        a transaction version 2 marker (KIP-890: the coordinator bumped the epoch when the
        transaction ended) must carry an epoch strictly above the producer's data, so a late
        marker of an earlier transaction can never end the transaction written after it at
        the bumped epoch. ``strict=False`` is the seeded bug mode that forgets this."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        bumped = transaction_version >= 2 and strict
        if producer_epoch < entry.epoch or (bumped and producer_epoch == entry.epoch):
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"marker epoch {producer_epoch} is not above the producer's epoch {entry.epoch}"
                if bumped
                else f"marker epoch {producer_epoch} is older than {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(
                ErrorCode.transaction_coordinator_fenced,
                f"coordinator epoch {coordinator_epoch} is older than {entry.coordinator_epoch}",
            )

    # -- applying what was appended (leader and follower alike) ------------------------------

    def on_data_batch(self, header: BatchHeader) -> None:
        """Record an appended data batch (offsets as stored)."""
        if not header.has_producer_id:
            return
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = self.producers[header.producer_id] = ProducerEntry(header.producer_id)
        if header.producer_epoch != entry.epoch:
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        if header.base_sequence >= 0:
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                )
            )
        entry.last_timestamp = header.max_timestamp
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = header.base_offset
            self.ongoing[header.producer_id] = header.base_offset

    def on_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        offset: int,
        aborted: bool,
        timestamp: int,
    ) -> CompletedTxn | None:
        """Record an appended transaction marker; returns the transaction it completed, if any."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        completed = None
        if entry.current_txn_first_offset is not None:
            completed = CompletedTxn(producer_id, entry.current_txn_first_offset, offset, aborted)
        if producer_epoch != entry.epoch:
            entry.batches.clear()
        entry.epoch = producer_epoch
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = timestamp
        self.ongoing.pop(producer_id, None)
        return completed

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction (None when none is open)."""
        return min(self.ongoing.values()) if self.ongoing else None

    def truncate_and_reload(self, entries: Iterable[ProducerEntry]) -> None:
        self.producers = {e.producer_id: e for e in entries}
        self.ongoing = {
            e.producer_id: e.current_txn_first_offset
            for e in self.producers.values()
            if e.current_txn_first_offset is not None
        }

    def remove_before(self, log_start_offset: int) -> None:
        """Forget producers whose last write is below the log start (retention, DeleteRecords)."""
        for pid in [
            p
            for p, e in self.producers.items()
            if e.last_offset < log_start_offset and e.current_txn_first_offset is None
        ]:
            del self.producers[pid]

    # -- snapshots -----------------------------------------------------------------------------

    def snapshot_bytes(self) -> bytes:
        """Kafka's producer snapshot (version 1): entries with the last batch of each producer."""
        body = bytearray(_COUNT.pack(len(self.producers)))
        for e in sorted(self.producers.values(), key=lambda e: e.producer_id):
            last = e.batches[-1] if e.batches else None
            body += _ENTRY.pack(
                e.producer_id,
                e.epoch,
                last.last_seq if last else NO_SEQUENCE,
                last.last_offset if last else -1,
                (last.last_offset - last.first_offset) if last else 0,
                e.last_timestamp,
                e.coordinator_epoch,
                -1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
            )
        return _SNAPSHOT_HEAD.pack(SNAPSHOT_VERSION, crc32c(bytes(body))) + bytes(body)


class SnapshotError(ValueError):
    """A producer snapshot file that is torn or not version 1."""


def load_snapshot(data: bytes) -> list[ProducerEntry]:
    if len(data) < _SNAPSHOT_HEAD.size + _COUNT.size:
        raise SnapshotError("producer snapshot is too short")
    version, crc = _SNAPSHOT_HEAD.unpack_from(data, 0)
    body = data[_SNAPSHOT_HEAD.size :]
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"producer snapshot version {version}, expected {SNAPSHOT_VERSION}")
    if crc32c(body) != crc:
        raise SnapshotError("producer snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body, 0)
    if len(body) != _COUNT.size + count * _ENTRY.size:
        raise SnapshotError("producer snapshot length does not match its entry count")
    entries = []
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn_first = _ENTRY.unpack_from(
            body, _COUNT.size + i * _ENTRY.size
        )
        entry = ProducerEntry(
            pid,
            epoch,
            coordinator_epoch=coord,
            last_timestamp=ts,
            current_txn_first_offset=None if txn_first < 0 else txn_first,
        )
        if last_offset >= 0:
            first_seq = max(0, last_seq - delta) if last_seq >= 0 else NO_SEQUENCE
            entry.batches.append(BatchMetadata(first_seq, last_seq, last_offset - delta, last_offset, ts))
        entries.append(entry)
    return entries
