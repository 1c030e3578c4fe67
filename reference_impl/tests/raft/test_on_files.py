"""The quorum on real files: the Kafka-format partition log, quorum-state and snapshot checkpoints
survive a restart of the process, as a controller's data directory must."""

from __future__ import annotations

import os
import random
from pathlib import Path

from reference_impl.core.raft.api import CommittedBatch, LeaderAndEpoch, RaftConfig
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.messages import OffsetAndEpoch
from reference_impl.core.raft.raft_log import RaftLog, Snapshot
from reference_impl.log.api import Chunk
from reference_impl.log.config import LogConfig
from reference_impl.log.files import read_region
from reference_impl.log.partition_log import FileLog
from reference_impl.server.raft_files import FileQuorumStateStore, FileSnapshotStore


def read_chunk(chunk: Chunk) -> bytes:
    return chunk if isinstance(chunk, bytes) else read_region(chunk)


class Process:
    """One single-voter controller process over a data directory."""

    def __init__(self, directory: Path, now_ms: int) -> None:
        log_dir = str(directory / "__cluster_metadata-0")
        self.file_log = FileLog.open(log_dir, LogConfig(segment_bytes=4096), now_ms)
        self.snapshots = FileSnapshotStore(log_dir)
        self.log = RaftLog(self.file_log, self.snapshots, read_chunk)
        self.store = FileQuorumStateStore(str(directory), cluster_id="files")
        self.client = RaftClient(
            1, (1,), self.log, self.store, random.Random(3), now_ms, RaftConfig(append_flush_delay_ms=0)
        )
        self.committed: list[tuple[int, bytes]] = []
        self.snapshot: Snapshot | None = None
        self.client.register(self)
        self.now_ms = now_ms

    def handle_commit(self, batch: CommittedBatch) -> None:
        self.committed.extend(batch.records)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        return None

    def run_until_leader(self) -> None:
        for _ in range(100):
            deadline = self.client.next_deadline_ms()
            self.now_ms = max(self.now_ms, deadline if deadline is not None else self.now_ms)
            self.client.step(None, self.now_ms)
            if self.client.is_leader and self.client.high_watermark is not None:
                return
        raise AssertionError("no leader")


def test_records_elections_and_snapshots_survive_a_restart(tmp_path: Path) -> None:
    first = Process(tmp_path, 0)
    first.run_until_leader()
    for i in range(40):
        first.client.append([f"record-{i}".encode() * 10], first.now_ms)
    first.client.step(None, first.now_ms)
    assert [v for _o, v in first.committed] == [f"record-{i}".encode() * 10 for i in range(40)]
    assert len(os.listdir(tmp_path / "__cluster_metadata-0")) > 4  # several segments
    snapshot = first.client.create_snapshot(21, b"state-up-to-21")
    assert snapshot.snapshot_id == OffsetAndEpoch(21, 1)
    first.file_log.close()

    second = Process(tmp_path, 10_000)
    assert second.client.is_leader and second.client.epoch == 2  # led epoch 1; the lone voter stands at once
    second.run_until_leader()
    assert second.client.epoch == 2
    assert second.snapshot is not None and second.snapshot.data == b"state-up-to-21"
    assert [o for o, _v in second.committed] == list(range(21, 41))  # the log past the snapshot
    assert FileSnapshotStore(str(tmp_path / "__cluster_metadata-0")).latest() == snapshot
    second.file_log.close()


def test_only_the_newest_snapshot_file_is_kept(tmp_path: Path) -> None:
    store = FileSnapshotStore(str(tmp_path))
    assert store.latest() is None
    store.save(Snapshot(OffsetAndEpoch(10, 1), b"ten"))
    store.save(Snapshot(OffsetAndEpoch(25, 2), b"twenty-five"))
    store.save(Snapshot(OffsetAndEpoch(20, 2), b"stale"))  # older than what is kept: ignored
    assert sorted(os.listdir(tmp_path)) == ["00000000000000000025-0000000002.checkpoint"]
    assert store.latest() == Snapshot(OffsetAndEpoch(25, 2), b"twenty-five")
