"""A bounded pool of file descriptors for the log's segment and index files.

Kafka keeps every segment's channel and memory-mapped indexes open and asks
the operator for a large ``ulimit -n``. A broker here must stay up whatever
partition count a client asks for: one CreatePartitions to 6,662 partitions
(three files each) once used up every descriptor, after which accepts, log
opens and even a restart on the same data directory failed. So the log never
holds a descriptor of its own: each file is a :class:`PooledFile` that opens
on demand through one process-wide :class:`DescriptorPool`, which closes the
least recently used descriptors beyond its capacity and, should the process
still run out (``EMFILE``: connections took the rest), closes idle ones and
tries again before giving up.

The shell's ``sendfile`` of a fetch answer uses the same pool
(:meth:`DescriptorPool.reader`): a region is sent from a shared read-only
descriptor that stays *pinned* (never evicted) until the send completes.

The pool is not thread-safe, like the log it serves: calls come from the
broker's one event loop. A descriptor returned by :meth:`PooledFile.fd` is
good until the next call that may open another file, so callers ask for it
right before each system call instead of keeping it.
"""

from __future__ import annotations

import errno
import logging
import os
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from reference_impl import defects

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 256
"""Descriptors the pool keeps open at most when the broker sets no other bound."""
MIN_CAPACITY = 4
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


class FileReplacedError(OSError):
    """The path now names another file (the log cleaner swapped a segment in after the read)."""


class ClosedFileError(OSError):
    """A pooled file used after :meth:`PooledFile.close` (a deleted or swapped-out segment)."""


