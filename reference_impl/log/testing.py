"""Helpers for tests of the logs and for fault injection: batches to append, crashes to survive.

:func:`tear` does to a partition directory what a machine crash does to a
file system that kept only part of the unflushed writes: it cuts or garbles
segment files anywhere past the recovery point. Recovery must then keep
everything below the recovery point and a prefix of the rest.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

from reference_impl.protocol.record_set import build_batch

from .api import ReadResult
from .files import read_region
from .partition_log import FileLog
from .segment import LOG_SUFFIX, base_offset_of


def make_batch(count: int, timestamp: int = 1_000, value_size: int = 10, key: bytes | None = b"k",
               timestamps: Sequence[int] | None = None) -> bytearray:
    """An uncompressed batch of ``count`` records as a producer sends it (offsets from 0)."""
    records = [(key, bytes([65 + i % 26]) * value_size) for i in range(count)]
    return bytearray(build_batch(records, base_timestamp=timestamp, timestamps=timestamps))


def read_bytes(result: ReadResult) -> bytes:
    """A read result's bytes, file regions read from their segments."""
    return b"".join(c if isinstance(c, bytes) else read_region(c) for c in result.chunks)


def durable_position(log: FileLog) -> tuple[int, int]:
    """(segment base offset, byte position) below which the log's recovery point promises the bytes.

    That is the end of the batch holding ``recovery_point - 1``: fsync covers
    whole files, so that batch is on disk whole.
    """
    point = log.recovery_point
    segment = log.local.segments.floor(point - 1)
    if segment is None:
        return log.segments[0].base_offset, 0
    found = segment.locate(point - 1)
    if found is None:
        return segment.base_offset, segment.size
    position, _ = found
    _, header = next(segment.scan(position))
    return segment.base_offset, position + header.size


def tear(directory: str, durable: tuple[int, int], rng: random.Random) -> str:
    """Damage the segment files past ``durable`` (from :func:`durable_position`) as a crash might.

    Picks a segment at or after the durable one and a byte past the durable
    position in it, then cuts the file there or overwrites its tail with
    zeros (pages never written) or random bytes (stale blocks); later
    segments are kept, cut or removed at random. Index files of the damaged
    segment may be cut too. Returns what it did, for failure messages. The
    log must be closed (abandoned) first. Bit rot inside a batch's first 21
    bytes is not a crash effect and not simulated: Kafka's CRC does not
    cover the base offset or the leader epoch, so nothing could detect it.
    """
    base, position = durable
    logs = sorted(b for name in os.listdir(directory) if name.endswith(LOG_SUFFIX)
                  if (b := base_offset_of(name)) is not None and b >= base)
    if not logs:
        return "nothing past the recovery point"
    target = rng.choice(logs)
    path = os.path.join(directory, f"{target:020d}{LOG_SUFFIX}")
    size = os.path.getsize(path)
    low = position if target == base else 0
    if size <= low:
        return f"segment {target} has nothing past the durable position"
    cut = rng.randint(low, size)
    mode = rng.choice(["cut", "zeros", "garbage"])
    with open(path, "r+b") as handle:
        if mode == "cut":
            handle.truncate(cut)
        else:
            handle.seek(cut)
            handle.write(b"\x00" * (size - cut) if mode == "zeros" else rng.randbytes(size - cut))
    actions = [f"{mode} segment {target} at byte {cut} of {size}"]
    for later in logs:
        if later <= target:
            continue
        later_path = os.path.join(directory, f"{later:020d}{LOG_SUFFIX}")
        choice = rng.choice(["keep", "cut", "remove"])
        if choice == "cut":
            with open(later_path, "r+b") as handle:
                handle.truncate(rng.randint(0, os.path.getsize(later_path)))
        elif choice == "remove":
            os.remove(later_path)
        actions.append(f"{choice} segment {later}")
    if rng.random() < 0.3:
        index = os.path.join(directory, f"{target:020d}.index")
        if os.path.exists(index):
            with open(index, "r+b") as handle:
                handle.truncate(rng.randint(0, os.path.getsize(index)))
            actions.append(f"cut the index of {target}")
    return "; ".join(actions)
