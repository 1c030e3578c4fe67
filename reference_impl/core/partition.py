"""One partition as this broker sees it: its log, its role (leader or follower), its high watermark.

The leader appends produced batches stamped with its leader epoch, serves
its followers' fetches, and advances the high watermark as the in-sync
replicas catch up (:mod:`.replication.isr`); consumers read below the high
watermark (read_uncommitted) or the last stable offset (read_committed). A
follower appends what it fetched from the leader, and when the leader says
its log diverged (KIP-320: the last epoch it fetched ends earlier on the
leader) truncates to where the epochs agree, never to its own high
watermark (KIP-101). With one replica the ISR is the leader alone, so an
append is committed when it is written.

Producer state (idempotence, transactions) is kept on every replica from the
batches in the log, so a new leader answers duplicates and the last stable
offset exactly as the old one did.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reference_impl import defects
from reference_impl.log.api import Chunk, OffsetOutOfRangeError, PartitionLog, ReadResult
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import build_control_batch, control_record_type, iter_records
from reference_impl.protocol.records import BatchHeader, iter_headers

from .mutants import (
    ACKS_ALL_EARLY,
    HW_OVER_ALL_REPLICAS,
    HW_WITHOUT_FOLLOWERS,
    ISR_EXPAND_EARLY,
    KIP279_HOLE,
    LATE_MARKER_APPLIES,
    LSO_ABOVE_HW,
    MUTANT_CONFIG,
    NO_DEDUP,
    STALE_EPOCH_ACCEPTED,
    TRUNCATE_TO_HW,
)
from .producer_state import AbortedTxn, CompletedTxn, ProducerStateManager
from .replication.isr import FollowerState, IsrProposal, IsrTracker
from .validation import TopicLimits, validate_produce_records

NO_EPOCH = -1
READ_CHUNK_BYTES = 1 << 20


class Noted(enum.Enum):
    """How a follower's fetch was recorded on arrival (:meth:`Partition.note_follower_fetch`)."""

    RECORDED = "recorded"
    HW_MOVED = "the high watermark moved"
    IDLE = "an idle repeat of its last fetch"


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    first_offset: int
    last_offset: int
    duplicate: bool = False
    """A retried idempotent batch: these are the offsets it got the first time."""


@dataclass(frozen=True, slots=True)
class ReadInfo:
    """What a fetch of one partition returns besides the records."""

    records: ReadResult
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    diverging_epoch: tuple[int, int] | None = None
    """For a follower whose log diverged: (epoch, end offset) to truncate to (KIP-320)."""
    high_watermark_moved: bool = False
    """A follower's fetch moved the high watermark (what waits on the partition may now complete)."""


def _not_leader(partition: Partition) -> KafkaError:
    return KafkaError(
        ErrorCode.not_leader_or_follower, f"{partition.topic}-{partition.index} is led elsewhere"
    )


