"""What a partition's log offers the layers above it (broker, replication, simulator).

Two implementations keep this contract:

* :class:`reference_impl.log.partition_log.FileLog` (file-backed): Kafka's
  on-disk format, segments, indexes, checkpoints, recovery, retention; what
  the broker process runs, through :class:`reference_impl.log.manager.LogManager`.
* :mod:`reference_impl.log.memory` (in-memory): the same semantics with no
  files, plus :meth:`MemoryLog.crash` dropping the unflushed suffix; what the
  deterministic simulator runs and what model-based tests compare against.

The log stores record batches exactly as they came on the wire; the only
bytes it changes are ``baseOffset`` and ``partitionLeaderEpoch`` of batches
appended as leader. It does not know about high watermarks, ISR or
transactions: those belong to the replication and coordinator layers, which
read the log through this interface. It is not thread-safe: its owner
serialises calls.

Offsets follow Kafka's names: the log start offset is the first offset a
reader may fetch; the log end offset (LEO) is the offset the next appended
record will get.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from reference_impl.protocol.records import BatchHeader


@dataclass(frozen=True, slots=True)
class FileRegion:
    """A byte range of a segment file, sent with ``os.sendfile`` by the shell.

    It covers whole batches written before the read. Open the file when the
    region arrives: retention, truncation or topic deletion may remove or
    shorten the file later, and a short read then means the answer is stale
    (:func:`reference_impl.log.files.read_region` raises ``RegionReadError``).
    """

    path: str
    position: int
    length: int
    file_id: int = 0
    """The file's inode when read (0: unchecked). The cleaner replaces a segment by renaming a new
    file over its name, so a region is served only from the file it was read from."""


Chunk = bytes | FileRegion
"""A piece of a fetch answer: bytes in memory, or a region of a file."""


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """What an append did: the offsets it assigned and the timestamps it saw."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time_ms: int
    """-1 unless the topic uses LogAppendTime (then the broker's time, stamped in the batches)."""
    batches: tuple[BatchHeader, ...]
    """Headers of the appended batches, offsets as stored (positions relative to the input)."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole batches starting with the one that holds the requested offset."""

    chunks: tuple[Chunk, ...]
    size: int
    first_batch_offset: int
    """Base offset of the first batch returned, -1 when nothing was read."""

    @classmethod
    def empty(cls) -> ReadResult:
        return cls((), 0, -1)


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """A leader epoch and the first offset written in it (Kafka's leader-epoch-checkpoint line)."""

    epoch: int
    start_offset: int


class OffsetOutOfRangeError(Exception):
    """The requested offset is below the log start offset or above the log end offset."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"offset {offset} is outside [{log_start_offset}, {log_end_offset}]"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class PartitionLog(Protocol):
    """The contract both logs keep. Times are milliseconds passed in by the caller."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def recovery_point(self) -> int:
        """Everything below this offset is flushed (survives a crash)."""
        ...

    @property
    def version(self) -> int:
        """Moves on every change to the log start, the log end or the epoch cache (an append, a
        truncation, a log start moved by DeleteRecords or retention, an epoch assigned): one log
        object at one version has the same offsets and epochs. Callers compare it to tell an
        idle partition in a few attribute reads (issue 22: a follower's fetch session names
        every partition it follows, most of them idle); it may move without a change, never the
        other way."""
        ...

    def append_as_leader(self, records: bytearray, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Append already-validated batches, assigning offsets from the LEO.

        Rewrites each batch's baseOffset and partitionLeaderEpoch in
        ``records`` (hence a bytearray) and, if ``leader_epoch`` is newer than
        the latest cached epoch, records (epoch, first offset) in the epoch cache.
        """
        ...

    def append_as_follower(self, records: bytes) -> AppendInfo:
        """Append batches that already carry offsets and epochs (replica fetch).

        Offsets must start at or after the LEO and increase (ValueError
        otherwise, Kafka's UnexpectedAppendOffsetException). Epoch-cache
        entries follow the batches' partitionLeaderEpoch.
        """
        ...

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Batches from the one holding ``offset``, up to ``max_bytes``.

        ``max_offset`` (exclusive) stops before batches at or above it (a
        consumer reads below the high watermark). With ``min_one_batch`` the
        first batch is returned even if larger than ``max_bytes`` (KIP-74).
        Raises :class:`OffsetOutOfRangeError` outside [log start, LEO].
        """
        ...

    def batch_headers(self, start_offset: int = 0) -> list[BatchHeader]:
        """Headers of every batch whose last offset is at or after ``start_offset`` (and the log start)."""
        ...

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp ≥ ``timestamp_ms``."""
        ...

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp (ListOffsets -3).

        As Kafka 3.8+ (KAFKA-16310): the record's own offset, not its batch's last offset.
        """
        ...

    def truncate_to(self, offset: int) -> None:
        """Drop every record at or after ``offset`` (follower truncation); trims the epoch cache."""
        ...

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything; the log restarts empty at ``offset``."""
        ...

    def advance_log_start_offset(self, offset: int) -> None:
        """Move the log start offset forward (DeleteRecords, retention); never backward."""
        ...

    def flush(self, offset: int | None = None) -> None:
        """Make everything below ``offset`` (default: the LEO) durable."""
        ...

    def epoch_entries(self) -> list[EpochEntry]:
        """The leader-epoch cache, oldest first."""
        ...

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (ignored if not newer)."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(largest epoch ≤ ``epoch``, its end offset), as OffsetForLeaderEpoch answers.

        The end offset of an epoch is the start offset of the next larger
        epoch, or the LEO for the latest epoch. As Kafka's ``endOffsetFor``:
        an epoch below every cached one answers (``epoch``, first start
        offset); one above every cached one, or an empty cache, (-1, -1).
        """
        ...

    def close(self) -> None: ...
