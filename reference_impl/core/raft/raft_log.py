"""The replicated log of the quorum: a partition log plus the latest snapshot.

Kafka's ``ReplicatedLog`` over ``KafkaMetadataLog``: the records are
ordinary record batches in a :class:`reference_impl.log.api.PartitionLog`
(the in-memory log in the simulator, the file log in a process), each
stamped with the Raft epoch as its partitionLeaderEpoch, so the log's
leader-epoch cache is the Raft log's (epoch, start offset) index. A snapshot
replaces the log's prefix: once taken, the log may start at the snapshot's
end offset, and a replica that needs anything below must fetch the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from reference_impl.log.api import Chunk, PartitionLog
from reference_impl.protocol.record_set import build_batch
from reference_impl.protocol.records import BatchHeader, iter_headers, parse_header

from .messages import OffsetAndEpoch


class RaftSafetyError(Exception):
    """An operation that would break a Raft guarantee (truncating committed data)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The state machine as of ``snapshot_id.offset`` (exclusive), serialized by its owner."""

    snapshot_id: OffsetAndEpoch
    data: bytes


class SnapshotStore(Protocol):
    def latest(self) -> Snapshot | None: ...

    def save(self, snapshot: Snapshot) -> None:
        """Durably keep ``snapshot`` (atomic: all of it or nothing)."""
        ...


class MemorySnapshotStore:
    """Snapshots held outside the node, so a simulated crash keeps them (they are written whole)."""

    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []

    def latest(self) -> Snapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def save(self, snapshot: Snapshot) -> None:
        latest = self.latest()
        if latest is None or snapshot.snapshot_id.offset > latest.snapshot_id.offset:
            self.snapshots.append(snapshot)


@dataclass(frozen=True, slots=True)
class ValidOffset:
    pass


@dataclass(frozen=True, slots=True)
class Diverging:
    """The fetcher's last epoch does not reach its fetch offset here: truncate to ``end``."""

    end: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class SnapshotNeeded:
    snapshot_id: OffsetAndEpoch


OffsetValidation = ValidOffset | Diverging | SnapshotNeeded


def _as_bytes(chunk: Chunk) -> bytes:
    if isinstance(chunk, bytes):
        return chunk
    raise TypeError("a file region needs the store's read_chunk")


