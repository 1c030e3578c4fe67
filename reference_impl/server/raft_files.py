"""The quorum's durable state in files: ``quorum-state`` and snapshot checkpoints.

The shell's implementation of the Raft ports that touch files (the core
opens none); the simulator uses the in-memory stores behind the same ports
(:class:`~reference_impl.core.raft.quorum_state.MemoryQuorumStateStore`,
:class:`~reference_impl.core.raft.raft_log.MemorySnapshotStore`). Every write
is atomic as Kafka makes it (write a temporary file, fsync it, rename it
over the old one, fsync the directory, with the helpers of
:mod:`reference_impl.log.files`): a crash leaves the old state or the new
one, never a torn file. Snapshot files are named as Kafka names them,
``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``.
"""

from __future__ import annotations

import os
import re

from reference_impl.core.raft.messages import OffsetAndEpoch
from reference_impl.core.raft.quorum_state import (
    QuorumStateFormatError,
    check_storable,
    decode_quorum_state,
    encode_quorum_state,
)
from reference_impl.core.raft.raft_log import Snapshot
from reference_impl.core.raft.states import ElectionState
from reference_impl.log.files import atomic_write, fsync_dir, pwrite_all

QUORUM_STATE_FILE = "quorum-state"
SNAPSHOT_SUFFIX = ".checkpoint"
_SNAPSHOT_NAME = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint")
"""Matched whole (``fullmatch``): ``\\d`` and ``$`` would take other digits and a trailing newline."""


class FileQuorumStateStore:
    def __init__(self, directory: str, cluster_id: str = "") -> None:
        self.directory = directory
        self.cluster_id = cluster_id
        self.path = os.path.join(directory, QUORUM_STATE_FILE)

    def read(self) -> ElectionState | None:
        """The stored state; None if the file does not exist (a fresh node)."""
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read()
        except FileNotFoundError:
            return None
        try:
            return decode_quorum_state(raw)
        except QuorumStateFormatError as exc:
            raise QuorumStateFormatError(f"{self.path}: {exc}") from None

    def write(self, state: ElectionState) -> None:
        check_storable(state)
        os.makedirs(self.directory, exist_ok=True)
        atomic_write(self.path, encode_quorum_state(state, self.cluster_id).decode())


def snapshot_file_name(snapshot_id: OffsetAndEpoch) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SNAPSHOT_SUFFIX}"


class FileSnapshotStore:
    """Snapshots as ``.checkpoint`` files in the metadata log's directory; older ones are deleted
    once a newer one is durable.

    The latest snapshot is kept in memory once read: the store is its directory's only writer
    (:meth:`save`), and the Raft shell asks for it on every step, where listing the directory and
    reading the file each time cost every broker CPU on every acks=all round trip (issue 22)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._latest: Snapshot | None = None
        self._read = False

    def _ids(self) -> list[OffsetAndEpoch]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            match = _SNAPSHOT_NAME.fullmatch(name)
            if match:
                found.append(OffsetAndEpoch(int(match.group(1)), int(match.group(2))))
        return sorted(found, key=lambda i: i.offset)

    def latest(self) -> Snapshot | None:
        if self._read:
            return self._latest
        ids = self._ids()
        if ids:
            with open(os.path.join(self.directory, snapshot_file_name(ids[-1])), "rb") as handle:
                self._latest = Snapshot(ids[-1], handle.read())
        self._read = True
        return self._latest

    def save(self, snapshot: Snapshot) -> None:
        older = self._ids()
        if older and older[-1].offset >= snapshot.snapshot_id.offset:
            return
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, snapshot_file_name(snapshot.snapshot_id))
        temporary = path + ".part"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            pwrite_all(fd, snapshot.data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
        fsync_dir(self.directory)
        self._latest, self._read = snapshot, True
        for old in older:
            os.remove(os.path.join(self.directory, snapshot_file_name(old)))
