"""The transaction coordinator: one state machine per transactional id, persisted in ``__transaction_state``.

Flow (KIP-98 as Kafka ships it, transaction version 1): InitProducerId
registers a transactional id and bumps its epoch, fencing older producers
(an open transaction of a fenced producer is aborted first); AddPartitionsToTxn
and AddOffsetsToTxn move it to Ongoing with its partitions; EndTxn writes
PrepareCommit or PrepareAbort, then a COMMIT or ABORT marker to every
partition of the transaction, then CompleteCommit or CompleteAbort. A
transaction open longer than its timeout is aborted with an epoch bump, so
the late producer is fenced. Every state change is a record in the
transactional id's partition of ``__transaction_state`` before it takes
effect, and a restarted coordinator replays those records.

Errors are Kafka's: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (mapped to
INVALID_PRODUCER_EPOCH for old request versions by the handlers),
CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE, INVALID_TRANSACTION_TIMEOUT.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import build_batch, iter_records
from reference_impl.protocol.records import iter_headers

from ..internal_topics import TRANSACTION_STATE, partition_for
from ..partition import Partition
from .log_format import TxnLogFormatError, decode_key, decode_value, encode_key, encode_value
from .state import MAX_EPOCH, TxnMetadata, TxnState

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger("reference_impl.txn")

MarkerListener = Callable[[tuple[str, int], int, bool, int], None]
"""Called after a marker is written: (partition, producer id, committed, now_ms)."""


class TransactionCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.txns: dict[str, TxnMetadata] = {}
        self.loaded: set[int] = set()
        """The ``__transaction_state`` partitions this broker leads and has replayed."""
        self.marker_listeners: list[MarkerListener] = []

    # -- where a transactional id lives ---------------------------------------------------------

    def _state_partition(self, transactional_id: str, now_ms: int) -> Partition:
        TRANSACTION_STATE.ensure(self.broker, now_ms)
        index = partition_for(transactional_id, TRANSACTION_STATE.partitions(self.broker))
        part = self.broker.partition(TRANSACTION_STATE.name, index)
        if part is None or not part.is_leader:
            raise KafkaError(ErrorCode.not_coordinator, f"not the coordinator for {transactional_id!r}")
        return part

    def coordinator_epoch(self, transactional_id: str, now_ms: int) -> int:
        return self._state_partition(transactional_id, now_ms).leader_epoch

    def load(self) -> int:
        """Replay every led partition of ``__transaction_state`` not replayed yet, forget the
        transactional ids of those no longer led (leadership moved: the coordinator moves with it,
        as Kafka's does); returns the ids known."""
        led = {
            index: part
            for (topic, index), part in self.broker.partitions.items()
            if topic == TRANSACTION_STATE.name and part.is_leader
        }
        for index in sorted(self.loaded - led.keys()):
            self.loaded.discard(index)
            count = TRANSACTION_STATE.partitions(self.broker)
            for txn_id in [t for t in self.txns if partition_for(t, count) == index]:
                del self.txns[txn_id]
            log.info("unloaded __transaction_state-%d", index)
        for index in sorted(led.keys() - self.loaded):
            self.loaded.add(index)
            self._replay_partition(led[index])
        return len(self.txns)

    def _replay_partition(self, part: Partition) -> None:
        offset = part.log.log_start_offset
        while offset < part.log.log_end_offset:
            result = part.log.read(offset, 1 << 20)
            data = b"".join(self.broker.store.read_chunk(c) for c in result.chunks)
            if not data:
                break
            for header in iter_headers(data):
                offset = header.next_offset
                if header.is_control:
                    continue
                for record in iter_records(data, header):
                    self._replay(record.key, record.value)

    def _replay(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            txn_id = decode_key(key)
            if value is None:
                self.txns.pop(txn_id, None)
            else:
                self.txns[txn_id] = decode_value(txn_id, value)
        except TxnLogFormatError as exc:
            log.warning("skipping an unreadable __transaction_state record: %s", exc)

    def _persist(self, meta: TxnMetadata, now_ms: int) -> None:
        part = self._state_partition(meta.transactional_id, now_ms)
        batch = build_batch([(encode_key(meta.transactional_id), encode_value(meta))], base_timestamp=now_ms)
        part.append_as_leader(batch, -1, now_ms)

    # -- client requests ---------------------------------------------------------------------------

    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int, now_ms: int
    ) -> tuple[ErrorCode, int, int]:
        if not 0 < timeout_ms <= self.broker.config.get_int("transaction.max.timeout.ms"):
            return ErrorCode.invalid_transaction_timeout, -1, -1
        self._state_partition(transactional_id, now_ms)
        meta = self.txns.get(transactional_id)
        if meta is None:
            pid = self.broker.controller.allocate_producer_id(now_ms)
            meta = TxnMetadata(transactional_id, pid, 0, timeout_ms, last_update_ms=now_ms)
            self._persist(meta, now_ms)
            self.txns[transactional_id] = meta
            return ErrorCode.none, pid, 0
        if meta.is_pending:
            return ErrorCode.concurrent_transactions, -1, -1
        if producer_id != -1 and not (
            (producer_id, producer_epoch) == (meta.producer_id, meta.producer_epoch)
            or (producer_id, producer_epoch) == (meta.last_producer_id, meta.last_producer_epoch)
        ):
            return ErrorCode.producer_fenced, -1, -1
        if meta.state is TxnState.ONGOING:
            self._abort_with_fence(meta, now_ms)
            return ErrorCode.concurrent_transactions, -1, -1
        meta.last_producer_id, meta.last_producer_epoch = meta.producer_id, meta.producer_epoch
        if meta.producer_epoch + 1 >= MAX_EPOCH:
            meta.producer_id = self.broker.controller.allocate_producer_id(now_ms)
            meta.producer_epoch = 0
        else:
            meta.producer_epoch += 1
        meta.timeout_ms = timeout_ms
        meta.transition(TxnState.EMPTY, now_ms)
        self._persist(meta, now_ms)
        return ErrorCode.none, meta.producer_id, meta.producer_epoch

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int, now_ms: int
    ) -> TxnMetadata:
        self._state_partition(transactional_id, now_ms)
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            raise KafkaError(
                ErrorCode.invalid_producer_id_mapping,
                f"{transactional_id!r} is not mapped to producer {producer_id}",
            )
        if meta.producer_epoch != producer_epoch:
            raise KafkaError(
                ErrorCode.producer_fenced,
                f"epoch {producer_epoch} is not the current epoch {meta.producer_epoch}",
            )
        if meta.is_pending:
            raise KafkaError(ErrorCode.concurrent_transactions, f"{transactional_id!r} is completing")
        return meta

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[tuple[str, int]],
        now_ms: int,
    ) -> None:
        meta = self._check_producer(transactional_id, producer_id, producer_epoch, now_ms)
        wanted = set(partitions)
        if wanted <= meta.partitions and meta.state is TxnState.ONGOING:
            return
        if meta.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            meta.partitions = set()
        meta.partitions |= wanted
        meta.transition(TxnState.ONGOING, now_ms)
        self._persist(meta, now_ms)

    def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, now_ms: int
    ) -> None:
        meta = self._check_producer(transactional_id, producer_id, producer_epoch, now_ms)
        if meta.state is TxnState.ONGOING:
            self._complete(meta, commit, now_ms)
            return
        if (meta.state, commit) in ((TxnState.COMPLETE_COMMIT, True), (TxnState.COMPLETE_ABORT, False)):
            return  # a retry of an EndTxn that already completed
        raise KafkaError(
            ErrorCode.invalid_txn_state,
            f"cannot {'commit' if commit else 'abort'} {transactional_id!r} in state {meta.state.label}",
        )

    def verify_partition(
        self, transactional_id: str, producer_id: int, producer_epoch: int, key: tuple[str, int]
    ) -> None:
        """KIP-890 verification: a transactional batch's partition must be in the open transaction."""
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            raise KafkaError(
                ErrorCode.invalid_producer_id_mapping, f"unknown producer for {transactional_id!r}"
            )
        if producer_epoch < meta.producer_epoch:
            raise KafkaError(ErrorCode.invalid_producer_epoch, "the producer's epoch was fenced")
        if meta.state is not TxnState.ONGOING or key not in meta.partitions:
            raise KafkaError(
                ErrorCode.invalid_txn_state,
                f"{key[0]}-{key[1]} is not part of an open transaction of {transactional_id!r}",
            )

    # -- completion ------------------------------------------------------------------------------

    def _complete(self, meta: TxnMetadata, commit: bool, now_ms: int) -> None:
        meta.transition(TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT, now_ms)
        self._persist(meta, now_ms)
        self._write_markers(meta, commit, now_ms)
        meta.transition(TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT, now_ms)
        self._persist(meta, now_ms)

    def _abort_with_fence(self, meta: TxnMetadata, now_ms: int) -> None:
        """Abort an open transaction with a bumped epoch, so its producer is fenced (KIP-98)."""
        meta.transition(TxnState.PREPARE_EPOCH_FENCE, now_ms)
        meta.last_producer_id, meta.last_producer_epoch = meta.producer_id, meta.producer_epoch
        meta.producer_epoch = min(meta.producer_epoch + 1, MAX_EPOCH - 1)
        self._complete_after_fence(meta, now_ms)

    def _complete_after_fence(self, meta: TxnMetadata, now_ms: int) -> None:
        meta.transition(TxnState.PREPARE_ABORT, now_ms)
        self._persist(meta, now_ms)
        self._write_markers(meta, False, now_ms)
        meta.transition(TxnState.COMPLETE_ABORT, now_ms)
        self._persist(meta, now_ms)

    def _write_markers(self, meta: TxnMetadata, commit: bool, now_ms: int) -> None:
        coordinator_epoch = self.coordinator_epoch(meta.transactional_id, now_ms)
        for key in sorted(meta.partitions):
            part = self.broker.partition(*key)
            if part is None:
                continue  # the topic was deleted: nothing to mark
            part.append_marker(meta.producer_id, meta.producer_epoch, coordinator_epoch, commit, now_ms)
            self.broker.notify_partition_changed(key, now_ms)
            for listener in self.marker_listeners:
                listener(key, meta.producer_id, commit, now_ms)

    def expire_timed_out(self, now_ms: int) -> list[str]:
        """Abort (with an epoch bump) every transaction open longer than its timeout."""
        expired = [
            m
            for m in self.txns.values()
            if m.state is TxnState.ONGOING and m.start_ms + m.timeout_ms < now_ms
        ]
        for meta in expired:
            log.info(
                "aborting transaction of %r: open for more than %d ms", meta.transactional_id, meta.timeout_ms
            )
            self._abort_with_fence(meta, now_ms)
        return [m.transactional_id for m in expired]