class RaftLog:
    """Not thread-safe: the Raft client that owns it serialises every call."""

    def __init__(
        self,
        log: PartitionLog,
        snapshots: SnapshotStore,
        read_chunk: Callable[[Chunk], bytes] = _as_bytes,
    ) -> None:
        self.log = log
        self.snapshots = snapshots
        self.read_chunk = read_chunk

    # -- positions -----------------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def flushed_end_offset(self) -> int:
        return min(self.log.recovery_point, self.log.log_end_offset)

    @property
    def last_fetched_epoch(self) -> int:
        """Epoch of the last record: the epoch cache's latest, else the snapshot's, else 0."""
        entries = self.log.epoch_entries()
        if entries:
            return entries[-1].epoch
        snapshot = self.snapshots.latest()
        return snapshot.snapshot_id.epoch if snapshot is not None else 0

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.end_offset, self.last_fetched_epoch)

    def epoch_at(self, offset: int) -> int:
        """The epoch of the record at ``offset`` (from the epoch cache, or the snapshot below it)."""
        epoch = -1
        for entry in self.log.epoch_entries():
            if entry.start_offset <= offset:
                epoch = entry.epoch
            else:
                break
        if epoch >= 0:
            return epoch
        snapshot = self.snapshots.latest()
        return snapshot.snapshot_id.epoch if snapshot is not None else 0

    # -- appends -------------------------------------------------------------------------------

    def append_as_leader(
        self, values: Sequence[bytes], epoch: int, now_ms: int, *, control_key: bytes | None = None
    ) -> tuple[int, int]:
        """One batch of ``values`` (a control batch when ``control_key`` is given); (first, last) offset."""
        if control_key is not None:
            raw = build_batch([(control_key, v) for v in values], base_timestamp=now_ms, control=True)
        else:
            raw = build_batch([(None, v) for v in values], base_timestamp=now_ms)
        info = self.log.append_as_leader(bytearray(raw), epoch, now_ms)
        return info.first_offset, info.last_offset

    def append_as_follower(self, records: bytes) -> int:
        """Append fetched batches; batches the log already holds (a retried answer) are skipped."""
        end = self.end_offset
        if records and parse_header(records).base_offset >= end:
            return len(self.log.append_as_follower(records).batches)
        keep = [h for h in iter_headers(records) if h.base_offset >= end]
        if not keep:
            return 0
        self.log.append_as_follower(records[keep[0].position :])
        return len(keep)

    def flush(self) -> None:
        self.log.flush()

    # -- reads ---------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``, stopping before ``max_offset``."""
        chunks = self.log.read(offset, max_bytes, max_offset).chunks
        if len(chunks) == 1:
            return self.read_chunk(chunks[0])
        return b"".join(self.read_chunk(c) for c in chunks)

    def batches(self, start_offset: int, end_offset: int) -> list[tuple[BatchHeader, bytes]]:
        """Whole batches from ``start_offset`` that end at or below ``end_offset``, each with the
        buffer its header's ``position`` points into."""
        out: list[tuple[BatchHeader, bytes]] = []
        offset = start_offset
        while offset < end_offset:
            data = self.read(offset, 1 << 20, max_offset=end_offset)
            if not data:
                break
            progressed = False
            for header in iter_headers(data):
                if header.next_offset > end_offset:
                    return out
                if header.base_offset >= offset:
                    out.append((header, data))
                    offset = header.next_offset
                    progressed = True
            if not progressed:
                break
        return out

    # -- divergence ----------------------------------------------------------------------------

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> OffsetValidation:
        """What the leader answers a fetch at (``offset``, last fetched ``epoch``) (Kafka's
        ``validateOffsetAndEpoch``): valid, diverging (with where to truncate to) or snapshot."""
        snapshot = self.snapshots.latest()
        if offset < self.start_offset:
            if snapshot is None:
                return Diverging(OffsetAndEpoch(self.start_offset, 0))
            return SnapshotNeeded(snapshot.snapshot_id)
        if snapshot is not None and offset == snapshot.snapshot_id.offset == self.start_offset:
            if epoch == snapshot.snapshot_id.epoch:
                return ValidOffset()
            return SnapshotNeeded(snapshot.snapshot_id)
        if offset == 0 and self.start_offset == 0:
            return ValidOffset()
        found_epoch, found_end = self.log.end_offset_for_epoch(epoch)
        if found_epoch < 0:
            # Nothing at or below that epoch here (or the fetcher is ahead of every epoch we know).
            if snapshot is not None:
                return SnapshotNeeded(snapshot.snapshot_id)
            return Diverging(OffsetAndEpoch(self.start_offset, 0))
        if found_epoch != epoch or found_end < offset:
            return Diverging(OffsetAndEpoch(found_end, found_epoch))
        return ValidOffset()

    def truncate_to_diverging(self, diverging: OffsetAndEpoch, high_watermark: int | None) -> int:
        """Truncate to where the local log leaves the leader's (Kafka's ``truncateToEndOffset``)."""
        local_epoch, local_end = self.log.end_offset_for_epoch(diverging.epoch)
        if local_epoch < 0:
            target = self.start_offset
        elif local_epoch == diverging.epoch:
            target = min(local_end, diverging.offset)
        else:
            target = min(local_end, diverging.offset)
        target = max(target, self.start_offset)
        if high_watermark is not None and target < high_watermark:
            raise RaftSafetyError(f"truncation to {target} is below the high watermark {high_watermark}")
        self.log.truncate_to(target)
        return target

    # -- snapshots -----------------------------------------------------------------------------

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshots.latest()

    def create_snapshot(self, end_offset: int, data: bytes) -> Snapshot:
        """Keep ``data`` as the state up to ``end_offset`` (exclusive), and let the log start there."""
        if end_offset > self.end_offset or end_offset <= 0:
            raise ValueError(f"snapshot end {end_offset} is outside the log (end {self.end_offset})")
        snapshot = Snapshot(OffsetAndEpoch(end_offset, self.epoch_at(end_offset - 1)), data)
        self.snapshots.save(snapshot)
        if end_offset > self.start_offset:
            self.log.advance_log_start_offset(end_offset)
        return snapshot

    def install_snapshot(self, snapshot: Snapshot) -> None:
        """A fetched snapshot replaces the whole log, which restarts empty at its end offset."""
        self.snapshots.save(snapshot)
        self.log.truncate_fully_and_start_at(snapshot.snapshot_id.offset)
