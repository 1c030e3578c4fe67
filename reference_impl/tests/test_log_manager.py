"""The log manager: a KRaft data directory, its partition directories and checkpoint files."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from reference_impl.log.checkpoints import kafka_uuid_string, read_meta_properties
from reference_impl.log.config import LogConfig
from reference_impl.log.manager import LogDirError, LogManager, parse_partition_dir
from reference_impl.log.testing import make_batch, read_bytes

TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0")
SMALL = {"segment.bytes": "1048576", "internal.segment.bytes": "600"}


def _manager(path: Path, **kwargs: object) -> LogManager:
    return LogManager(str(path), node_id=1, cluster_id="test-cluster", **kwargs)  # type: ignore[arg-type]


def _produce(manager: LogManager, topic: str, partition: int, batches: int) -> None:
    log = manager.open_log(topic, partition, TOPIC_ID, SMALL, 1_000)
    for _ in range(batches):
        log.append_as_leader(make_batch(2, value_size=60), 3, 1_000)


def test_directory_layout_is_kafkas(tmp_path: Path) -> None:
    """A KRaft log dir: meta.properties v1, <topic>-<partition>/ with 20-digit segment files,
    leader-epoch-checkpoint and partition.metadata (topic id)."""
    manager = _manager(tmp_path)
    _produce(manager, "orders.v2", 3, 20)
    meta = read_meta_properties(str(tmp_path))
    assert meta is not None and meta.node_id == 1 and meta.cluster_id == "test-cluster"
    assert meta.directory_id is not None
    names = set(os.listdir(tmp_path / "orders.v2-3"))
    assert {
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
        "leader-epoch-checkpoint",
        "partition.metadata",
    } <= names
    assert (
        tmp_path / "orders.v2-3" / "partition.metadata"
    ).read_text() == f"version: 0\ntopic_id: {kafka_uuid_string(TOPIC_ID)}\n"
    assert manager.existing_logs() == [("orders.v2", 3)]
    manager.close()


def test_clean_close_writes_checkpoints_and_the_marker(tmp_path: Path) -> None:
    """LogManager.shutdown: flush, checkpoint recovery points, log starts and high watermarks in
    Kafka's text format, then write .kafka_cleanshutdown; the next start removes it and skips recovery."""
    manager = _manager(tmp_path)
    _produce(manager, "a", 0, 12)
    _produce(manager, "b", 1, 2)
    log_a = manager.get("a", 0)
    assert log_a is not None
    log_a.advance_log_start_offset(5)
    manager.checkpoint({("a", 0): 20, ("b", 1): 4})
    manager.close()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n2\na 0 24\nb 1 4\n"
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\na 0 5\n"
    assert (tmp_path / "replication-offset-checkpoint").read_text() == "0\n2\na 0 20\nb 1 4\n"

    again = _manager(tmp_path)
    assert again.clean_start and not (tmp_path / ".kafka_cleanshutdown").exists()
    assert again.high_watermarks() == {("a", 0): 20, ("b", 1): 4}
    reopened = again.open_log("a", 0, TOPIC_ID, SMALL, 2_000)
    assert reopened.load_report.recovered_segments == []
    assert (reopened.log_start_offset, reopened.log_end_offset) == (5, 24)
    again.close()


def test_only_one_broker_uses_a_directory(tmp_path: Path) -> None:
    """Kafka locks each log dir (.lock): a second broker on the same directory is refused."""
    first = _manager(tmp_path)
    with pytest.raises(LogDirError, match="in use"):
        _manager(tmp_path)
    first.close()
    _manager(tmp_path).close()


def test_directory_of_another_node_or_cluster_is_refused(tmp_path: Path) -> None:
    """meta.properties ties a directory to its node.id and cluster.id; a mismatch stops the broker."""
    _manager(tmp_path).close()
    with pytest.raises(LogDirError, match=r"node\.id 1"):
        LogManager(str(tmp_path), node_id=2)
    with pytest.raises(LogDirError, match="cluster"):
        LogManager(str(tmp_path), node_id=1, cluster_id="other")
    adopted = LogManager(str(tmp_path), node_id=1)
    assert adopted.cluster_id == "test-cluster"
    adopted.close()


