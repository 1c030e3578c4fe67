"""The file-backed storage port: Kafka's on-disk format under a data directory.

:class:`reference_impl.log.manager.LogManager` does the work; this adapter
adds what only the shell may do (ask the OS how full the volume is) and turns
an unusable directory into a message for the operator.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from reference_impl.core.ports import LogStore, TopicPartition
from reference_impl.log.api import Chunk, PartitionLog
from reference_impl.log.manager import LogDirError, LogManager


class StorageError(RuntimeError):
    """The data directory cannot be used (message says why)."""


class FileLogStore:
    """:class:`LogStore` over a :class:`LogManager`."""

    def __init__(self, manager: LogManager) -> None:
        self.manager = manager

    @property
    def log_dir(self) -> str:
        return self.manager.log_dir

    def open_log(
        self, topic: str, partition: int, topic_id: uuid.UUID, configs: Mapping[str, str], now_ms: int
    ) -> PartitionLog:
        return self.manager.open_log(topic, partition, topic_id, configs, now_ms)

    def update_configs(self, topic: str, partition: int, configs: Mapping[str, str]) -> None:
        self.manager.update_configs(topic, partition, configs)

    def delete_log(self, topic: str, partition: int) -> None:
        self.manager.delete_log(topic, partition)

    def existing_logs(self) -> list[TopicPartition]:
        return self.manager.existing_logs()

    def read_chunk(self, chunk: Chunk) -> bytes:
        return self.manager.read_chunk(chunk)

    def size_bytes(self, topic: str, partition: int) -> int:
        return self.manager.size_bytes(topic, partition)

    def disk_usage(self) -> tuple[int, int]:
        return self.manager.disk_usage()

    def maintain(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int]) -> None:
        self.manager.maintain(now_ms, high_watermarks)

    def clean(self, now_ms: int, stable_offsets: Mapping[TopicPartition, int]) -> bool:
        return self.manager.clean(now_ms, stable_offsets)

    def checkpoint(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        self.manager.checkpoint(high_watermarks)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return self.manager.high_watermarks()

    def close(self) -> None:
        self.manager.close()


def open_file_store(data_dir: str, node_id: int, cluster_id: str | None, now_ms: int) -> tuple[LogStore, str]:
    """Open (or create) the data directory; returns the store and the cluster id it belongs to."""
    try:
        manager = LogManager(data_dir, node_id=node_id, cluster_id=cluster_id)
    except (LogDirError, OSError) as exc:
        raise StorageError(f"cannot use data directory {data_dir}: {exc}") from None
    return FileLogStore(manager), manager.cluster_id