class Partition:
    def __init__(
        self,
        topic: str,
        index: int,
        topic_id: uuid.UUID,
        log: PartitionLog,
        configs: Mapping[str, str],
        local_id: int,
        read_chunk: Callable[[Chunk], bytes],
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.local_id = local_id
        self.leader_id = -1
        self.leader_epoch = NO_EPOCH
        self.partition_epoch = 0
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.tracker: IsrTracker | None = None
        self._epoch_checks_off = False
        self.epoch_start_offset = 0
        self.high_watermark = log.log_start_offset
        self.read_chunk = read_chunk
        self.producers = ProducerStateManager()
        self.aborted: list[AbortedTxn] = []
        self._rebuild_producer_state()
        self.configs: dict[str, str] = {}
        self.limits = TopicLimits.from_configs({})
        self.update_configs(configs)
        self.offline: str | None = None
        """Why the replica is offline (its log directory failed; Kafka's ``HostedPartition.Offline``)."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    def leads_online_in(self, leader_epoch: int) -> bool:
        """Online and leading in ``leader_epoch``: what a follower's fetch, checked on arrival in that
        epoch, still needs to read here without checking again."""
        return self.offline is None and self.is_leader and self.leader_epoch == leader_epoch

    def quiet_stamp(self) -> tuple[object, ...]:
        """Everything a caught-up follower's repeated fetch depends on here, read without a call
        into the log: the log object and its :attr:`~PartitionLog.version` (offsets, epochs, and
        so the last stable offset, which moves only with an append), the high watermark, the
        leadership and its epoch, the log directory's state, the ISR tracker, its ISR and pending
        change. Equal stamps of one partition: an idle fetch found idle at the first is idle at
        the second, with the same answer (:func:`~reference_impl.core.handlers.k01_fetch` skips
        it; issue 22)."""
        tracker = self.tracker
        log = self.log
        return (
            log,
            log.version,
            self.high_watermark,
            self.leader_id,
            self.leader_epoch,
            self.offline,
            tracker,
            None if tracker is None else tracker.isr,
            None if tracker is None else tracker.pending,
        )

    def follower_state(self, replica_id: int) -> FollowerState | None:
        """This leader's record of follower ``replica_id`` (None when not leading or not a replica)."""
        return None if self.tracker is None else self.tracker.followers.get(replica_id)

    @property
    def min_insync_replicas(self) -> int:
        return int(self.configs.get("min.insync.replicas", "1"))

    @property
    def last_stable_offset(self) -> int:
        """The high watermark, or the first offset of the oldest open transaction if that is lower."""
        if self._mutant(LSO_ABOVE_HW):
            return self.log.log_end_offset
        unstable = self.producers.first_unstable_offset()
        return self.high_watermark if unstable is None else min(unstable, self.high_watermark)

    @property
    def effective_isr(self) -> tuple[int, ...]:
        """The ISR acks=all and the high watermark wait for (the maximal one while a change is pending)."""
        return self.tracker.maximal_isr if self.tracker is not None else self.isr

    def update_configs(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)
        self.limits = TopicLimits.from_configs(configs)
        self.mutant = configs.get(MUTANT_CONFIG) or None

    def _mutant(self, name: str) -> bool:
        """A seeded bug mode is on (:mod:`.mutants`): only the property suite's mutation check sets one."""
        return self.mutant == name

    def restore_high_watermark(self, offset: int) -> None:
        """The HW of the replication-offset checkpoint, given as the partition is opened and before
        it takes a role, as Kafka's ``Partition.createLog`` hands it to ``UnifiedLog.updateHighWatermark``:
        never above the LEO, never below the log start.

        It only ever raises the HW. The checkpoint is written every few seconds, so after a crash
        it is older than the log; a leader that has already computed its HW from its ISR (with no
        follower to wait for, its log end) knows better, and a leader's HW never moves back
        (``UnifiedLog.maybeIncrementHighWatermark``)."""
        restored = max(self.log.log_start_offset, min(offset, self.log.log_end_offset))
        if defects.enabled(defects.LATE_HIGH_WATERMARK):
            self.high_watermark = restored  # the old bug: an older checkpoint overwrote the leader's HW
            return
        self.high_watermark = max(self.high_watermark, restored)

    # -- log directories (JBOD) -----------------------------------------------------------------

    def go_offline(self, failed: PartitionLog, reason: str) -> None:
        """The log directory failed (Kafka's ``ReplicaManager.handleLogDirFailure`` marks the partition
        offline): no role, no log; every request for it is KAFKA_STORAGE_ERROR until a restart."""
        self.offline = reason
        self.log = failed
        self.leader_id = -1
        self.tracker = None

    def check_online(self) -> None:
        """KAFKA_STORAGE_ERROR for a replica whose log directory is offline (Kafka's
        ``getPartitionOrError`` on ``HostedPartition.Offline``)."""
        if self.offline is not None:
            raise KafkaError(
                ErrorCode.kafka_storage_error, f"{self.topic}-{self.index} is offline: {self.offline}"
            )

    def replace_log(self, moved: PartitionLog) -> None:
        """AlterReplicaLogDirs swapped the log for its copy in another directory: the same batches at
        the same offsets, so the producer state, epochs and high watermark stay as they are."""
        old = self.log
        if (moved.log_end_offset, moved.log_start_offset) != (old.log_end_offset, old.log_start_offset):
            raise ValueError(f"{self.topic}-{self.index}: the moved log holds other offsets")
        self.log = moved

    # -- role changes ----------------------------------------------------------------------------

    def take_role(
        self,
        leader: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        now_ms: int,
    ) -> bool:
        """Follow the controller's decision for this partition (its registration in the metadata
        image): lead or follow, unless this replica already holds that role at those epochs. True
        if the role or an epoch changed. Kafka's ``ReplicaManager.applyDelta`` (``makeLeader``,
        ``makeFollower``)."""
        held = (self.leader_id, self.leader_epoch, self.partition_epoch)
        if held == (leader, leader_epoch, partition_epoch) or self.offline is not None:
            return False
        if leader == self.local_id:
            self.become_leader(leader_epoch, partition_epoch, replicas, isr, now_ms)
            return True
        self.become_follower(leader, leader_epoch, partition_epoch, replicas, isr)
        return True

    def become_leader(
        self,
        leader_epoch: int,
        partition_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        now_ms: int = 0,
    ) -> None:
        """Lead ``leader_epoch``: record where the epoch starts, and track every follower afresh."""
        new_epoch = leader_epoch != self.leader_epoch or not self.is_leader
        self.leader_id = self.local_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = replicas
        self.isr = isr
        if new_epoch or self.tracker is None:
            self.log.assign_epoch(leader_epoch, self.log.log_end_offset)
            self.epoch_start_offset = self.log.log_end_offset
            self.tracker = IsrTracker(self.local_id, replicas, isr, now_ms)
        else:
            self.tracker.set_replicas(replicas, isr, now_ms)
            self.tracker.pending = None
        self.high_watermark = max(self.high_watermark, self.log.log_start_offset)
        if defects.enabled(defects.LATE_HIGH_WATERMARK):
            return  # the old bug: a new leader's HW waits for the next write (the defect's whole point)
        self.maybe_advance_high_watermark()

    def become_follower(
        self,
        leader_id: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
    ) -> None:
        """Follow ``leader_id``; truncation happens on the first fetch answer (KIP-320), not here."""
        if self._mutant(TRUNCATE_TO_HW):
            self.truncate_to(self.high_watermark)  # pre-KIP-101: drops acknowledged records it alone holds
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = replicas
        self.isr = isr
        self.tracker = None

    # -- leader side ---------------------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """KIP-320: a client's view of the leader epoch fences stale or future requests."""
        if current_leader_epoch == NO_EPOCH or current_leader_epoch == self.leader_epoch:
            return
        if self._mutant(STALE_EPOCH_ACCEPTED) and current_leader_epoch < self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(
                ErrorCode.fenced_leader_epoch,
                f"epoch {current_leader_epoch} is older than {self.leader_epoch}",
            )
        raise KafkaError(
            ErrorCode.unknown_leader_epoch, f"epoch {current_leader_epoch} is newer than {self.leader_epoch}"
        )

    def append_as_leader(
        self,
        records: bytes | None,
        required_acks: int,
        now_ms: int,
        verify: Callable[[BatchHeader], None] | None = None,
        *,
        from_coordinator: bool = False,
        from_client: bool = False,
    ) -> AppendOutcome:
        """Validate and append one produced batch; a retried idempotent batch is not appended twice.

        ``from_coordinator``: the group coordinator writing a TxnOffsetCommit's offsets under the
        producer's id and epoch without sequence numbers (Kafka's coordinator append origin):
        epochs are checked, sequences are not. ``from_client``: a Produce request's batch, held to
        the client-only batch rules (Kafka's ``AppendOrigin.CLIENT``)."""
        if not self.is_leader:
            raise _not_leader(self)
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise KafkaError(
                ErrorCode.not_enough_replicas,
                f"ISR {list(self.isr)} is smaller than min.insync.replicas {self.min_insync_replicas}",
            )
        data, header = validate_produce_records(
            records,
            self.limits,
            now_ms,
            partition_name=f"{self.key[0]}-{self.key[1]}",
            from_client=from_client,
        )
        duplicate = None if self._mutant(NO_DEDUP) else self.producers.check_duplicate(header)
        if duplicate is not None:
            return AppendOutcome(duplicate.first_offset, duplicate.last_offset, duplicate=True)
        if not self._mutant(NO_DEDUP):
            self.producers.validate(header, check_sequence=not from_coordinator)
        if verify is not None:
            verify(header)
        info = self.log.append_as_leader(data, self.leader_epoch, now_ms)
        for stored in info.batches:
            self.producers.on_data_batch(stored)
        self.maybe_advance_high_watermark()
        return AppendOutcome(info.first_offset, info.last_offset)

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        now_ms: int,
        transaction_version: int = 0,
    ) -> CompletedTxn | None:
        """Write a COMMIT or ABORT control batch for ``producer_id`` (WriteTxnMarkers; a transaction
        version 2 marker must carry an epoch above the producer's data, KIP-890)."""
        if not self.is_leader:
            raise _not_leader(self)
        self.producers.validate_marker(
            producer_id,
            producer_epoch,
            coordinator_epoch,
            transaction_version,
            strict=not self._mutant(LATE_MARKER_APPLIES),
        )
        batch = bytearray(
            build_control_batch(
                commit=commit,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch,
                timestamp=now_ms,
            )
        )
        info = self.log.append_as_leader(batch, self.leader_epoch, now_ms)
        completed = self.producers.on_marker(
            producer_id, producer_epoch, coordinator_epoch, info.first_offset, not commit, now_ms
        )
        self.maybe_advance_high_watermark()
        if completed is not None and completed.aborted:
            self.aborted.append(
                AbortedTxn(
                    producer_id, completed.first_offset, completed.last_offset, self.last_stable_offset
                )
            )
        return completed

    def committed(self, last_offset: int) -> bool:
        """acks=all: the batch ending at ``last_offset`` is below the high watermark."""
        if self._mutant(ACKS_ALL_EARLY):
            return True
        return self.high_watermark > last_offset

    def maybe_advance_high_watermark(self) -> bool:
        """HW = the smallest LEO over the (maximal) ISR; it never moves back. True if it moved."""
        if not self.is_leader or self.tracker is None:
            return False
        if self._mutant(HW_WITHOUT_FOLLOWERS):
            candidate = self.log.log_end_offset
        elif self._mutant(HW_OVER_ALL_REPLICAS):
            candidate = self.tracker.high_watermark_candidate(self.log.log_end_offset, self.replicas)
        else:
            candidate = self.tracker.high_watermark_candidate(self.log.log_end_offset)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def read_for_follower(
        self,
        replica_id: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        current_leader_epoch: int,
        max_bytes: int,
        now_ms: int,
        *,
        record: bool = True,
    ) -> ReadInfo:
        """A follower's fetch: update its state (unless ``record`` is off: noted on arrival already),
        answer records up to the LEO or a diverging epoch."""
        diverging = self._check_follower_fetch(
            replica_id, fetch_offset, last_fetched_epoch, current_leader_epoch
        )
        if diverging is not None:
            return ReadInfo(
                ReadResult.empty(),
                self.high_watermark,
                self.last_stable_offset,
                self.log.log_start_offset,
                diverging_epoch=diverging,
            )
        try:
            result = self.log.read(fetch_offset, max_bytes, min_one_batch=True)
        except OffsetOutOfRangeError as exc:
            raise KafkaError(ErrorCode.offset_out_of_range, str(exc)) from None
        moved = self._record_follower_fetch(replica_id, fetch_offset, now_ms) if record else False
        return ReadInfo(
            result, self.high_watermark, self.last_stable_offset, self.log.log_start_offset,
            high_watermark_moved=moved,
        )

    def note_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        current_leader_epoch: int,
        now_ms: int,
    ) -> Noted | None:
        """A follower's fetch as it arrives, before it waits for data: its offset is its LEO, so the
        high watermark moves now, not when the fetch is answered (Kafka updates the follower's state
        on arrival; waiting would hold every acks=all produce for ``replica.fetch.wait.max.ms``).
        None if not recorded (a fetch the answer will refuse or send back diverging), else how.

        ``Noted.IDLE``: a caught-up ISR member repeating its last fetch at this leader's unchanged
        log end (:meth:`IsrTracker.record_idle_fetch`), recorded without the checks. Nothing else
        can follow from it: no records to read, no divergence, no ISR expansion, and no high
        watermark move (no log end offset changed: the follower's is the one it had, and this
        leader's the one it had at that fetch)."""
        tracker = self.tracker
        if (
            tracker is not None
            and self.is_leader
            and current_leader_epoch == self.leader_epoch
            and tracker.record_idle_fetch(
                replica_id, fetch_offset, last_fetched_epoch, self.log.log_end_offset, now_ms
            )
        ):
            return Noted.IDLE
        try:
            if self._check_follower_fetch(replica_id, fetch_offset, last_fetched_epoch, current_leader_epoch):
                return None
        except KafkaError:
            return None
        if not self.log.log_start_offset <= fetch_offset <= self.log.log_end_offset:
            return None
        moved = self._record_follower_fetch(replica_id, fetch_offset, now_ms)
        return Noted.HW_MOVED if moved else Noted.RECORDED

    def _check_follower_fetch(
        self, replica_id: int, fetch_offset: int, last_fetched_epoch: int, current_leader_epoch: int
    ) -> tuple[int, int] | None:
        """Refuse (KafkaError) a fetch from a non-replica or another epoch; the diverging
        (epoch, end offset) when the follower's last epoch ends below its fetch offset here."""
        if not self.is_leader or self.tracker is None:
            raise _not_leader(self)
        self.check_leader_epoch(current_leader_epoch)
        if replica_id not in self.replicas:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"broker {replica_id} is not a replica")
        if last_fetched_epoch >= 0:
            epoch, end = self.log.end_offset_for_epoch(last_fetched_epoch)
            if epoch < last_fetched_epoch or end < fetch_offset:
                return epoch, end
        follower = self.tracker.followers.get(replica_id)
        if follower is not None:
            follower.checked_fetch = (last_fetched_epoch, fetch_offset)
        return None

    def _record_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> bool:
        """Record the follower's position; True if the high watermark moved."""
        assert self.tracker is not None
        self.tracker.record_fetch(replica_id, fetch_offset, self.log.log_end_offset, now_ms)
        return self.maybe_advance_high_watermark()

    def propose_isr_change(
        self,
        now_ms: int,
        max_lag_ms: int,
        fetched_by: int | None = None,
        may_join: Callable[[int], bool] | None = None,
    ) -> IsrProposal | None:
        """An ISR shrink (a member lagging too long) or, right after ``fetched_by``'s fetch, its expansion.

        As Kafka's ``Partition``: a follower is considered for the ISR only on
        its own fetch, judged by the offset that fetch asked for; a timer only
        ever shrinks. Judging a join on remembered state would let a replica
        that restarted with less data (a power loss) rejoin on its old LEO.
        ``may_join`` is the leader's view of the metadata (KIP-841): a replica
        whose broker is fenced or shutting down there is not proposed, since the
        controller would refuse it (INELIGIBLE_REPLICA) on every fetch.
        """
        if not self.is_leader or self.tracker is None or self.tracker.pending is not None:
            return None
        isr = set(self.isr)
        epoch_start = 0 if self._mutant(ISR_EXPAND_EARLY) else self.epoch_start_offset
        joining = [
            r
            for r in self.tracker.expansion_candidates(self.high_watermark, epoch_start)
            if r == fetched_by and (may_join is None or may_join(r))
        ]
        leaving = self.tracker.lagging(now_ms, max_lag_ms)
        if not joining and not leaving:
            return None
        new_isr = tuple(sorted((isr | set(joining)) - set(leaving)))
        proposal = IsrProposal(new_isr, self.partition_epoch, self.leader_epoch)
        self.tracker.pending = proposal
        return proposal

    def isr_change_failed(self) -> bool:
        """The controller refused or lost the proposal: the next check proposes again. The ISR the
        high watermark waits for is the committed one again, without a refused joiner (Kafka's
        ``Partition.handleAlterPartitionError`` resets to ``lastCommittedState``), so the high
        watermark may move: here at once (True if it did), where Kafka waits for the next fetch or
        append, so that it is the smallest LEO over that ISR after every event (``HwIsMinIsrLeo``)."""
        if self.tracker is None:
            return False
        self.tracker.pending = None
        return self.maybe_advance_high_watermark()

    # -- follower side -------------------------------------------------------------------------

    def follower_fetch_stamp(self) -> tuple[object, ...]:
        """What this replica's entry in its next fetch from the leader depends on (the position,
        the log start, the leader epoch), read without a call into the log: equal stamps, equal
        entries (the fetcher builds only the entries whose stamp moved; issue 22)."""
        log = self.log
        return (log, log.version, self.leader_epoch, self._epoch_checks_off)

    def follower_fetch_position(self) -> tuple[int, int]:
        """(fetch offset, last fetched epoch) for the next fetch from the leader."""
        entries = self.log.epoch_entries()
        if self._epoch_checks_off:
            return self.log.log_end_offset, NO_EPOCH
        return self.log.log_end_offset, entries[-1].epoch if entries else NO_EPOCH

    def apply_from_leader(
        self,
        records: bytes,
        leader_high_watermark: int,
        leader_log_start: int,
        diverging_epoch: tuple[int, int] | None,
    ) -> None:
        """Append fetched batches (or truncate to where the logs agree), then follow the leader's HW."""
        if self.is_leader:
            return
        if diverging_epoch is not None:
            epoch, leader_end = diverging_epoch
            local_epoch, local_end = self.log.end_offset_for_epoch(epoch)
            target = (
                min(leader_end, local_end) if local_epoch >= 0 else min(leader_end, self.log.log_end_offset)
            )
            if self._mutant(KIP279_HOLE):
                # pre-KIP-279 (and pre-KIP-320): truncate once to the leader's end offset for the epoch,
                # then fetch without epoch validation, keeping any divergence below that offset
                target = min(leader_end, self.log.log_end_offset)
                self._epoch_checks_off = True
            if epoch < 0:
                target = self.log.log_start_offset
            self.truncate_to(max(target, self.log.log_start_offset))
            return
        if records:
            info = self.log.append_as_follower(records)
            if info.batches:
                self._apply_batches(bytes(records))
        if leader_log_start > self.log.log_start_offset:
            if leader_log_start > self.log.log_end_offset:
                self.log.truncate_fully_and_start_at(leader_log_start)
                self._reset_producer_state()
            else:
                self.log.advance_log_start_offset(leader_log_start)
        self.high_watermark = max(
            self.log.log_start_offset, min(leader_high_watermark, self.log.log_end_offset)
        )

    def truncate_to(self, offset: int) -> None:
        """Drop the log from ``offset`` (follower truncation) and rebuild what was derived from it.

        At or past the log end only the epoch cache changes (the log drops an epoch that starts
        at its end, never written in); the records and producer state stay."""
        if offset >= self.log.log_end_offset:
            self.log.truncate_to(offset)
            return
        self.log.truncate_to(offset)
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        self._reset_producer_state()

    def reset_to_leader_start(self, leader_log_start: int) -> None:
        """OFFSET_OUT_OF_RANGE from the leader: our log is wholly outside its range; start over."""
        self.log.truncate_fully_and_start_at(leader_log_start)
        self.high_watermark = leader_log_start
        self._reset_producer_state()

    # -- reads ---------------------------------------------------------------------------------

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        committed_only: bool,
        transactional: bool = False,
        min_one_batch: bool = True,
    ) -> ReadInfo:
        """Batches from ``fetch_offset`` below the HW (or the LSO for read_committed)."""
        limit = self.last_stable_offset if transactional else self.high_watermark
        try:
            result = self.log.read(
                fetch_offset,
                max_bytes,
                max_offset=limit if committed_only else None,
                min_one_batch=min_one_batch,
            )
        except OffsetOutOfRangeError as exc:
            raise KafkaError(ErrorCode.offset_out_of_range, str(exc)) from None
        return ReadInfo(result, self.high_watermark, self.last_stable_offset, self.log.log_start_offset)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions a read_committed reader of [fetch_offset, upper_bound) must skip."""
        return [a for a in self.aborted if a.last_offset >= fetch_offset and a.first_offset < upper_bound]

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: -1 means the high watermark; beyond it is OFFSET_OUT_OF_RANGE."""
        if not self.is_leader:
            raise _not_leader(self)
        target = self.high_watermark if offset == -1 else offset
        if target < 0 or target > self.high_watermark:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} is above the high watermark {self.high_watermark}",
            )
        self.log.advance_log_start_offset(target)
        return self.log.log_start_offset

    def epoch_for_offset(self, offset: int) -> int:
        """The leader epoch under which ``offset`` was written (the epoch cache's floor entry)."""
        found = NO_EPOCH
        for entry in self.log.epoch_entries():
            if entry.start_offset <= offset:
                found = entry.epoch
            else:
                break
        return found

    # -- producer state derived from the log ---------------------------------------------------

    def _reset_producer_state(self) -> None:
        self.producers = ProducerStateManager()
        self.aborted = []
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        """Replay the log's batch headers (and each marker's control record) into producer state.

        Kafka loads the latest producer snapshot and replays from there; this
        replays from the log start, reading only headers of data batches and
        the single record of each marker.
        """
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            result = self.log.read(offset, READ_CHUNK_BYTES)
            data = b"".join(self.read_chunk(c) for c in result.chunks)
            following = self._apply_batches(data) if data else -1
            if following <= offset:
                break
            offset = following

    def _apply_batches(self, data: bytes) -> int:
        """Record the producer effects of stored batches; returns the offset after the last one."""
        next_offset = -1
        for header in iter_headers(data):
            if header.is_control:
                record = next(iter(iter_records(data, header)), None)
                if record is not None:
                    aborted = control_record_type(record) == 0
                    coordinator_epoch = int.from_bytes((record.value or b"")[2:6], "big", signed=True)
                    completed = self.producers.on_marker(
                        header.producer_id,
                        header.producer_epoch,
                        coordinator_epoch,
                        header.base_offset,
                        aborted,
                        header.max_timestamp,
                    )
                    if completed is not None and completed.aborted:
                        self.aborted.append(
                            AbortedTxn(header.producer_id, completed.first_offset, completed.last_offset, -1)
                        )
            else:
                self.producers.on_data_batch(header)
            next_offset = header.next_offset
        return next_offset