def test_crash_then_restart_recovers_on_open(tmp_path: Path) -> None:
    """No clean-shutdown marker: each log recovers from its checkpointed recovery point when opened."""
    manager = _manager(tmp_path)
    _produce(manager, "t", 0, 15)
    log = manager.get("t", 0)
    assert log is not None
    before = read_bytes(log.read(0, 1 << 30))
    last = log.segments[-1]
    manager.abandon()
    with open(last.log_path, "r+b") as handle:
        handle.truncate(last.size - 5)
    again = _manager(tmp_path)
    assert not again.clean_start
    recovered = again.open_log("t", 0, TOPIC_ID, SMALL, 2_000)
    assert recovered.load_report.truncated_bytes > 0
    assert before.startswith(read_bytes(recovered.read(0, 1 << 30)))
    again.close()


def test_close_after_a_crash_recovers_logs_never_opened(tmp_path: Path) -> None:
    """The clean-shutdown marker promises every log is consistent, so logs not opened since a crash
    are recovered before it is written."""
    manager = _manager(tmp_path)
    _produce(manager, "t", 0, 4)
    log = manager.get("t", 0)
    assert log is not None
    path, size = log.segments[-1].log_path, log.segments[-1].size
    manager.abandon()
    with open(path, "ab") as handle:
        handle.write(b"\x01torn")
    _manager(tmp_path).close()
    assert os.path.getsize(path) == size


def test_truncation_rewrites_the_recovery_point_checkpoint_at_once(tmp_path: Path) -> None:
    """Kafka checkpoints recovery points right after a truncation, so a crash cannot trust bytes
    written over the truncated range."""
    manager = _manager(tmp_path)
    _produce(manager, "t", 0, 10)
    log = manager.get("t", 0)
    assert log is not None
    log.flush()
    manager.checkpoint({})
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 20\n"
    log.truncate_to(6)
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 6\n"
    manager.close()


def test_delete_renames_then_removes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka renames a deleted partition's directory to <topic>-<partition>.<uuid>-delete before
    removing it, and drops it from the checkpoints."""
    manager = _manager(tmp_path)
    _produce(manager, "gone", 2, 3)
    renames: list[str] = []
    real_rename = os.rename

    def recording_rename(source: str, target: str) -> None:
        renames.append(os.path.basename(target))
        real_rename(source, target)

    monkeypatch.setattr(os, "rename", recording_rename)
    manager.delete_log("gone", 2)
    monkeypatch.undo()
    assert len(renames) == 1 and renames[0].startswith("gone-2.") and renames[0].endswith("-delete")
    assert len(renames[0]) == len("gone-2.") + 32 + len("-delete")
    assert not any(name.startswith("gone") for name in os.listdir(tmp_path))
    assert manager.existing_logs() == []
    manager.close()
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n0\n"


def test_interrupted_deletion_is_finished_at_startup(tmp_path: Path) -> None:
    """A -delete directory left by a crash is removed when the broker starts."""
    manager = _manager(tmp_path)
    manager.close()
    leftover = tmp_path / f"t-0.{uuid.uuid4().hex}-delete"
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"old")
    again = _manager(tmp_path)
    assert not leftover.exists() and again.existing_logs() == []
    again.close()


def test_load_all_opens_every_partition_with_its_topic_id(tmp_path: Path) -> None:
    """At startup every <topic>-<partition> directory is found and loaded."""
    manager = _manager(tmp_path)
    for partition in range(3):
        _produce(manager, "t", partition, partition + 1)
    manager.close()
    again = _manager(tmp_path)
    opened = again.load_all(5_000)
    assert [log.log_end_offset for log in opened] == [2, 4, 6]
    assert again.existing_logs() == [("t", 0), ("t", 1), ("t", 2)]
    again.close()


def test_a_recreated_topic_does_not_inherit_old_data(tmp_path: Path) -> None:
    """A directory whose partition.metadata names another topic id belongs to a deleted topic."""
    manager = _manager(tmp_path)
    _produce(manager, "t", 0, 5)
    manager.close()
    again = _manager(tmp_path)
    fresh = again.open_log("t", 0, uuid.uuid4(), {}, 0)
    assert fresh.log_end_offset == 0
    again.close()


def test_maintain_applies_retention_below_the_high_watermark(tmp_path: Path) -> None:
    """The periodic task deletes expired segments, bounded by each partition's high watermark."""
    manager = _manager(tmp_path, default_config=LogConfig(retention_ms=1_000))
    _produce(manager, "t", 0, 20)
    log = manager.get("t", 0)
    assert log is not None and len(log.segments) > 3
    manager.maintain(10**13, {("t", 0): log.segments[2].base_offset})
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert log.segments[0].base_offset <= log.segments[-1].base_offset
    manager.maintain(10**13, {("t", 0): log.log_end_offset})
    assert log.log_start_offset == log.log_end_offset
    manager.close()


