"""``quorum-state`` on disk: the election state of a real controller process.

This is the only module of the Raft package that touches files; the
simulator uses :class:`reference_impl.core.raft.quorum_state.MemoryQuorumStateStore`
behind the same port. The write is atomic as Kafka's
``FileQuorumStateStore`` makes it: write a temporary file, fsync it, rename
it over the old one, fsync the directory. A crash leaves the old state or
the new one, never a torn file. (The shell may move this module next to
its other file code; nothing in the core imports it.)
"""

from __future__ import annotations

import os

from .quorum_state import decode_quorum_state, encode_quorum_state
from .states import ElectionState

QUORUM_STATE_FILE = "quorum-state"


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
        return decode_quorum_state(raw)

    def write(self, state: ElectionState) -> None:
        os.makedirs(self.directory, exist_ok=True)
        temporary = self.path + ".tmp"
        with open(temporary, "wb") as handle:
            handle.write(encode_quorum_state(state, self.cluster_id))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        directory_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory_fd)
        finally:
            os.close(directory_fd)
