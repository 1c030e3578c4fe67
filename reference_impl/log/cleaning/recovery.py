"""Finishing or undoing a clean that a crash interrupted, when a partition directory is opened.

The executor (:mod:`.executor`) commits a clean by renaming its last
``.cleaned`` file to ``.swap``. So, before the loader looks at segments:

* any ``.cleaned`` file left means the commit never happened: every
  ``.cleaned`` and ``.swap`` file goes, and the old segments, untouched so
  far, stay;
* otherwise every ``<base>.log.swap`` is a committed new segment. It
  replaces the old segments whose base offset lies in the offsets it covers,
  from its base to its last batch's next offset (an empty one covers its own
  base): their files are deleted if still there (under their own names or
  ``.deleted``), then the ``.swap`` files take their final names. The
  executor arranges that these ranges name every old segment it replaced.

Either way the directory ends with the old segment set or the new one,
whatever step the crash interrupted. Kafka's ``LogLoader`` treats
``.cleaned`` and ``.swap`` files the same way.
"""

from __future__ import annotations

import logging
import os

from reference_impl.protocol.records import HEADER_SIZE, LOG_OVERHEAD, InvalidBatchError, parse_header

from ..files import fsync_dir, pread_exact
from ..segment import DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, base_offset_of

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
"""A new segment's file while the cleaner writes it."""
SWAP_SUFFIX = ".swap"
"""A new segment's file once the clean is committed, until it replaces the old ones."""

_SEGMENT_FILES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)


def _next_offset(path: str, base: int) -> int:
    """The offset after the last whole batch of a segment file (its base when it holds none)."""
    end = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        position, following = 0, base
        while position + HEADER_SIZE <= end:
            try:
                header = parse_header(pread_exact(fd, HEADER_SIZE, position))
            except InvalidBatchError:
                break
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + header.size > end:
                break
            following = header.next_offset
            position += header.size
        return following
    finally:
        os.close(fd)


def finish_interrupted_clean(directory: str) -> list[str]:
    """Roll a half-done clean back or forward; returns what was done, for the load report."""
    names = os.listdir(directory)
    cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX)]
    swaps = [n for n in names if n.endswith(SWAP_SUFFIX)]
    if not cleaned and not swaps:
        return []
    done: list[str] = []
    if cleaned:
        for name in cleaned + swaps:
            os.remove(os.path.join(directory, name))
            done.append(f"removed {name} (clean not committed)")
        fsync_dir(directory)
        return done
    covered: list[tuple[int, int]] = []
    for name in swaps:
        base = base_offset_of(name)
        if base is not None and name == f"{base:020d}{LOG_SUFFIX}{SWAP_SUFFIX}":
            following = _next_offset(os.path.join(directory, name), base)
            covered.append((base, max(base + 1, following)))
    for name in names:
        base = base_offset_of(name)
        if base is None or name.endswith(SWAP_SUFFIX):
            continue
        stem = name[:-len(DELETED_SUFFIX)] if name.endswith(DELETED_SUFFIX) else name
        if stem.endswith(_SEGMENT_FILES) and any(low <= base < high for low, high in covered):
            os.remove(os.path.join(directory, name))
            done.append(f"removed {name} (replaced by a committed clean)")
    fsync_dir(directory)
    for name in sorted(swaps, key=lambda n: (base_offset_of(n) or 0, n.endswith(LOG_SUFFIX + SWAP_SUFFIX))):
        final = name[: -len(SWAP_SUFFIX)]
        os.rename(os.path.join(directory, name), os.path.join(directory, final))
        done.append(f"renamed {name} to {final}")
    fsync_dir(directory)
    log.warning("%s: finished a clean a crash interrupted (%d file operations)", directory, len(done))
    return done
