"""A data directory of partition logs, laid out as a Kafka (KRaft) broker lays out ``log.dirs``.

::

    <data dir>/
      meta.properties                      cluster.id, node.id, directory.id (version 1)
      .lock                                held (flock) while a broker uses the directory
      .kafka_cleanshutdown                 only between a clean stop and the next start
      recovery-point-offset-checkpoint     per partition: below this offset, flushed
      log-start-offset-checkpoint          per partition: the log start, when above the first segment
      replication-offset-checkpoint        per partition: the high watermark the broker last saw
      cleaner-offset-checkpoint            per compacted partition: where its last clean ended
      <topic>-<partition>/                 one FileLog: segments, leader-epoch-checkpoint, partition.metadata

Logs open lazily (:meth:`LogManager.open_log`, when the broker learns of a
partition) or all at once (:meth:`LogManager.load_all`). A clean start (the
marker was there) opens without scanning; otherwise every log recovers from
its checkpointed recovery point when opened, and :meth:`close` recovers the
ones never opened before it writes the marker again. Deleting a log renames
its directory to ``<topic>-<partition>.<uuid>-delete`` first, so a crash
half-way leaves a directory the next start removes.

A checkpoint or metadata file that cannot be read makes the directory
unusable (:class:`LogDirError`), as Kafka takes a log directory offline when
its ``CheckpointFile`` read throws: carrying on without the file once reset
every log start offset, and records DeleteRecords had removed came back.

This is the broker's storage port (``reference_impl.core.ports.LogStore``).
Not thread-safe.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping

from reference_impl.protocol.names import is_legal_topic_name, topic_name_problem

from .api import Chunk
from .checkpoints import (
    CLEAN_SHUTDOWN,
    LOG_START_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    CheckpointError,
    MetaProperties,
    TopicPartition,
    had_clean_shutdown,
    kafka_uuid_string,
    new_kafka_uuid,
    read_meta_properties,
    read_offsets,
    read_partition_metadata,
    write_clean_shutdown,
    write_meta_properties,
    write_offsets,
)
from .cleaning.cleaner import LogCleaner
from .config import LogConfig
from .files import fsync_dir, read_region, remove_if_exists
from .partition_log import FileLog

log = logging.getLogger(__name__)

DELETE_DIR_SUFFIX = "-delete"
LOCK_FILE = ".lock"


class LogDirError(Exception):
    """The data directory cannot be used: locked by another broker, it belongs to another node, or a
    checkpoint in it cannot be read."""


def _unreadable(exc: CheckpointError) -> LogDirError:
    return LogDirError(f"{exc}; the data directory cannot be used until the file is repaired "
                       "(Kafka takes such a log directory offline)")


def partition_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>``, after checking the name is one Kafka accepts (it becomes a path)."""
    problem = topic_name_problem(topic)
    if problem is not None:
        raise ValueError(f"illegal topic name {topic!r}: {problem}")
    if partition < 0:
        raise ValueError(f"illegal partition {partition}")
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> TopicPartition | None:
    """(topic, partition) of a directory name, or None for anything else (``-delete``, ``-future``...)."""
    topic, sep, number = name.rpartition("-")
    if not sep or not (number.isascii() and number.isdigit()) or not is_legal_topic_name(topic):
        return None
    return topic, int(number)


