"""The file-backed storage port: Kafka's on-disk format under one or more log directories.

:class:`reference_impl.log.dir_set.LogDirSet` does the work (one
:class:`~reference_impl.log.manager.LogManager` per directory of ``log.dirs``, placement, moves,
failed directories); this adapter adds what only the shell may do (ask the OS how full each
volume is) and turns an unusable directory into a message for the operator.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from reference_impl.core.ports import LogDirInfo, LogStore, TopicPartition
from reference_impl.log.api import Chunk, PartitionLog
from reference_impl.log.dir_set import LogDirSet, parse_log_dirs
from reference_impl.log.manager import LogDirError


class StorageError(RuntimeError):
    """The data directory cannot be used (message says why)."""


class FileLogStore:
    """:class:`LogStore` over a :class:`LogDirSet`."""

    def __init__(self, dirs: LogDirSet) -> None:
        self.dirs = dirs

    @property
    def log_dir(self) -> str:
        return self.dirs.metadata_dir

    def log_dirs(self) -> list[LogDirInfo]:
        out = []
        for path in self.dirs.paths:
            total, usable = self.dirs.disk_usage(path)
            out.append(
                LogDirInfo(
                    path,
                    self.dirs.directory_id(path),
                    self.dirs.is_online(path),
                    total,
                    usable,
                    tuple(self.dirs.logs_in(path)),
                )
            )
        return out

    def dir_of(self, topic: str, partition: int) -> str | None:
        return self.dirs.dir_of(topic, partition)

    def set_preferred_dir(self, topic: str, partition: int, path: str) -> None:
        self.dirs.set_preferred_dir(topic, partition, path)

    def move_log(
        self,
        topic: str,
        partition: int,
        dest: str,
        topic_id: uuid.UUID,
        configs: Mapping[str, str],
        now_ms: int,
    ) -> PartitionLog:
        return self.dirs.move_log(topic, partition, dest, topic_id, configs, now_ms)

    @property
    def failure_count(self) -> int:
        return self.dirs.failure_count

    def open_log(
        self, topic: str, partition: int, topic_id: uuid.UUID, configs: Mapping[str, str], now_ms: int
    ) -> PartitionLog:
        return self.dirs.open_log(topic, partition, topic_id, configs, now_ms)

    def update_configs(self, topic: str, partition: int, configs: Mapping[str, str]) -> None:
        self.dirs.update_configs(topic, partition, configs)

    def delete_log(self, topic: str, partition: int) -> None:
        self.dirs.delete_log(topic, partition)

    def existing_logs(self) -> list[TopicPartition]:
        return self.dirs.existing_logs()

    def read_chunk(self, chunk: Chunk) -> bytes:
        return self.dirs.read_chunk(chunk)

    def size_bytes(self, topic: str, partition: int) -> int:
        return self.dirs.size_bytes(topic, partition)

    def disk_usage(self) -> tuple[int, int]:
        return self.dirs.disk_usage(self.dirs.metadata_dir)

    def maintain(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int]) -> None:
        self.dirs.maintain(now_ms, high_watermarks)

    def clean(self, now_ms: int, stable_offsets: Mapping[TopicPartition, int]) -> bool:
        return self.dirs.clean(now_ms, stable_offsets)

    def checkpoint(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        self.dirs.checkpoint(high_watermarks)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return self.dirs.high_watermarks()

    def close(self) -> None:
        self.dirs.close()


def log_dir_paths(data_dir: str | None, log_dirs: str | None, log_dir: str | None) -> list[str]:
    """The broker's log directories: ``log.dirs``, else ``log.dir``, else ``--data-dir`` (Kafka's
    ``KafkaConfig.logDirs``: ``log.dirs`` falls back to ``log.dir``). ``--data-dir``, when given with
    them, is the metadata directory (Kafka's ``metadata.log.dir``): it must be one of them and goes
    first. Raises ValueError."""
    configured = log_dirs or log_dir
    if not configured:
        if not data_dir:
            raise ValueError("--data-dir (or log.dirs) is required with file storage")
        return parse_log_dirs(data_dir)
    paths = parse_log_dirs(configured)
    if data_dir:
        (metadata,) = parse_log_dirs(data_dir)
        if metadata not in paths:
            raise ValueError(f"--data-dir {data_dir} is not one of log.dirs ({', '.join(paths)})")
        paths.remove(metadata)
        paths.insert(0, metadata)
    return paths


def open_file_store(
    data_dir: str | Sequence[str], node_id: int, cluster_id: str | None, now_ms: int
) -> tuple[LogStore, str]:
    """Open (or create) the log directories; returns the store and the cluster id they belong to."""
    paths = [data_dir] if isinstance(data_dir, str) else list(data_dir)
    try:
        dirs = LogDirSet(paths, node_id=node_id, cluster_id=cluster_id)
    except (LogDirError, OSError) as exc:
        raise StorageError(f"cannot use data directory {', '.join(paths)}: {exc}") from None
    return FileLogStore(dirs), dirs.cluster_id
