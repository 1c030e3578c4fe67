"""Disk faults for locally launched targets: the brokers' data directories live on a size-limited
tmpfs this campaign mounts (``mount -t tmpfs -o size=...``, root), and ``disk-full`` fills it.

* ``disk-full``: a filler file takes every free byte of the filesystem for the window (written in
  1 MiB pieces, at most the free space ``statvfs`` reports, so bounded), then is deleted. Writes
  and fsyncs of the brokers fail with ENOSPC meanwhile. A broker that ended because of it (Kafka
  takes a failed log directory offline and a broker whose last log directory failed shuts down:
  apache/kafka ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogDirFailureChannel.java``,
  ``core/src/main/scala/kafka/server/ReplicaManager.scala`` ``handleLogDirFailure``) is started again
  when the window ends; what it acknowledged before must still be there.

What this does not do, and why: failing fsync alone while writes succeed, or losing what was not
fsynced on a simulated power failure, needs a fault-injecting block device (``dm-flakey``/``dm-error``
through device-mapper) or a storage layer inside the broker; neither is built here. A slow disk would
need a throttled device (``dm-delay`` or cgroup io limits on a block device; tmpfs has none).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

DISK_FAULTS = ("disk-full",)
PIECE = 1 << 20
MAX_PIECES = 1 << 16
"""At most 64 GiB of filler, whatever statvfs says."""


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "disk faults mount a size-limited tmpfs for the brokers' data: run as root"
    if shutil.which("mount") is None:
        return "disk faults need mount(8)"
    return None


class Disk:
    """A tmpfs of ``size_mb`` at ``path`` holding the target's data, and its filler."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path = path
        self.size_mb = size_mb
        self.filler = path / "disk-full.filler"
        self.mounted = False

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m", "tmpfs", str(self.path)],
                       check=True, capture_output=True, timeout=30)  # fmt: skip
        self.mounted = True

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False, capture_output=True, timeout=30)
            self.mounted = False

    def free_bytes(self) -> int:
        stat = os.statvfs(self.path)
        return stat.f_bavail * stat.f_frsize

    def fill(self) -> int:
        """Take every free byte; returns how many the filler holds."""
        written = 0
        piece = b"\0" * PIECE
        with self.filler.open("wb", buffering=0) as f:  # unbuffered: nothing left to fail at close
            for _ in range(min(MAX_PIECES, self.free_bytes() // PIECE + 1)):
                try:
                    written += f.write(piece) or 0
                except OSError:  # ENOSPC: full
                    break
        return written

    def free(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()