class LogManager:
    """Every partition log in one data directory, and the directory-level files."""

    def __init__(self, data_dir: str, *, node_id: int, cluster_id: str | None = None,
                 default_config: LogConfig | None = None) -> None:
        self.data_dir = os.path.abspath(data_dir)
        os.makedirs(self.data_dir, exist_ok=True)
        self.default_config = default_config or LogConfig()
        self._lock_fd = self._lock()
        try:
            self.meta = self._ensure_meta(node_id, cluster_id)
        except BaseException:
            self._release()
            raise
        try:
            self._recovery_points = self._read_checkpoint(RECOVERY_POINT_CHECKPOINT)
            self._log_starts = self._read_checkpoint(LOG_START_CHECKPOINT)
            self._high_watermarks = self._read_checkpoint(REPLICATION_CHECKPOINT)
        except LogDirError:
            self._release()
            raise
        self.clean_start = had_clean_shutdown(self.data_dir)
        if self.clean_start:
            remove_if_exists(os.path.join(self.data_dir, CLEAN_SHUTDOWN))
            fsync_dir(self.data_dir)
        self._logs: dict[TopicPartition, FileLog] = {}
        self._on_disk: set[TopicPartition] = set()
        try:
            self.cleaner = LogCleaner(self.data_dir)
        except CheckpointError as exc:
            self._release()
            raise _unreadable(exc) from None
        for name in sorted(os.listdir(self.data_dir)):
            path = os.path.join(self.data_dir, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                log.info("removed %s, left by an interrupted topic deletion", name)
            elif (tp := parse_partition_dir(name)) is not None:
                self._on_disk.add(tp)
        log.info("data directory %s: %d partition(s), %s start", self.data_dir, len(self._on_disk),
                 "clean" if self.clean_start else "unclean (logs recover when opened)")

    # -- the directory itself ------------------------------------------------------------------

    def _lock(self) -> int:
        fd = os.open(os.path.join(self.data_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirError(f"data directory {self.data_dir} is in use by another process") from None
        return fd

    def _ensure_meta(self, node_id: int, cluster_id: str | None) -> MetaProperties:
        try:
            meta = read_meta_properties(self.data_dir)
        except CheckpointError as exc:
            raise LogDirError(str(exc)) from None
        if meta is not None:
            if meta.node_id != node_id:
                raise LogDirError(f"{self.data_dir} belongs to node.id {meta.node_id}, not {node_id}")
            if cluster_id is not None and meta.cluster_id != cluster_id:
                raise LogDirError(f"{self.data_dir} belongs to cluster {meta.cluster_id}, not {cluster_id}")
            return meta
        meta = MetaProperties(cluster_id or kafka_uuid_string(new_kafka_uuid()), node_id, new_kafka_uuid())
        write_meta_properties(self.data_dir, meta)
        return meta

    @property
    def log_dir(self) -> str:
        return self.data_dir

    @property
    def cluster_id(self) -> str:
        return self.meta.cluster_id

    def _read_checkpoint(self, name: str) -> dict[TopicPartition, int]:
        try:
            return read_offsets(os.path.join(self.data_dir, name))
        except CheckpointError as exc:
            raise _unreadable(exc) from None

    # -- opening, configuring and deleting logs ------------------------------------------------

    def get(self, topic: str, partition: int) -> FileLog | None:
        return self._logs.get((topic, partition))

    def open_log(self, topic: str, partition: int, topic_id: uuid.UUID | None,
                 configs: Mapping[str, str], now_ms: int) -> FileLog:
        """The partition's log: already open, loaded from disk (recovering after a crash), or new.

        A directory whose ``partition.metadata`` names another topic id holds
        a deleted topic's data (recreated under the same name while this
        broker was away): it is deleted and the log starts empty. An
        unreadable ``partition.metadata`` or ``leader-epoch-checkpoint`` is a
        :class:`LogDirError`.
        """
        key = (topic, partition)
        opened = self._logs.get(key)
        if opened is not None:
            opened.update_config(opened.config.with_changes(configs))
            if topic_id is not None and not opened.knows_topic_id:
                opened.record_topic_id(topic_id)  # loaded after a crash that left no id: the image's
            return opened
        directory = os.path.join(self.data_dir, partition_dir_name(topic, partition))
        if topic_id is not None and os.path.isdir(directory):
            stored = self._stored_topic_id(directory)
            if stored is not None and stored != topic_id:
                log.warning("%s holds topic id %s, not %s: deleting the old topic's data", directory,
                            kafka_uuid_string(stored), kafka_uuid_string(topic_id))
                self._remove_directory(key, directory)
        config = self.default_config.with_changes(configs)
        try:
            opened = FileLog.open(directory, config, now_ms,
                                  recovery_point=self._recovery_points.get(key, 0),
                                  log_start_offset=self._log_starts.get(key, 0),
                                  clean_shutdown=self.clean_start)
        except CheckpointError as exc:
            raise _unreadable(exc) from None
        stored = self._stored_topic_id(directory)
        opened.knows_topic_id = stored is not None
        if topic_id is not None and stored != topic_id:
            opened.record_topic_id(topic_id)
        opened.on_checkpoint_needed = self._on_log_moved
        self._logs[key] = opened
        self._on_disk.add(key)
        report = opened.load_report
        if report.recovered_segments or report.removed_files:
            log.info("%s-%d: recovered %d segment(s), cut %d byte(s), deleted %d segment(s); log ends at %d",
                     topic, partition, len(report.recovered_segments), report.truncated_bytes,
                     len(report.deleted_segments), opened.log_end_offset)
            self._write_durable_checkpoints()
        return opened

    def load_all(self, now_ms: int,
                 configs_for: Callable[[str], Mapping[str, str]] | None = None) -> list[FileLog]:
        """Open every partition found on disk, with its stored topic id and the topic's configs."""
        opened = []
        for topic, partition in sorted(self._on_disk):
            directory = os.path.join(self.data_dir, partition_dir_name(topic, partition))
            topic_id = self._stored_topic_id(directory)
            configs = configs_for(topic) if configs_for is not None else {}
            opened.append(self.open_log(topic, partition, topic_id, configs, now_ms))
        return opened

    @staticmethod
    def _stored_topic_id(directory: str) -> uuid.UUID | None:
        try:
            return read_partition_metadata(directory)
        except CheckpointError as exc:
            raise _unreadable(exc) from None

    def update_configs(self, topic: str, partition: int, configs: Mapping[str, str]) -> None:
        """Apply changed topic configs (AlterConfigs) to an open log."""
        opened = self._logs.get((topic, partition))
        if opened is not None:
            opened.update_config(opened.config.with_changes(configs))

    def delete_log(self, topic: str, partition: int) -> None:
        """Close the log and remove its directory (renamed to ``...-delete`` first, as Kafka does)."""
        key = (topic, partition)
        directory = os.path.join(self.data_dir, partition_dir_name(topic, partition))
        self._remove_directory(key, directory)
        self._write_durable_checkpoints()
        self.cleaner.forget(key)
        self._high_watermarks.pop(key, None)
        write_offsets(os.path.join(self.data_dir, REPLICATION_CHECKPOINT), self._high_watermarks)

    def _remove_directory(self, key: TopicPartition, directory: str) -> None:
        opened = self._logs.pop(key, None)
        if opened is not None:
            opened.abandon()
        self._on_disk.discard(key)
        for table in (self._recovery_points, self._log_starts):
            table.pop(key, None)
        if not os.path.isdir(directory):
            return
        suffix = f"-{key[1]}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        doomed = os.path.join(self.data_dir, key[0][: 255 - len(suffix)] + suffix)
        os.rename(directory, doomed)
        fsync_dir(self.data_dir)
        shutil.rmtree(doomed)

    def adopt(self, topic: str, partition: int, recovery_point: int, log_start_offset: int,
              high_watermark: int | None) -> None:
        """A partition directory another log directory's copy just renamed into place here
        (AlterReplicaLogDirs): take over its checkpointed offsets; it opens with :meth:`open_log`."""
        key = (topic, partition)
        self._on_disk.add(key)
        self._recovery_points[key] = recovery_point
        self._log_starts[key] = log_start_offset
        if high_watermark is not None:
            self._high_watermarks[key] = high_watermark
        self._write_durable_checkpoints()
        write_offsets(os.path.join(self.data_dir, REPLICATION_CHECKPOINT), self._high_watermarks)

    def existing_logs(self) -> list[TopicPartition]:
        """Partitions with a directory here (found at startup or opened since)."""
        return sorted(self._on_disk)

    # -- reads and sizes -----------------------------------------------------------------------

    def read_chunk(self, chunk: Chunk) -> bytes:
        """The bytes behind a read result's chunk; a file region is read from its segment file."""
        return chunk if isinstance(chunk, bytes) else read_region(chunk)

    def size_bytes(self, topic: str, partition: int) -> int:
        opened = self._logs.get((topic, partition))
        return opened.size_bytes if opened is not None else 0

    def disk_usage(self) -> tuple[int, int]:
        """(total, usable) bytes of the volume holding the directory (DescribeLogDirs v4+)."""
        try:
            stats = os.statvfs(self.data_dir)
        except OSError:
            return (-1, -1)
        return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize

    # -- periodic work and checkpoints ---------------------------------------------------------

    def maintain(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int] | None = None) -> None:
        """Retention and the ``flush.ms`` policy for every open log.

        Retention deletes only segments below a partition's high watermark:
        the one given here, else the last one checkpointed, else the log end
        (right for a single-replica partition).
        """
        for key, opened in self._logs.items():
            if high_watermarks is not None and key in high_watermarks:
                bound: int | None = high_watermarks[key]
            else:
                bound = self._high_watermarks.get(key)
            opened.apply_retention(now_ms, bound)
            opened.maybe_flush(now_ms)

    def clean(self, now_ms: int, stable_offsets: Mapping[TopicPartition, int]) -> bool:
        """Compact the compacted log that needs it most, below its stable offset; True if more is due."""
        return self.cleaner.clean(self._logs, stable_offsets, now_ms)

    def checkpoint(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Write the recovery points, log start offsets and the given high watermarks."""
        for key, value in high_watermarks.items():
            if key in self._on_disk:
                self._high_watermarks[key] = value
        write_offsets(os.path.join(self.data_dir, REPLICATION_CHECKPOINT), self._high_watermarks)
        self._write_durable_checkpoints()

    def high_watermarks(self) -> dict[TopicPartition, int]:
        """The high watermarks of the last checkpoint (read at startup, updated by :meth:`checkpoint`)."""
        return dict(self._high_watermarks)

    def _on_log_moved(self, _log: FileLog) -> None:
        self._write_durable_checkpoints()

    def _write_durable_checkpoints(self) -> None:
        """Recovery points and log starts: live values for open logs, the stored ones for the rest."""
        for key, opened in self._logs.items():
            self._recovery_points[key] = opened.recovery_point
            if opened.log_start_offset > opened.segments[0].base_offset:
                self._log_starts[key] = opened.log_start_offset
            else:
                self._log_starts.pop(key, None)
        for table in (self._recovery_points, self._log_starts):
            for key in [k for k in table if k not in self._on_disk]:
                del table[key]
        write_offsets(os.path.join(self.data_dir, RECOVERY_POINT_CHECKPOINT), self._recovery_points)
        write_offsets(os.path.join(self.data_dir, LOG_START_CHECKPOINT), self._log_starts)

    # -- stopping ------------------------------------------------------------------------------

    def close(self, now_ms: int = 0, broker_epoch: int = -1) -> None:
        """A clean stop: flush and close every log, checkpoint, then write the clean-shutdown marker.

        After an unclean start, logs never opened are opened (recovered) first:
        the marker promises the next start that nothing needs scanning.
        """
        if self._lock_fd < 0:
            return
        if not self.clean_start:
            for topic, partition in sorted(self._on_disk - set(self._logs)):
                self.open_log(topic, partition, None, {}, now_ms)
        for opened in self._logs.values():
            opened.close()
        self._write_durable_checkpoints()
        write_offsets(os.path.join(self.data_dir, REPLICATION_CHECKPOINT), self._high_watermarks)
        write_clean_shutdown(self.data_dir, broker_epoch)
        self._logs.clear()
        self._release()

    def abandon(self) -> None:
        """Drop everything without flushing or writing: what a killed broker leaves behind."""
        for opened in self._logs.values():
            opened.abandon()
        self._logs.clear()
        self._release()

    def _release(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
