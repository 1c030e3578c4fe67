"""The few file operations the log is built from: positional reads and writes, fsync, atomic replace.

Every byte the log stores goes through here, so the durability rules live in
one place: a write is only durable after :func:`fsync`, a new or renamed
file's name only after :func:`fsync_dir` of its directory, and a small
metadata file is replaced atomically (write a temporary file, fsync it,
rename it over the old one, fsync the directory) as Kafka's
``Utils.atomicMoveWithFallback`` does for checkpoints. Descriptors opened here
come from the bounded pool's ``open_descriptor`` (:mod:`.descriptors`), which
closes idle log files and retries when the process has run out.
"""

from __future__ import annotations

import os

from .api import FileRegion
from .descriptors import POOL, FileReplacedError

TEMP_SUFFIX = ".tmp"


class RegionReadError(OSError):
    """A file region could not be read whole: its segment was deleted or truncated after the read."""


def pwrite_all(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    """Write all of ``data`` at ``position`` (``os.pwrite`` may write less than asked)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        if written <= 0:
            raise OSError(f"pwrite wrote {written} bytes at {position}")
        view = view[written:]
        position += written


def pread_exact(fd: int, length: int, position: int) -> bytes:
    """``length`` bytes at ``position``, or fewer only if the file ends first."""
    out = os.pread(fd, length, position)
    if len(out) == length or not out:
        return out
    parts = [out]
    got = len(out)
    while got < length:
        more = os.pread(fd, length - got, position + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def read_region(region: FileRegion) -> bytes:
    """The bytes of a read result's file region, for callers that need bytes rather than ``sendfile``.

    Read through a shared descriptor of the bounded pool (the one the shell's
    ``sendfile`` uses). Raises :class:`RegionReadError` when the file is gone,
    replaced or shorter than the region: retention, truncation, compaction or
    topic deletion ran between the read and this call, and the caller should
    drop the answer (a client refetches).
    """
    try:
        data = pread_exact(POOL.reader(region.path, region.file_id).fd(), region.length, region.position)
    except FileNotFoundError:
        raise RegionReadError(f"segment {region.path} was deleted after it was read") from None
    except FileReplacedError:
        raise RegionReadError(f"segment {region.path} was replaced (compacted) after it was read") from None
    if len(data) != region.length:
        if not os.path.exists(region.path):
            raise RegionReadError(f"segment {region.path} was deleted after it was read")
        raise RegionReadError(
            f"segment {region.path} holds {len(data)} of the {region.length} bytes read at "
            f"{region.position}: it was truncated after the read"
        )
    return data


def fsync_dir(path: str) -> None:
    """Make the names in directory ``path`` durable (new, renamed and deleted files)."""
    fd = POOL.open_descriptor(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` so a crash leaves either the old or the new file, never half."""
    temp = path + TEMP_SUFFIX
    fd = POOL.open_descriptor(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        pwrite_all(fd, text.encode(), 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def read_text(path: str) -> str | None:
    """The file's text, or None if it does not exist."""
    try:
        fd = POOL.open_descriptor(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, encoding="utf-8") as handle:
        return handle.read()


def remove_if_exists(path: str) -> bool:
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    return True
