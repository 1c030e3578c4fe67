"""The storage port: how the sans-IO broker reaches partition logs.

The broker process plugs in the file-backed log manager; the simulator and
unit tests plug in :class:`MemoryLogStore`. Calls are synchronous: the
broker owns its logs and serialises access to them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from reference_impl.log.api import Chunk, PartitionLog
from reference_impl.log.memory import MemoryLog

TopicPartition = tuple[str, int]
MEMORY_LOG_DIR = "memory"


@dataclass(frozen=True, slots=True)
class LogDirInfo:
    """One log directory (Kafka's ``log.dirs`` entry) as DescribeLogDirs and the heartbeat see it."""

    path: str
    directory_id: uuid.UUID | None
    """KIP-858's ``directory.id`` from the directory's ``meta.properties`` (None: never opened)."""
    online: bool
    total_bytes: int = -1
    usable_bytes: int = -1
    partitions: tuple[TopicPartition, ...] = ()



class LogStore(Protocol):
    @property
    def log_dir(self) -> str:
        """Where the logs live (DescribeLogDirs names it)."""
        ...

    def open_log(
        self, topic: str, partition: int, topic_id: uuid.UUID, configs: Mapping[str, str], now_ms: int
    ) -> PartitionLog:
        """The partition's log, created empty if it does not exist, loaded (recovered) if it does."""
        ...

    def update_configs(self, topic: str, partition: int, configs: Mapping[str, str]) -> None:
        """Apply changed topic configs (segment.bytes, retention.ms, ...) to an open log."""
        ...

    def delete_log(self, topic: str, partition: int) -> None: ...

    def log_dirs(self) -> list[LogDirInfo]:
        """Every configured log directory, first the one holding the metadata log."""
        ...

    def dir_of(self, topic: str, partition: int) -> str | None:
        """The directory holding the partition's log (None: not placed here)."""
        ...

    def set_preferred_dir(self, topic: str, partition: int, path: str) -> None:
        """Create the partition in ``path`` when it comes (AlterReplicaLogDirs before the replica exists)."""
        ...

    def move_log(
        self,
        topic: str,
        partition: int,
        dest: str,
        topic_id: uuid.UUID,
        configs: Mapping[str, str],
        now_ms: int,
    ) -> PartitionLog:
        """Move the partition's log to directory ``dest`` (AlterReplicaLogDirs); the log to use from now on.
        Raises KafkaError (KAFKA_STORAGE_ERROR) when a directory is offline."""
        ...

    @property
    def failure_count(self) -> int:
        """Moves whenever a log directory goes offline (an I/O error); its partitions' logs then fail."""
        ...

    def existing_logs(self) -> list[TopicPartition]:
        """Partitions with data on disk (found at startup)."""
        ...

    def read_chunk(self, chunk: Chunk) -> bytes:
        """The bytes behind a read result's chunk (a file region is read from its file)."""
        ...

    def size_bytes(self, topic: str, partition: int) -> int: ...

    def disk_usage(self) -> tuple[int, int]:
        """(total, usable) bytes of the volume holding the logs; (-1, -1) when unknown."""
        ...

    def maintain(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Retention (never past a partition's high watermark) and flush policy, called periodically."""
        ...

    def clean(self, now_ms: int, stable_offsets: Mapping[TopicPartition, int]) -> bool:
        """Compact one compacted log below its partition's stable offset; True when more is due at once."""
        ...

    def checkpoint(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Write recovery points, log start offsets and the given high watermarks."""
        ...

    def high_watermarks(self) -> dict[TopicPartition, int]:
        """The high watermarks of the last checkpoint (read at startup)."""
        ...

    def close(self) -> None:
        """Flush and close every log (a clean shutdown)."""
        ...


class MemoryLogStore:
    """Logs in memory: the simulator's store and the unit tests'."""

    def __init__(self) -> None:
        self.logs: dict[TopicPartition, MemoryLog] = {}
        self._high_watermarks: dict[TopicPartition, int] = {}

    @property
    def log_dir(self) -> str:
        return MEMORY_LOG_DIR

    def log_dirs(self) -> list[LogDirInfo]:
        return [LogDirInfo(MEMORY_LOG_DIR, None, True, partitions=tuple(sorted(self.logs)))]

    def dir_of(self, topic: str, partition: int) -> str | None:
        return MEMORY_LOG_DIR if (topic, partition) in self.logs else None

    def set_preferred_dir(self, topic: str, partition: int, path: str) -> None:
        return None

    def move_log(
        self,
        topic: str,
        partition: int,
        dest: str,
        topic_id: uuid.UUID,
        configs: Mapping[str, str],
        now_ms: int,
    ) -> PartitionLog:
        return self.open_log(topic, partition, topic_id, configs, now_ms)

    @property
    def failure_count(self) -> int:
        return 0

    def open_log(
        self, topic: str, partition: int, topic_id: uuid.UUID, configs: Mapping[str, str], now_ms: int
    ) -> PartitionLog:
        log = self.logs.get((topic, partition))
        if log is None:
            log = self.logs[(topic, partition)] = MemoryLog()
        return log

    def update_configs(self, topic: str, partition: int, configs: Mapping[str, str]) -> None:
        return None

    def delete_log(self, topic: str, partition: int) -> None:
        self.logs.pop((topic, partition), None)

    def existing_logs(self) -> list[TopicPartition]:
        return sorted(self.logs)

    def read_chunk(self, chunk: Chunk) -> bytes:
        if isinstance(chunk, bytes):
            return chunk
        raise TypeError("a memory store has no file regions")

    def size_bytes(self, topic: str, partition: int) -> int:
        log = self.logs.get((topic, partition))
        if log is None:
            return 0
        return sum(h.size for h in log.batch_headers())

    def disk_usage(self) -> tuple[int, int]:
        return (-1, -1)

    def maintain(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int]) -> None:
        return None

    def clean(self, now_ms: int, stable_offsets: Mapping[TopicPartition, int]) -> bool:
        return False  # memory logs are not compacted

    def checkpoint(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        self._high_watermarks = dict(high_watermarks)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return dict(self._high_watermarks)

    def close(self) -> None:
        for log in self.logs.values():
            log.flush()
