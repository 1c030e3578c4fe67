"""One partition as this broker sees it: its log, its role, and its high watermark.

The leader appends produced batches stamped with its leader epoch and
advances the high watermark as the in-sync replicas catch up; consumers read
below the high watermark (read_uncommitted) or the last stable offset
(read_committed). With one replica (a single-node broker) the ISR is the
leader alone, so an append is committed when it is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reference_impl.log.api import Chunk, OffsetOutOfRangeError, PartitionLog, ReadResult
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import build_control_batch, control_record_type, iter_records
from reference_impl.protocol.records import BatchHeader, iter_headers

from .producer_state import AbortedTxn, CompletedTxn, ProducerStateManager
from .validation import TopicLimits, validate_produce_records

NO_EPOCH = -1


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
        self.high_watermark = log.log_start_offset
        self.read_chunk = read_chunk
        self.producers = ProducerStateManager()
        self.aborted: list[AbortedTxn] = []
        self._rebuild_producer_state()
        self.configs: dict[str, str] = {}
        self.limits = TopicLimits.from_configs({})
        self.update_configs(configs)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    @property
    def min_insync_replicas(self) -> int:
        return int(self.configs.get("min.insync.replicas", "1"))

    @property
    def last_stable_offset(self) -> int:
        """The high watermark, or the first offset of the oldest open transaction if that is lower."""
        unstable = self.producers.first_unstable_offset()
        return self.high_watermark if unstable is None else min(unstable, self.high_watermark)

    def update_configs(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)
        self.limits = TopicLimits.from_configs(configs)

    def become_leader(
        self, leader_epoch: int, partition_epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...]
    ) -> None:
        self.leader_id = self.local_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = replicas
        self.isr = isr
        self.high_watermark = max(self.high_watermark, self.log.log_start_offset)
        self._maybe_advance_high_watermark()

    def restore_high_watermark(self, offset: int) -> None:
        """From the replication-offset checkpoint: never above the LEO, never below the log start."""
        self.high_watermark = max(self.log.log_start_offset, min(offset, self.log.log_end_offset))

    # -- leader side ---------------------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """KIP-320: a client's view of the leader epoch fences stale or future requests."""
        if current_leader_epoch == NO_EPOCH or current_leader_epoch == self.leader_epoch:
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
    ) -> AppendOutcome:
        """Validate and append one produced batch; a retried idempotent batch is not appended twice."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self.topic}-{self.index} is led elsewhere")
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise KafkaError(
                ErrorCode.not_enough_replicas,
                f"ISR {list(self.isr)} is smaller than min.insync.replicas {self.min_insync_replicas}",
            )
        data, header = validate_produce_records(records, self.limits, now_ms)
        duplicate = self.producers.check_duplicate(header)
        if duplicate is not None:
            return AppendOutcome(duplicate.first_offset, duplicate.last_offset, duplicate=True)
        self.producers.validate(header)
        if verify is not None:
            verify(header)
        info = self.log.append_as_leader(data, self.leader_epoch, now_ms)
        for stored in info.batches:
            self.producers.on_data_batch(stored)
        self._maybe_advance_high_watermark()
        return AppendOutcome(info.first_offset, info.last_offset)

    def append_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, now_ms: int
    ) -> CompletedTxn | None:
        """Write a COMMIT or ABORT control batch for ``producer_id`` (WriteTxnMarkers)."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self.topic}-{self.index} is led elsewhere")
        self.producers.validate_marker(producer_id, producer_epoch, coordinator_epoch)
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
        self._maybe_advance_high_watermark()
        if completed is not None and completed.aborted:
            self.aborted.append(
                AbortedTxn(
                    producer_id, completed.first_offset, completed.last_offset, self.last_stable_offset
                )
            )
        return completed

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions a read_committed reader of [fetch_offset, upper_bound) must skip."""
        return [a for a in self.aborted if a.last_offset >= fetch_offset and a.first_offset < upper_bound]

    def _maybe_advance_high_watermark(self) -> None:
        """HW = the smallest LEO over the ISR; with the leader alone in the ISR, its own LEO."""
        if self.isr == (self.local_id,) or not self.isr:
            new = self.log.log_end_offset
            if new > self.high_watermark:
                self.high_watermark = new

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

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: -1 means the high watermark; beyond it is OFFSET_OUT_OF_RANGE."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self.topic}-{self.index} is led elsewhere")
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

    def _rebuild_producer_state(self) -> None:
        """Replay batch headers (and markers' control records) to rebuild producer state.

        Kafka loads the latest producer snapshot and replays from there; the
        log here is replayed from its start, batch by batch, reading only the
        headers of data batches and the single record of each marker.
        """
        offset = self.log.log_start_offset
        end = self.log.log_end_offset
        while offset < end:
            result = self.log.read(offset, 1 << 20)
            data = b"".join(self.read_chunk(c) for c in result.chunks)
            if not data:
                break
            for header in iter_headers(data):
                if header.is_control:
                    (record,) = list(iter_records(data, header))[:1]
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
                offset = header.next_offset
