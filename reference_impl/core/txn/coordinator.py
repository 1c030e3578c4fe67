"""The transaction coordinator: one state machine per transactional id, persisted in ``__transaction_state``.

Flow (KIP-98 as Kafka ships it, transaction version 1): InitProducerId
registers a transactional id and bumps its epoch, fencing older producers
(an open transaction of a fenced producer is aborted first); AddPartitionsToTxn
and AddOffsetsToTxn move it to Ongoing with its partitions; EndTxn writes
PrepareCommit or PrepareAbort and is answered once that is committed; then
a COMMIT or ABORT marker goes to every partition of the transaction, at its
leader (:mod:`.markers`: written here for partitions this broker leads, one
WriteTxnMarkers per other leader, retried with backoff while this broker
stays the coordinator), and only when every marker is written does
CompleteCommit or CompleteAbort follow; meanwhile the producer's requests get
CONCURRENT_TRANSACTIONS. A transaction open longer than its timeout is
aborted with an epoch bump, so the late producer is fenced.

Every state change is a record in the transactional id's partition of
``__transaction_state``, appended with acks=all; the answer to the client
waits until the high watermark passes it (a DelayedProduce of its own), so
what a client was told survives the coordinator's failover. A broker that
becomes leader of a state partition replays it, and finishes the
transactions it finds in PrepareCommit or PrepareAbort by sending their
markers again (the partitions keep duplicates harmless).

Transaction version 2 (KIP-890), decided per request as Kafka's broker does
(``TransactionVersion.transactionVersionForEndTxn`` / ``ForAddPartitionsToTxn``, and
``AddPartitionsToTxnManager`` for Produce v12+ and TxnOffsetCommit v5+): EndTxn v5 bumps the epoch
in the Prepare* state, so the markers carry the new epoch and the partitions refuse anything at the
old one, including a late marker of the ended transaction (a version 2 marker must be above the
data's epoch, :meth:`..producer_state.ProducerStateManager.validate_marker`); an exhausted epoch
hands over a new producer id when the transaction completes; Produce and TxnOffsetCommit add the
partition themselves (:meth:`TransactionCoordinator.verify_partition` with ``add``). Not persisted
(the v0 log value has no field; Kafka's flexible v1 value carries them tagged): a transaction's
version and the next producer id of an overflowing end, so a coordinator that takes over such a
completion writes version 0 markers and keeps the old producer id (its client re-initialises).

Errors are Kafka's: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (mapped to
INVALID_PRODUCER_EPOCH for old request versions by the handlers),
CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE, INVALID_TRANSACTION_TIMEOUT.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import build_batch

from ..boundary import TXN_MARKER_CHANNEL
from ..host import CoordinatorHost, PeerMessenger
from ..internal_topics import TRANSACTION_STATE, TopicsHost, coordinator_error, partition_for, stored_records
from ..partition import Partition
from ..ports import TopicPartition
from .log_format import TxnLogFormatError, decode_key, decode_value, encode_key, encode_value
from .markers import (
    FENCED,
    MARKER_WRITE_TIMEOUT_MS,
    MarkerHost,
    MarkerJob,
    MarkerListener,
    MarkerWait,
    Timer,
    append_marker_as_leader,
    marker_request,
    marker_response_codes,
)
from .state import MAX_EPOCH, TxnMetadata, TxnState
from .state_wait import STATE_WAIT_REARM_MS, StateWait, Written

log = logging.getLogger("reference_impl.txn")

Answer = Callable[[ErrorCode], None]
InitAnswer = Callable[[ErrorCode, int, int], None]


class TxnHost(CoordinatorHost, PeerMessenger, TopicsHost, MarkerHost, Protocol):
    """What the transaction coordinator needs of the broker: the ``__transaction_state`` replicas
    and the partitions it writes markers to, WriteTxnMarkers to their leaders, producer ids from
    the controller, the log store to replay from, and the purgatory to wait in."""


class TransactionCoordinator:
    def __init__(self, broker: TxnHost) -> None:
        self.broker = broker
        self.txns: dict[str, TxnMetadata] = {}
        self.loaded: set[int] = set()
        """The ``__transaction_state`` partitions this broker leads and has replayed."""
        self.marker_listeners: list[MarkerListener] = []
        self.jobs: dict[str, MarkerJob] = {}
        """Transactions whose markers are being written, by transactional id."""
        self._last_write: dict[str, Written] = {}
        self._loaded_epoch: dict[int, int] = {}

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
        as Kafka's does); returns the ids known. A partition led again under a new leader epoch is
        replayed again (a new coordinator epoch: what the old one was doing is not carried over)."""
        led = TRANSACTION_STATE.led(self.broker)
        moved = {i for i in self.loaded & led.keys() if self._loaded_epoch.get(i) != led[i].leader_epoch}
        count = TRANSACTION_STATE.partitions(self.broker)
        for index in sorted((self.loaded - led.keys()) | moved):
            self.loaded.discard(index)
            self._loaded_epoch.pop(index, None)
            for txn_id in [t for t in self.txns if partition_for(t, count) == index]:
                del self.txns[txn_id]
                self._last_write.pop(txn_id, None)
                job = self.jobs.pop(txn_id, None)
                if job is not None:
                    job.dropped = True
            log.info("unloaded __transaction_state-%d", index)
        for index in sorted(led.keys() - self.loaded):
            self.loaded.add(index)
            self._loaded_epoch[index] = led[index].leader_epoch
            self._replay_partition(led[index])
            self._resume_completions(index, self.broker.now_ms)
        return len(self.txns)

    def _replay_partition(self, part: Partition) -> None:
        for record in stored_records(self.broker.store, part):
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

    def _persist(self, meta: TxnMetadata, now_ms: int) -> Written:
        """Append ``meta`` (a copy the caller then installs) to its ``__transaction_state`` partition,
        acks=all: it must be committed before anything depends on it (see :meth:`_after_commit`)."""
        part = self._state_partition(meta.transactional_id, now_ms)
        batch = build_batch([(encode_key(meta.transactional_id), encode_value(meta))], base_timestamp=now_ms)
        try:
            outcome = part.append_as_leader(batch, -1, now_ms)
        except KafkaError as exc:
            raise KafkaError(coordinator_error(exc.code), exc.message or exc.code.name) from exc
        self.broker.notify_partition_changed(part.key, now_ms)
        written = Written(part, part.leader_epoch, outcome.last_offset)
        self._last_write[meta.transactional_id] = written
        self.txns[meta.transactional_id] = meta
        return written

    def _after_commit(self, written: Written | None, then: Callable[[ErrorCode], None], now_ms: int) -> None:
        """``then(NONE)`` once the high watermark passes ``written``; ``then(NOT_COORDINATOR)`` if the
        state partition's leadership moves first. Waits as long as this broker stays its leader."""
        if written is None:
            then(ErrorCode.none)
            return
        wait = StateWait(self.broker.purgatory, written, then, now_ms + STATE_WAIT_REARM_MS)
        self.broker.purgatory.try_complete_else_watch(wait, (written.part.key,), now_ms)

    def _sync_point(self, transactional_id: str) -> Written | None:
        """The last write of ``transactional_id``: an answer that relies on the state waits for it."""
        return self._last_write.get(transactional_id)

    # -- client requests ---------------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        producer_id: int,
        producer_epoch: int,
        now_ms: int,
        answer: InitAnswer,
    ) -> None:
        """InitProducerId; ``answer(code, producer id, epoch)`` once the new state is committed.
        Raises KafkaError when the request is refused before anything is written."""
        if not 0 < timeout_ms <= self.broker.config.get_int("transaction.max.timeout.ms"):
            answer(ErrorCode.invalid_transaction_timeout, -1, -1)
            return
        self._state_partition(transactional_id, now_ms)
        meta = self.txns.get(transactional_id)
        if meta is None:
            pid = self.broker.controller.allocate_producer_id(now_ms)
            fresh = TxnMetadata(transactional_id, pid, 0, timeout_ms, last_update_ms=now_ms)
            written = self._persist(fresh, now_ms)
            self._after_commit(
                written, lambda code: answer(code, *((pid, 0) if not code else (-1, -1))), now_ms
            )
            return
        if meta.is_pending:
            answer(ErrorCode.concurrent_transactions, -1, -1)
            return
        if producer_id != -1 and not (
            (producer_id, producer_epoch) == (meta.producer_id, meta.producer_epoch)
            or (producer_id, producer_epoch) == (meta.last_producer_id, meta.last_producer_epoch)
        ):
            answer(ErrorCode.producer_fenced, -1, -1)
            return
        if meta.state is TxnState.ONGOING:
            self._abort_with_fence(meta, now_ms)
            answer(ErrorCode.concurrent_transactions, -1, -1)
            return
        new = _copy(meta)
        new.last_producer_id, new.last_producer_epoch = meta.producer_id, meta.producer_epoch
        if meta.producer_epoch + 1 >= MAX_EPOCH:
            new.producer_id = self.broker.controller.allocate_producer_id(now_ms)
            new.producer_epoch = 0
        else:
            new.producer_epoch += 1
        new.timeout_ms = timeout_ms
        new.transition(TxnState.EMPTY, now_ms)
        written = self._persist(new, now_ms)
        self._after_commit(
            written,
            lambda code: answer(code, *((new.producer_id, new.producer_epoch) if not code else (-1, -1))),
            now_ms,
        )

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
        answer: Answer,
        client_version: int = 0,
    ) -> None:
        """AddPartitionsToTxn / AddOffsetsToTxn; ``answer(NONE)`` once the state is committed.
        ``client_version`` is the transaction version of the request (2: AddPartitionsToTxn v4+)."""
        meta = self._check_producer(transactional_id, producer_id, producer_epoch, now_ms)
        wanted = set(partitions)
        if wanted <= meta.partitions and meta.state is TxnState.ONGOING:
            self._after_commit(self._sync_point(transactional_id), answer, now_ms)
            return
        new = _copy(meta)
        if new.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            new.partitions = set()
        new.partitions |= wanted
        new.client_version = client_version
        new.transition(TxnState.ONGOING, now_ms)
        self._after_commit(self._persist(new, now_ms), answer, now_ms)

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
        answer: InitAnswer,
        *,
        bump: bool = False,
    ) -> None:
        """EndTxn: write PrepareCommit/PrepareAbort, answer once it is committed, then the markers.

        ``answer(code, producer id, epoch)``. ``bump`` is transaction version 2, which Kafka decides
        from the request version alone (``TransactionVersion.transactionVersionForEndTxn``,
        server-common/src/main/java/org/apache/kafka/server/common/TransactionVersion.java: EndTxn
        v5+): the epoch is bumped on every end and the answer carries the producer id and epoch
        to use next. Without it the version 1 rules hold and the answer's id and epoch are -1."""
        if bump:
            self._end_txn_v2(transactional_id, producer_id, producer_epoch, commit, now_ms, answer)
            return
        meta = self._check_producer(transactional_id, producer_id, producer_epoch, now_ms)

        def plain(code: ErrorCode) -> None:
            answer(code, -1, -1)

        if meta.state is TxnState.ONGOING:
            self._prepare(meta, commit, now_ms, plain)
            return
        if (meta.state, commit) in ((TxnState.COMPLETE_COMMIT, True), (TxnState.COMPLETE_ABORT, False)):
            self._after_commit(self._sync_point(transactional_id), plain, now_ms)  # a retry
            return
        raise KafkaError(
            ErrorCode.invalid_txn_state,
            f"cannot {'commit' if commit else 'abort'} {transactional_id!r} in state {meta.state.label}",
        )

    def _end_txn_v2(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
        answer: InitAnswer,
    ) -> None:
        """Transaction version 2's EndTxn (Kafka's ``TransactionCoordinator.endTransaction``,
        core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala, and its
        table of Empty/CompleteCommit/CompleteAbort against retried and current epochs): a retry
        is the request of the epoch just below the current one (the end bumped it), or of the
        last epoch of the previous producer id when the end overflowed; a retry of the same
        result answers NONE with the current id and epoch; an abort at the current epoch of a
        transaction with nothing open still bumps the epoch; everything else is Kafka's error."""
        self._state_partition(transactional_id, now_ms)
        meta = self.txns.get(transactional_id)
        if meta is None:
            raise KafkaError(ErrorCode.invalid_producer_id_mapping, f"{transactional_id!r} is unknown")
        retry_on_bump = meta.producer_id == producer_id and meta.producer_epoch == producer_epoch + 1
        retry_on_overflow = (
            meta.last_producer_id == producer_id
            and producer_epoch == MAX_EPOCH - 1
            and meta.producer_epoch == 0
            and meta.producer_id != producer_id
        )
        if meta.producer_id != producer_id and not retry_on_overflow:
            raise KafkaError(
                ErrorCode.invalid_producer_id_mapping, f"{transactional_id!r} is not mapped to {producer_id}"
            )
        state = meta.state
        if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            valid = retry_on_bump
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        else:
            valid = producer_epoch == meta.producer_epoch
        if not valid:
            raise KafkaError(ErrorCode.producer_fenced, f"epoch {producer_epoch} of {transactional_id!r}")
        retry = retry_on_bump or retry_on_overflow
        wanted = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        invalid = KafkaError(
            ErrorCode.invalid_txn_state,
            f"cannot {'commit' if commit else 'abort'} {transactional_id!r} in state {state.label}",
        )
        if state is TxnState.ONGOING:
            self._prepare(meta, commit, now_ms, None, answer_v2=answer)
        elif state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            if (state is TxnState.PREPARE_COMMIT) != commit:
                raise invalid
            raise KafkaError(ErrorCode.concurrent_transactions, f"{transactional_id!r} is completing")
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            if retry and state is wanted:
                current = (meta.producer_id, meta.producer_epoch)
                self._after_commit(
                    self._sync_point(transactional_id),
                    lambda code: answer(code, *(current if not code else (-1, -1))),
                    now_ms,
                )
            elif not retry and not commit:
                self._prepare(meta, False, now_ms, None, answer_v2=answer)
            else:
                raise invalid
        elif state is TxnState.EMPTY and not commit:
            self._prepare(meta, False, now_ms, None, answer_v2=answer)
        else:
            raise invalid

    def is_coordinator(self, transactional_id: str) -> bool:
        """This broker leads (and has loaded) the state partition of ``transactional_id``."""
        if TRANSACTION_STATE.name not in self.broker.image.topics:
            return False
        index = partition_for(transactional_id, TRANSACTION_STATE.partitions(self.broker))
        part = self.broker.partition(TRANSACTION_STATE.name, index)
        return part is not None and part.is_leader and index in self.loaded

    def verify_partition(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        key: tuple[str, int],
        now_ms: int = -1,
        *,
        add: bool = False,
    ) -> None:
        """KIP-890 verification of a transactional write to ``key``; raises the coordinator's code.

        As Kafka's ``TransactionCoordinator.handleVerifyPartitionsInTransaction``
        (core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala):
        INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED for any other epoch, CONCURRENT_TRANSACTIONS
        while an end is being written, TRANSACTION_ABORTABLE for a partition not in the open
        transaction. With ``add`` (transaction version 2: Produce v12+, TxnOffsetCommit v5+,
        ``AddPartitionsToTxnManager``'s ``addPartition`` operation) the partition is added
        instead, as AddPartitionsToTxn would, and the write goes on; the caller maps the codes
        to what its request version knows.

        Only where this broker is the transaction's coordinator (elsewhere it returns at once):
        a leader of another broker's transaction asks that coordinator with AddPartitionsToTxn
        v4 first (``handlers/txn_verification.py``), which lands in :meth:`verify_partitions` or
        :meth:`add_partitions`."""
        if not self.is_coordinator(transactional_id):
            return
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            raise KafkaError(
                ErrorCode.invalid_producer_id_mapping, f"unknown producer for {transactional_id!r}"
            )
        if producer_epoch != meta.producer_epoch:
            raise KafkaError(
                ErrorCode.producer_fenced, f"epoch {producer_epoch} is not {meta.producer_epoch}"
            )
        if meta.is_pending:
            raise KafkaError(ErrorCode.concurrent_transactions, f"{transactional_id!r} is completing")
        if meta.state is TxnState.ONGOING and key in meta.partitions:
            return
        if not add:
            raise KafkaError(
                ErrorCode.transaction_abortable,
                f"{key[0]}-{key[1]} is not part of an open transaction of {transactional_id!r}",
            )
        new = _copy(meta)
        if new.state is not TxnState.ONGOING:
            new.partitions = set()
        new.partitions.add(key)
        new.client_version = 2
        new.transition(TxnState.ONGOING, now_ms)
        self._persist(new, now_ms)

    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, keys: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], ErrorCode]:
        """AddPartitionsToTxn v4+ ``verify_only``: each partition's code (NOT_COORDINATOR everywhere
        unless this broker coordinates the transactional id)."""
        keys = list(keys)
        if not self.is_coordinator(transactional_id):
            return dict.fromkeys(keys, ErrorCode.not_coordinator)
        codes: dict[tuple[str, int], ErrorCode] = {}
        for key in keys:
            try:
                self.verify_partition(transactional_id, producer_id, producer_epoch, key)
                codes[key] = ErrorCode.none
            except KafkaError as exc:
                codes[key] = exc.code
        return codes

    # -- completion ------------------------------------------------------------------------------

    def _prepare(
        self,
        meta: TxnMetadata,
        commit: bool,
        now_ms: int,
        answer: Answer | None,
        *,
        answer_v2: InitAnswer | None = None,
    ) -> None:
        """Persist PrepareCommit/PrepareAbort. With ``answer_v2`` (transaction version 2) the epoch
        is bumped in the prepared state, so the markers carry it and fence what the producer
        wrote at the old one (Kafka's ``TransactionMetadata.prepareAbortOrCommit``,
        core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala); an
        exhausted epoch (Kafka's ``isProducerEpochExhausted``: 32766 or more) hands over a new
        producer id, at epoch 0, once the transaction completes. The client is answered with the
        id and epoch it must use next."""
        new = _copy(meta)
        new.client_version = 0  # version 1: the markers carry the data's own epoch
        if answer_v2 is not None:
            if meta.state is not TxnState.ONGOING:
                new.partitions = set()  # an abort with nothing added: only the epoch moves
            new.last_producer_id, new.last_producer_epoch = meta.producer_id, meta.producer_epoch
            new.producer_epoch = meta.producer_epoch + 1
            new.client_version = 2
            if meta.producer_epoch >= MAX_EPOCH - 1:
                new.next_producer_id = self.broker.controller.allocate_producer_id(now_ms)
            after = (
                (new.next_producer_id, 0)
                if new.next_producer_id >= 0
                else (new.producer_id, new.producer_epoch)
            )
            reply = answer_v2

            def answer_after(code: ErrorCode) -> None:
                reply(code, *(after if not code else (-1, -1)))

            answer = answer_after
        new.transition(TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT, now_ms)
        self._begin_completion(new, now_ms, answer)

    def _abort_with_fence(self, meta: TxnMetadata, now_ms: int) -> None:
        """Abort an open transaction with a bumped epoch, so its producer is fenced (KIP-98)."""
        new = _copy(meta)
        new.transition(TxnState.PREPARE_EPOCH_FENCE, now_ms)
        new.last_producer_id, new.last_producer_epoch = meta.producer_id, meta.producer_epoch
        new.producer_epoch = min(meta.producer_epoch + 1, MAX_EPOCH - 1)
        if new.producer_epoch == meta.producer_epoch:
            new.client_version = 0  # no bump left: a version 2 marker at the data's epoch would be refused
        new.transition(TxnState.PREPARE_ABORT, now_ms)
        try:
            self._begin_completion(new, now_ms, None)
        except KafkaError as exc:
            log.info("cannot abort the transaction of %r now: %s", meta.transactional_id, exc)

    def _begin_completion(self, prepared: TxnMetadata, now_ms: int, answer: Answer | None) -> None:
        """Persist a Prepare* state; once committed, answer the client and send the markers."""
        written = self._persist(prepared, now_ms)

        def committed(code: ErrorCode) -> None:
            if code is ErrorCode.none:
                self._start_markers(prepared, self.broker.now_ms)
            if answer is not None:
                answer(code)

        self._after_commit(written, committed, now_ms)

    def _start_markers(self, meta: TxnMetadata, now_ms: int) -> None:
        if self.txns.get(meta.transactional_id) is not meta:
            return  # the transaction moved on (or was unloaded) before its Prepare* state committed
        part = self._led_state_partition(meta.transactional_id)
        if part is None:
            return
        job = MarkerJob(
            meta.transactional_id,
            meta.producer_id,
            meta.producer_epoch,
            meta.state is TxnState.PREPARE_COMMIT,
            part.leader_epoch,
            set(meta.partitions),
            meta.client_version,
        )
        self.jobs[meta.transactional_id] = job
        self._dispatch(job, now_ms)

    def _led_state_partition(self, transactional_id: str) -> Partition | None:
        if TRANSACTION_STATE.name not in self.broker.image.topics:
            return None
        index = partition_for(transactional_id, TRANSACTION_STATE.partitions(self.broker))
        part = self.broker.partition(TRANSACTION_STATE.name, index)
        return part if part is not None and part.is_leader and index in self.loaded else None

    def _current(self, job: MarkerJob) -> bool:
        """The job still matters: same transaction, still Prepare*, this broker still its coordinator
        under the same coordinator epoch (a newer coordinator finishes it otherwise)."""
        if job.dropped or self.jobs.get(job.transactional_id) is not job:
            return False
        meta = self.txns.get(job.transactional_id)
        wanted = TxnState.PREPARE_COMMIT if job.commit else TxnState.PREPARE_ABORT
        if meta is None or (meta.producer_id, meta.producer_epoch, meta.state) != (
            job.producer_id,
            job.producer_epoch,
            wanted,
        ):
            return False
        part = self._led_state_partition(job.transactional_id)
        return part is not None and part.leader_epoch == job.coordinator_epoch

    def _drop(self, job: MarkerJob, why: str) -> None:
        job.dropped = True
        if self.jobs.get(job.transactional_id) is job:
            del self.jobs[job.transactional_id]
        log.info("markers of %r no longer sent here: %s", job.transactional_id, why)

    def _dispatch(self, job: MarkerJob, now_ms: int) -> None:
        """Send the markers not yet written: directly for partitions led here, one WriteTxnMarkers
        per other leader; unknown leaders wait for the retry."""
        job.retry_armed = False
        if not self._current(job):
            if not job.dropped:
                self._drop(job, "the coordinator or the transaction moved on")
            return
        by_leader: dict[int, list[TopicPartition]] = {}
        leaderless = False
        for key in sorted(job.remaining - job.in_flight):
            topic = self.broker.image.topics.get(key[0])
            info = topic.partitions.get(key[1]) if topic is not None else None
            if info is None:
                job.remaining.discard(key)  # deleted: nothing to mark
            elif info.leader < 0:
                leaderless = True
            else:
                by_leader.setdefault(info.leader, []).append(key)
        for keys in by_leader.values():
            job.in_flight.update(keys)
        for leader, keys in sorted(by_leader.items()):
            if leader == self.broker.node_id:
                self._write_local(job, keys, now_ms)
            else:
                self._send_remote(job, leader, keys)
        if leaderless:
            self._arm_retry(job, now_ms)
        self._progress(job, now_ms)

    def _write_local(self, job: MarkerJob, keys: list[TopicPartition], now_ms: int) -> None:
        failed: dict[TopicPartition, ErrorCode] = {}
        waiting: list[tuple[Partition, int, int]] = []
        for key in keys:
            part = self.broker.partition(*key)
            try:
                if part is None or not part.is_leader:
                    raise KafkaError(ErrorCode.not_leader_or_follower)
                offset = append_marker_as_leader(
                    self.broker,
                    part,
                    job.producer_id,
                    job.producer_epoch,
                    job.coordinator_epoch,
                    job.commit,
                    now_ms,
                    job.transaction_version,
                )
                waiting.append((part, part.leader_epoch, offset))
            except KafkaError as exc:
                failed[key] = exc.code
        if failed:
            self._on_results(job, failed, self.broker.now_ms)
        if waiting:
            wait = MarkerWait(
                waiting,
                lambda codes: self._on_results(job, codes, self.broker.now_ms),
                now_ms + MARKER_WRITE_TIMEOUT_MS,
            )
            self.broker.purgatory.try_complete_else_watch(wait, wait.keys, now_ms)

    def _send_remote(self, job: MarkerJob, leader: int, keys: list[TopicPartition]) -> None:
        def answered(response: ResponsePayload | None, error: str | None) -> None:
            if response is None:
                log.info("WriteTxnMarkers to broker %d failed: %s", leader, error)
                codes = dict.fromkeys(keys, ErrorCode.network_exception)
            else:
                codes = marker_response_codes(response, job, keys)
            self._on_results(job, codes, self.broker.now_ms)

        request = marker_request(job, keys)
        if not self.broker.send_request(leader, request, answered, channel=TXN_MARKER_CHANNEL):
            self._on_results(job, dict.fromkeys(keys, ErrorCode.leader_not_available), self.broker.now_ms)

    def _on_results(self, job: MarkerJob, codes: dict[TopicPartition, ErrorCode], now_ms: int) -> None:
        retry = False
        for key, code in codes.items():
            job.in_flight.discard(key)
            if code is ErrorCode.none:
                job.remaining.discard(key)
            elif code in FENCED:
                log.warning(
                    "marker of %r on %s-%d refused (%s): a newer epoch was there; not retried",
                    job.transactional_id,
                    key[0],
                    key[1],
                    code.name,
                )
                job.remaining.discard(key)
            else:
                log.info(
                    "marker of %r on %s-%d not written (%s); retrying",
                    job.transactional_id,
                    key[0],
                    key[1],
                    code.name,
                )
                retry = True
        if retry:
            self._arm_retry(job, now_ms)
        self._progress(job, now_ms)

    def _arm_retry(self, job: MarkerJob, now_ms: int) -> None:
        if job.retry_armed or job.dropped:
            return
        job.retry_armed = True
        delay = job.backoff_ms()
        job.attempts += 1
        self.broker.purgatory.try_complete_else_watch(
            Timer(now_ms + delay, lambda at: self._dispatch(job, at)), (), now_ms
        )

    def _progress(self, job: MarkerJob, now_ms: int) -> None:
        """Every marker written: persist CompleteCommit/CompleteAbort."""
        if job.remaining or job.in_flight or job.finishing or job.dropped:
            return
        if not self._current(job):
            self._drop(job, "the coordinator or the transaction moved on")
            return
        meta = self.txns[job.transactional_id]
        done = _copy(meta)
        done.transition(TxnState.COMPLETE_COMMIT if job.commit else TxnState.COMPLETE_ABORT, now_ms)
        if done.next_producer_id >= 0:  # a version 2 end that exhausted the epoch: the new id takes over
            done.last_producer_id, done.last_producer_epoch = done.producer_id, done.producer_epoch
            done.producer_id, done.producer_epoch, done.next_producer_id = done.next_producer_id, 0, -1
        try:
            written = self._persist(done, now_ms)
        except KafkaError as exc:
            log.info("cannot complete the transaction of %r yet: %s", job.transactional_id, exc)
            self._arm_retry(job, now_ms)
            return
        job.finishing = True

        def completed(code: ErrorCode) -> None:
            if self.jobs.get(job.transactional_id) is job:
                del self.jobs[job.transactional_id]
            if code is ErrorCode.none:
                log.debug("transaction of %r completed", job.transactional_id)

        self._after_commit(written, completed, now_ms)

    def expire_timed_out(self, now_ms: int) -> list[str]:
        """Abort (with an epoch bump) every transaction open longer than its timeout."""
        expired = [
            m
            for m in self.txns.values()
            if m.state is TxnState.ONGOING
            and m.start_ms + m.timeout_ms < now_ms
            and self.is_coordinator(m.transactional_id)
        ]
        for meta in expired:
            log.info(
                "aborting transaction of %r: open for more than %d ms", meta.transactional_id, meta.timeout_ms
            )
            self._abort_with_fence(meta, now_ms)
        return [m.transactional_id for m in expired]

    def _resume_completions(self, index: int, now_ms: int) -> None:
        """A state partition newly led here: finish what its previous coordinator left in Prepare*."""
        count = TRANSACTION_STATE.partitions(self.broker)
        for txn_id, meta in sorted(self.txns.items()):
            if partition_for(txn_id, count) != index:
                continue
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                log.info("completing the %s of %r left by the previous coordinator", meta.state.label, txn_id)
                self._start_markers(meta, now_ms)


def _copy(meta: TxnMetadata) -> TxnMetadata:
    return dataclasses.replace(meta, partitions=set(meta.partitions))