class PooledFile:
    """One file the log reads and writes by descriptor, opened through the pool when needed.

    The file is opened (and created, when ``create``) at once, so a missing
    file fails where it is opened; its inode is kept, and a later reopen of a
    path that names another file raises :class:`FileReplacedError` rather than
    reading or writing the wrong bytes.
    """

    __slots__ = ("_closed", "_fd", "_flags", "_pins", "_pool", "file_id", "path")

    def __init__(self, path: str, *, create: bool = True, writable: bool = True,
                 pool: DescriptorPool | None = None) -> None:
        self.path = path
        self._pool = pool if pool is not None else POOL
        self._flags = os.O_RDWR if writable else os.O_RDONLY
        self._fd = -1
        self._pins = 0
        self._closed = False
        self.file_id = 0
        fd = self._pool.open_descriptor(path, self._flags | (os.O_CREAT if create else 0))
        self.file_id = os.fstat(fd).st_ino
        self._fd = fd
        self._pool.admit(self)

    def __repr__(self) -> str:
        return f"PooledFile({self.path!r}, open={self._fd >= 0})"

    @property
    def is_open(self) -> bool:
        """Whether a descriptor is held right now (the pool may close it whenever it is idle)."""
        return self._fd >= 0

    @property
    def closed(self) -> bool:
        return self._closed

    def fd(self) -> int:
        """The descriptor, reopened if the pool closed it; the most recently used from now."""
        if self._fd >= 0:
            self._pool.touch(self)
            return self._fd
        if self._closed:
            raise ClosedFileError(errno.EBADF, f"{self.path} was closed", self.path)
        fd = self._pool.open_descriptor(self.path, self._flags)
        if os.fstat(fd).st_ino != self.file_id:
            os.close(fd)
            raise FileReplacedError(errno.ESTALE, f"{self.path} was replaced by another file", self.path)
        self._fd = fd
        self._pool.reopened += 1
        self._pool.admit(self)
        return fd

    @contextmanager
    def pinned(self) -> Iterator[int]:
        """The descriptor, kept open (never evicted) for the ``with`` block: a ``sendfile`` in flight."""
        fd = self.fd()
        self._pins += 1
        try:
            yield fd
        finally:
            self._pins -= 1
            if self._closed and not self._pins:
                self.release()  # closed while the send was in flight: the deferred close

    @property
    def pins(self) -> int:
        return self._pins

    def rename(self, path: str) -> None:
        """Rename the file; an open descriptor stays valid, a reopen uses the new name."""
        os.rename(self.path, path)
        self.path = path

    def release(self) -> None:
        """Close the descriptor now (the pool calls this to evict); the file reopens on next use."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            self._pool.forget(self)
            os.close(fd)

    def close(self) -> None:
        """Close for good: a later :meth:`fd` raises instead of reopening.

        A pinned file (a ``sendfile`` in flight) keeps its descriptor until
        the last :meth:`pinned` block ends, then closes it there; never later,
        so a deleted file's space is freed as soon as no send needs it.
        """
        self._closed = True
        if not self._pins:
            self.release()


class DescriptorPool:
    """At most ``capacity`` descriptors open for pooled files; the least recently used closes first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = max(MIN_CAPACITY, capacity)
        self._open: OrderedDict[PooledFile, None] = OrderedDict()
        self._readers: dict[tuple[str, int], PooledFile] = {}
        self._reader_keys: dict[PooledFile, tuple[str, int]] = {}
        self.reopened = 0
        """How many descriptors were opened again after an eviction (for benchmarks and tests)."""
        self.evicted = 0
        self.exhausted = 0
        """Opens that found the process out of descriptors since one last succeeded at once."""

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def open_count(self) -> int:
        return len(self._open)

    def resize(self, capacity: int) -> None:
        """Change the bound (the broker sets it from its ``RLIMIT_NOFILE`` at start), closing the surplus."""
        self._capacity = max(MIN_CAPACITY, capacity)
        self._evict_beyond(self._capacity)

    # -- bookkeeping, called by PooledFile ------------------------------------------------------

    def open_descriptor(self, path: str, flags: int) -> int:
        """``os.open``; out of descriptors, close the idle half of the pool and try once more.

        Logged once until an open succeeds at the first try again, not once per open.
        """
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if exc.errno not in _OUT_OF_DESCRIPTORS or defects.enabled(defects.UNBOUNDED_PARTITIONS):
                raise
            closed = self._evict_beyond(len(self._open) // 2)
            if not self.exhausted:
                log.warning("out of file descriptors opening %s: closed %d idle log file(s) and retried "
                            "(logged once until descriptors are back)", path, closed)
            self.exhausted += 1
            return os.open(path, flags, 0o644)
        self.exhausted = 0
        return fd

    def admit(self, file: PooledFile) -> None:
        self._open[file] = None
        if not defects.enabled(defects.UNBOUNDED_PARTITIONS):  # the seeded defect: every file stays open
            self._evict_beyond(self._capacity, keep=file)

    def touch(self, file: PooledFile) -> None:
        self._open.move_to_end(file)

    def forget(self, file: PooledFile) -> None:
        self._open.pop(file, None)

    def _evict_beyond(self, limit: int, keep: PooledFile | None = None) -> int:
        """Close idle descriptors, least recently used first, until at most ``limit`` stay open."""
        closed = 0
        if len(self._open) <= limit:
            return 0
        for file in list(self._open):
            if len(self._open) <= limit:
                break
            if file is keep or file.pins:
                continue
            file.release()
            self._forget_reader(file)
            closed += 1
        self.evicted += closed
        return closed

    def release_idle(self) -> int:
        """Close every descriptor no send holds (the process ran out elsewhere); returns how many."""
        return self._evict_beyond(0)

    # -- shared read-only files for sendfile ----------------------------------------------------

    def reader(self, path: str, file_id: int = 0) -> PooledFile:
        """A shared read-only descriptor of ``path``, which must still be the file ``file_id`` (inode).

        Raises :class:`FileReplacedError` when the path now names another
        file, FileNotFoundError when it is gone.
        """
        key = (path, file_id)
        found = self._readers.get(key)
        if found is not None and not found.closed:
            return found
        file = PooledFile(path, create=False, writable=False, pool=self)
        if file_id and file.file_id != file_id:
            file.close()
            raise FileReplacedError(errno.ESTALE, f"{path} was replaced by the log cleaner after the read",
                                    path)
        self._readers[key] = file
        self._reader_keys[file] = key
        return file

    def close_readers(self, path: str, file_id: int) -> int:
        """Close every shared reader of the file ``file_id`` (inode) named ``path``; returns how many.

        Called when a segment's life ends (deleted, compacted away, its topic
        deleted, the log closed): an idle reader closes now, a pinned one as
        its send ends (:meth:`PooledFile.close`), and none stays in the table,
        so a deleted file never stays open ("(deleted)" in ``/proc/PID/fd``)
        until eviction, which a pool far below its capacity never reaches.
        Matched by inode as well as by name: the cleaner renames a segment to
        ``.deleted`` before removing it, and a reader may be keyed by either.
        """
        doomed = [(k, f) for k, f in self._readers.items()
                  if f.file_id == file_id or (k[0] == path and k[1] in (0, file_id))]
        for key, file in doomed:
            del self._readers[key]
            del self._reader_keys[file]
            file.close()
        return len(doomed)

    def has_reader(self, path: str, file_id: int) -> bool:
        """Whether a shared reader of ``path`` as the file ``file_id`` is in the table (for tests)."""
        return (path, file_id) in self._readers

    def _forget_reader(self, file: PooledFile) -> None:
        """An evicted reader is dropped, so the table of readers stays as small as the pool."""
        key = self._reader_keys.pop(file, None)
        if key is not None:
            del self._readers[key]
            file.close()


POOL = DescriptorPool()
"""The process's pool: every segment and index file, and the shell's sendfile readers."""
