"""A partition log whose I/O errors take its log directory offline, and the log of an offline replica.

Kafka routes every ``IOException`` of a log through ``LogDirFailureChannel.maybeAddOfflineLogDir``
(``storage/src/main/java/org/apache/kafka/storage/internals/log/LogDirFailureChannel.java``) and
answers the request that met it with ``KafkaStorageException`` (KAFKA_STORAGE_ERROR); the replica
manager then marks every partition of that directory offline (``ReplicaManager.handleLogDirFailure``,
``core/src/main/scala/kafka/server/ReplicaManager.scala``). :class:`GuardedLog` is that channel for
one log: an ``OSError`` from the file-backed log reports the directory through ``on_failure`` and
becomes a :class:`LogDirOfflineError`. :class:`FailedLog` stands in for the log of a partition whose
directory is offline: it holds nothing and refuses every read and write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.records import BatchHeader

from .api import AppendInfo, EpochEntry, PartitionLog, ReadResult

T = TypeVar("T")


class LogDirOfflineError(KafkaError):
    """KAFKA_STORAGE_ERROR: the partition's log directory is offline (Kafka's KafkaStorageException)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.kafka_storage_error, message)


class GuardedLog:
    """A :class:`PartitionLog` over ``inner`` in directory ``path``: an ``OSError`` takes ``path`` offline."""

    def __init__(self, inner: PartitionLog, path: str, on_failure: Callable[[str, OSError], None]) -> None:
        self.inner = inner
        self.path = path
        self._on_failure = on_failure

    def _call(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except OSError as exc:
            self._on_failure(self.path, exc)
            raise LogDirOfflineError(f"log directory {self.path} failed: {exc}") from None

    @property
    def log_start_offset(self) -> int:
        return self.inner.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.inner.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self.inner.recovery_point

    @property
    def version(self) -> int:
        return self.inner.version

    def append_as_leader(self, records: bytearray, leader_epoch: int, now_ms: int) -> AppendInfo:
        return self._call(lambda: self.inner.append_as_leader(records, leader_epoch, now_ms))

    def append_as_follower(self, records: bytes) -> AppendInfo:
        return self._call(lambda: self.inner.append_as_follower(records))

    def read(
        self, offset: int, max_bytes: int, max_offset: int | None = None, min_one_batch: bool = True
    ) -> ReadResult:
        return self._call(lambda: self.inner.read(offset, max_bytes, max_offset, min_one_batch))

    def batch_headers(self, start_offset: int = 0) -> list[BatchHeader]:
        return self._call(lambda: self.inner.batch_headers(start_offset))

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        return self._call(lambda: self.inner.offset_for_timestamp(timestamp_ms))

    def max_timestamp(self) -> tuple[int, int] | None:
        return self._call(self.inner.max_timestamp)

    def truncate_to(self, offset: int) -> None:
        self._call(lambda: self.inner.truncate_to(offset))

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._call(lambda: self.inner.truncate_fully_and_start_at(offset))

    def advance_log_start_offset(self, offset: int) -> None:
        self._call(lambda: self.inner.advance_log_start_offset(offset))

    def flush(self, offset: int | None = None) -> None:
        self._call(lambda: self.inner.flush(offset))

    def epoch_entries(self) -> list[EpochEntry]:
        return self.inner.epoch_entries()

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        self._call(lambda: self.inner.assign_epoch(epoch, start_offset))

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.inner.end_offset_for_epoch(epoch)

    def close(self) -> None:
        self._call(self.inner.close)


class FailedLog:
    """The log of a replica whose directory is offline: empty, and every read or write is refused."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _refuse(self) -> LogDirOfflineError:
        return LogDirOfflineError(f"log directory {self.path} is offline")

    @property
    def log_start_offset(self) -> int:
        return 0

    @property
    def log_end_offset(self) -> int:
        return 0

    @property
    def recovery_point(self) -> int:
        return 0

    @property
    def version(self) -> int:
        return 0  # never changes: a failed log stays empty (a replaced log is another object)

    def append_as_leader(self, records: bytearray, leader_epoch: int, now_ms: int) -> AppendInfo:
        raise self._refuse()

    def append_as_follower(self, records: bytes) -> AppendInfo:
        raise self._refuse()

    def read(
        self, offset: int, max_bytes: int, max_offset: int | None = None, min_one_batch: bool = True
    ) -> ReadResult:
        raise self._refuse()

    def batch_headers(self, start_offset: int = 0) -> list[BatchHeader]:
        return []

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        raise self._refuse()

    def max_timestamp(self) -> tuple[int, int] | None:
        raise self._refuse()

    def truncate_to(self, offset: int) -> None:
        raise self._refuse()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        raise self._refuse()

    def advance_log_start_offset(self, offset: int) -> None:
        raise self._refuse()

    def flush(self, offset: int | None = None) -> None:
        return None

    def epoch_entries(self) -> list[EpochEntry]:
        return []

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        raise self._refuse()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        raise self._refuse()

    def close(self) -> None:
        return None
