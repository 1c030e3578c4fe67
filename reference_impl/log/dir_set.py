"""Several log directories (JBOD): Kafka's ``log.dirs``, each a :class:`LogManager` of its own.

Kafka's ``LogManager`` (``core/src/main/scala/kafka/log/LogManager.scala``) keeps every directory
of ``log.dirs`` with its own ``meta.properties`` (KRaft: ``cluster.id``, ``node.id`` and, since
KIP-858, a ``directory.id`` unique to the directory), its own checkpoints and its own lock. This is
that, over one :class:`~.manager.LogManager` per directory:

* **Placement.** A new partition goes to the online directory holding the fewest partitions
  (``LogManager.nextLogDirs``: ties in configured order), unless AlterReplicaLogDirs named one for
  it first (``preferredLogDirs``). The metadata log stays in the first directory (Kafka's
  ``metadata.log.dir`` defaults to the first of ``log.dirs``).
* **Moves** (AlterReplicaLogDirs). Kafka copies into a future log ``<topic>-<p>.<id>-future`` with a
  ``ReplicaAlterLogDirsThread`` while the current log keeps serving, and swaps when the future log
  caught up (``UnifiedLog.logFutureDirName``, ``LogManager.replaceCurrentWithFutureLog``). Here the
  copy is done at once, inside the call, while the broker (single-threaded) serves nothing else,
  so the partition is consistent throughout: flush, copy to ``...-future`` in the destination,
  rename it to ``<topic>-<p>``, then delete the source (renamed ``-delete`` first). A crash after
  the rename and before the delete leaves the partition in two directories; as Kafka, the next
  start refuses (``LogDirError``) and the operator removes one.
* **Failure.** An ``OSError`` from a log, a checkpoint or a scan takes that directory offline
  (Kafka's ``LogDirFailureChannel``): its logs are dropped unflushed, its partitions answer
  KAFKA_STORAGE_ERROR (:class:`~.guarded.FailedLog`), and :attr:`failure_count` moves so the broker
  notices. The other directories keep serving. A directory that cannot be opened at start is
  offline from the start (the first, which holds the metadata log, must open). Kafka brings a
  failed directory back only with a restart, as here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .api import Chunk, FileRegion, PartitionLog
from .checkpoints import TopicPartition
from .config import LogConfig
from .files import RegionReadError, fsync_dir, read_region
from .guarded import FailedLog, GuardedLog, LogDirOfflineError
from .manager import LogDirError, LogManager, partition_dir_name

log = logging.getLogger(__name__)

MAX_LOG_DIRS = 64
"""How many directories ``log.dirs`` may name (a bound on what a flag makes the broker open)."""
FUTURE_DIR_SUFFIX = "-future"
METADATA_TOPIC = "__cluster_metadata"


def parse_log_dirs(value: str) -> list[str]:
    """``log.dirs``: comma-separated paths, made absolute, duplicates dropped, at most
    :data:`MAX_LOG_DIRS`."""
    paths: list[str] = []
    for raw in value.split(","):
        path = raw.strip()
        if not path:
            continue
        path = os.path.abspath(path)
        if path not in paths:
            paths.append(path)
    if not paths:
        raise ValueError("log.dirs names no directory")
    if len(paths) > MAX_LOG_DIRS:
        raise ValueError(f"log.dirs names {len(paths)} directories; at most {MAX_LOG_DIRS}")
    return paths


def next_log_dir(live: Sequence[str], counts: Mapping[str, int]) -> str:
    """The live directory holding the fewest partitions, the first configured among equals
    (Kafka's ``LogManager.nextLogDirs``)."""
    if not live:
        raise LogDirOfflineError("every log directory is offline")
    return min(live, key=lambda path: (counts.get(path, 0), live.index(path)))


def future_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<p>.<32 hex>-future`` (Kafka's ``UnifiedLog.logFutureDirName``)."""
    return f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


@dataclass
class _Dir:
    path: str
    manager: LogManager | None
    directory_id: uuid.UUID | None
    error: str | None = None

    @property
    def online(self) -> bool:
        return self.manager is not None and self.error is None


class LogDirSet:
    """Every log directory of a broker; the partition logs placed across them."""

    def __init__(
        self,
        paths: Sequence[str],
        *,
        node_id: int,
        cluster_id: str | None = None,
        default_config: LogConfig | None = None,
    ) -> None:
        if not paths:
            raise LogDirError("no log directory")
        self.failure_count = 0
        """Moves each time a directory goes offline (the broker compares it, as a generation)."""
        self._dirs: dict[str, _Dir] = {}
        first = LogManager(paths[0], node_id=node_id, cluster_id=cluster_id, default_config=default_config)
        self.cluster_id = first.cluster_id
        opened = [first]
        self._dirs[first.data_dir] = _Dir(first.data_dir, first, first.meta.directory_id)
        try:
            for path in paths[1:]:
                path = os.path.abspath(path)
                try:
                    manager = LogManager(
                        path, node_id=node_id, cluster_id=self.cluster_id, default_config=default_config
                    )
                except OSError as exc:  # unusable from the start: offline (Kafka's offline dirs at startup)
                    log.error("log directory %s is offline: %s", path, exc)
                    self._dirs[path] = _Dir(path, None, None, str(exc))
                    self.failure_count += 1
                    continue
                opened.append(manager)
                self._dirs[path] = _Dir(path, manager, manager.meta.directory_id)
            ids = [d.directory_id for d in self._dirs.values() if d.directory_id is not None]
            if len(set(ids)) != len(ids):
                raise LogDirError("two log directories carry the same directory.id in meta.properties")
            self._where: dict[TopicPartition, str] = {}
            for state in self._dirs.values():
                if state.manager is None:
                    continue
                for key in state.manager.existing_logs():
                    other = self._where.get(key)
                    if other is not None:  # Kafka's loadLog: "Duplicate log directories ... are found"
                        raise LogDirError(
                            f"{key[0]}-{key[1]} is in both {other} and {state.path}: remove one (a move "
                            "was interrupted between its rename and its delete)"
                        )
                    self._where[key] = state.path
        except BaseException:
            for manager in opened:
                manager.abandon()
            raise
        self._logs: dict[TopicPartition, GuardedLog] = {}
        self._preferred: dict[TopicPartition, str] = {}

    # -- directories -----------------------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        return list(self._dirs)

    @property
    def metadata_dir(self) -> str:
        return next(iter(self._dirs))

    def directory_id(self, path: str) -> uuid.UUID | None:
        state = self._dirs.get(path)
        return None if state is None else state.directory_id

    def is_online(self, path: str) -> bool:
        state = self._dirs.get(path)
        return state is not None and state.online

    def error(self, path: str) -> str | None:
        state = self._dirs.get(path)
        return None if state is None else state.error

    def live_dirs(self) -> list[str]:
        return [path for path, state in self._dirs.items() if state.online]

    def disk_usage(self, path: str) -> tuple[int, int]:
        """(total, usable) bytes of the volume holding ``path``; (-1, -1) if unknown."""
        state = self._dirs.get(path)
        if state is None or state.manager is None or not state.online:
            return (-1, -1)
        return state.manager.disk_usage()

    def fail(self, path: str, exc: BaseException) -> None:
        """Take ``path`` offline: its logs are dropped without writing anything more."""
        state = self._dirs.get(path)
        if state is None or state.error is not None:
            return
        state.error = str(exc) or type(exc).__name__
        self.failure_count += 1
        log.error("log directory %s failed and is offline: %s", path, state.error)
        for key in [k for k, where in self._where.items() if where == path]:
            self._logs.pop(key, None)
        if state.manager is not None:
            with contextlib.suppress(OSError):
                state.manager.abandon()

    def _guarded(self, fn: Callable[[LogManager], None]) -> None:
        for state in list(self._dirs.values()):
            if state.online and state.manager is not None:
                try:
                    fn(state.manager)
                except OSError as exc:
                    self.fail(state.path, exc)

    # -- partitions ------------------------------------------------------------------------------

    def dir_of(self, topic: str, partition: int) -> str | None:
        return self._where.get((topic, partition))

    def set_preferred_dir(self, topic: str, partition: int, path: str) -> None:
        """Where the partition goes when it is created here (AlterReplicaLogDirs before it exists)."""
        self._preferred[(topic, partition)] = path

    def _placement(self, key: TopicPartition) -> str:
        where = self._where.get(key)
        if where is not None:
            return where
        if key[0] == METADATA_TOPIC:
            return self.metadata_dir
        preferred = self._preferred.pop(key, None)
        live = self.live_dirs()
        if preferred is not None and preferred in live:
            return preferred
        counts: dict[str, int] = {}
        for path in self._where.values():
            counts[path] = counts.get(path, 0) + 1
        return next_log_dir(live, counts)

    def open_log(
        self, topic: str, partition: int, topic_id: uuid.UUID | None, configs: Mapping[str, str], now_ms: int
    ) -> PartitionLog:
        """The partition's log, placed in a directory if new; a :class:`FailedLog` if its directory is
        offline (the caller marks the replica offline)."""
        key = (topic, partition)
        path = self._placement(key)
        state = self._dirs[path]
        if not state.online or state.manager is None:
            self._where[key] = path
            return FailedLog(path)
        try:
            opened = state.manager.open_log(topic, partition, topic_id, configs, now_ms)
        except OSError as exc:
            self.fail(path, exc)
            self._where[key] = path
            return FailedLog(path)
        self._where[key] = path
        guarded = self._logs.get(key)
        if guarded is None or guarded.inner is not opened:
            guarded = self._logs[key] = GuardedLog(opened, path, self.fail)
        return guarded

    def update_configs(self, topic: str, partition: int, configs: Mapping[str, str]) -> None:
        manager = self._manager_of(topic, partition)
        if manager is not None:
            manager.update_configs(topic, partition, configs)

    def _manager_of(self, topic: str, partition: int) -> LogManager | None:
        path = self._where.get((topic, partition))
        state = None if path is None else self._dirs[path]
        return state.manager if state is not None and state.online else None

    def delete_log(self, topic: str, partition: int) -> None:
        key = (topic, partition)
        manager = self._manager_of(topic, partition)
        path = self._where.pop(key, None)
        self._logs.pop(key, None)
        if manager is not None and path is not None:
            try:
                manager.delete_log(topic, partition)
            except OSError as exc:
                self.fail(path, exc)

    def existing_logs(self) -> list[TopicPartition]:
        return sorted(key for key, path in self._where.items() if self.is_online(path))

    def logs_in(self, path: str) -> list[TopicPartition]:
        return sorted(key for key, where in self._where.items() if where == path)

    def size_bytes(self, topic: str, partition: int) -> int:
        manager = self._manager_of(topic, partition)
        return 0 if manager is None else manager.size_bytes(topic, partition)

    def read_chunk(self, chunk: Chunk) -> bytes:
        if isinstance(chunk, bytes):
            return chunk
        try:
            return read_region(chunk)
        except RegionReadError:
            raise
        except OSError as exc:
            path = self._dir_of_file(chunk)
            if path is not None:
                self.fail(path, exc)
                raise LogDirOfflineError(f"log directory {path} failed: {exc}") from None
            raise

    def _dir_of_file(self, region: FileRegion) -> str | None:
        for path in self._dirs:
            if region.path.startswith(path + os.sep):
                return path
        return None

    # -- moving a replica between directories ----------------------------------------------------

    def move_log(
        self,
        topic: str,
        partition: int,
        dest: str,
        topic_id: uuid.UUID | None,
        configs: Mapping[str, str],
        now_ms: int,
    ) -> PartitionLog:
        """Copy the partition's log into ``dest`` and swap (see the module docstring); the new log.

        Raises :class:`LogDirOfflineError` when either directory is (or goes) offline; the source
        log is untouched unless the source itself failed."""
        key = (topic, partition)
        src = self._where.get(key)
        if src is None:
            raise KeyError(key)
        if src == dest:
            return self.open_log(topic, partition, topic_id, configs, now_ms)
        source, target = self._dirs[src], self._dirs[dest]
        if not source.online or source.manager is None:
            raise LogDirOfflineError(f"log directory {src} is offline")
        if not target.online or target.manager is None:
            raise LogDirOfflineError(f"log directory {dest} is offline")
        current = source.manager.get(topic, partition)
        if current is None:
            self.open_log(topic, partition, topic_id, configs, now_ms)
            current = source.manager.get(topic, partition)
            if current is None:
                raise LogDirOfflineError(f"log directory {src} is offline")
        name = partition_dir_name(topic, partition)
        future = os.path.join(dest, future_dir_name(topic, partition))
        try:
            current.flush()
            recovery_point, log_start = current.recovery_point, current.log_start_offset
            high_watermark = source.manager.high_watermarks().get(key)
            _copy_tree(os.path.join(src, name), future)
        except OSError as exc:
            shutil.rmtree(future, ignore_errors=True)
            failed = dest if str(getattr(exc, "filename", "") or "").startswith(dest) else src
            self.fail(failed, exc)
            raise LogDirOfflineError(f"moving {name} to {dest} failed: {exc}") from None
        try:
            os.rename(future, os.path.join(dest, name))
            fsync_dir(dest)
            target.manager.adopt(topic, partition, recovery_point, log_start, high_watermark)
        except OSError as exc:
            shutil.rmtree(future, ignore_errors=True)
            self.fail(dest, exc)
            raise LogDirOfflineError(f"moving {name} to {dest} failed: {exc}") from None
        self._logs.pop(key, None)
        self._where[key] = dest
        try:
            source.manager.delete_log(topic, partition)
        except OSError as exc:
            self.fail(src, exc)
        log.info(
            "moved %s from %s to %s (offsets %d..%d)", name, src, dest, log_start, current.log_end_offset
        )
        return self.open_log(topic, partition, topic_id, configs, now_ms)

    # -- periodic work and stopping -----------------------------------------------------------

    def maintain(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int]) -> None:
        self._guarded(lambda m: m.maintain(now_ms, high_watermarks))

    def clean(self, now_ms: int, stable_offsets: Mapping[TopicPartition, int]) -> bool:
        more = False
        for state in list(self._dirs.values()):
            if state.online and state.manager is not None:
                try:
                    more = state.manager.clean(now_ms, stable_offsets) or more
                except OSError as exc:
                    self.fail(state.path, exc)
        return more

    def checkpoint(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        self._guarded(lambda m: m.checkpoint(high_watermarks))

    def high_watermarks(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for state in self._dirs.values():
            if state.online and state.manager is not None:
                out.update(state.manager.high_watermarks())
        return out

    def close(self) -> None:
        self._guarded(lambda m: m.close())

    def abandon(self) -> None:
        for state in self._dirs.values():
            if state.manager is not None:
                state.manager.abandon()

    def managers(self) -> Iterable[LogManager]:
        return [s.manager for s in self._dirs.values() if s.manager is not None and s.online]


def _copy_tree(source: str, target: str) -> None:
    """Copy a partition directory and make the copy durable (files, then the directory's names)."""
    os.makedirs(target)
    for entry in sorted(os.listdir(source)):
        path = os.path.join(source, entry)
        if not os.path.isfile(path):
            continue
        copied = os.path.join(target, entry)
        shutil.copyfile(path, copied)
        fd = os.open(copied, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fsync_dir(target)
    fsync_dir(os.path.dirname(target))