def test_illegal_topic_names_never_become_paths() -> None:
    """Kafka topic names are 1-249 of [a-zA-Z0-9._-]; anything else is refused before touching disk,
    a trailing newline included (a ``$`` anchor once let ``nl\n`` through, issue 17 item 6)."""
    from reference_impl.log.manager import partition_dir_name

    for bad in ("", "..", "a/b", "x" * 250, "sp ace", "nl\n", "\nnl"):
        with pytest.raises(ValueError, match="illegal topic"):
            partition_dir_name(bad, 0)
    assert parse_partition_dir("my-topic-12") == ("my-topic", 12)
    assert parse_partition_dir("t-0.0123abc-delete") is None
    assert parse_partition_dir("nl\n-0") is None and parse_partition_dir("t-\u00b2") is None


def test_the_manager_is_the_brokers_storage_port(tmp_path: Path) -> None:
    """The broker core reaches storage through ports.LogStore; the file-backed store (the shell's
    adapter over the log directories' managers) must fit it."""
    from reference_impl.core.ports import LogStore
    from reference_impl.log.dir_set import LogDirSet
    from reference_impl.server.storage import FileLogStore

    store: LogStore = FileLogStore(LogDirSet([str(tmp_path)], node_id=1))
    log = store.open_log("t", 0, TOPIC_ID, {"retention.ms": "1000"}, 0)
    log.append_as_leader(make_batch(2), 0, 0)
    assert store.read_chunk(log.read(0, 1 << 20).chunks[0]) == read_bytes(log.read(0, 1 << 20))
    assert store.size_bytes("t", 0) > 0 and store.existing_logs() == [("t", 0)]
    total, usable = store.disk_usage()
    assert total >= usable >= 0 and total > 0
    store.checkpoint({("t", 0): 2})
    assert store.high_watermarks() == {("t", 0): 2}
    store.close()


def test_creating_a_log_syncs_nothing_until_its_first_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a new log writes no checkpoint: an empty leader-epoch cache needs no file, and the topic
    id is written before the first append (Kafka's PartitionMetadataFile.maybeFlush). Each new log
    cost four fsyncs before: 50 partitions of ``__consumer_offsets`` held a node's event loop for
    1.3 s and the quorum elected three leaders in a row."""
    manager = _manager(tmp_path)
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    for partition in range(5):
        manager.open_log("__consumer_offsets", partition, TOPIC_ID, {}, 1_000)
    assert synced == []
    assert not (tmp_path / "__consumer_offsets-0" / "partition.metadata").exists()
    log = manager.get("__consumer_offsets", 0)
    assert log is not None
    log.append_as_leader(make_batch(1), 1, 1_000)
    assert (tmp_path / "__consumer_offsets-0" / "partition.metadata").read_text().endswith(
        f"topic_id: {kafka_uuid_string(TOPIC_ID)}\n"
    )
    assert synced, "the topic id and the first epoch are written durably at the first append"
    manager.close()


def test_a_crash_before_the_first_append_leaves_the_id_to_the_next_open(tmp_path: Path) -> None:
    """No file after a crash: the next start opens the directory without an id, and the metadata
    image's open records it; it is written with the first append, as for a new log."""
    manager = _manager(tmp_path)
    manager.open_log("t", 0, TOPIC_ID, {}, 1_000)
    manager.abandon()
    again = _manager(tmp_path)
    (loaded,) = again.load_all(2_000)
    assert not loaded.knows_topic_id
    assert again.open_log("t", 0, TOPIC_ID, {}, 2_000) is loaded and loaded.knows_topic_id
    loaded.append_as_leader(make_batch(1), 1, 2_000)
    again.abandon()
    third = _manager(tmp_path)
    (reloaded,) = third.load_all(3_000)
    assert reloaded.knows_topic_id
    assert (tmp_path / "t-0" / "partition.metadata").exists()
    third.abandon()
