"""Helpers the client-matrix scenarios share: records to send, and reading the log back through the
raw protocol client (an independent judge of what a client library wrote)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from fixtures.clients import Got, Rec
from fixtures.wire import Capabilities, ops

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
"""Compression codec → the low three bits of a record batch's attributes (protocol guide, Record Batch)."""


def records(tag: str, partitions: int, per_partition: int) -> list[Rec]:
    """Keyed records (some keys null or empty) with bytes across the whole byte range except newline and
    tab (kcat's separators), compressible enough that every codec has work to do."""
    payload = bytes(b for b in range(256) if b not in (9, 10))
    out: list[Rec] = []
    for p in range(partitions):
        for i in range(per_partition):
            key = None if i % 7 == 3 else (b"" if i % 11 == 5 else f"k{p}-{i % 5}".encode())
            value = f"{tag}|{p}|{i}|".encode() + payload[i % 50 :] + b"x" * (i * 37 % 400)
            out.append((p, key, value))
    return out


def by_partition(items: Iterable[Rec] | Iterable[Got]) -> dict[int, list[tuple[bytes | None, bytes]]]:
    """partition → [(key, value)] in the order given."""
    out: dict[int, list[tuple[bytes | None, bytes]]] = defaultdict(list)
    for item in items:
        if isinstance(item, Got):
            out[item.partition].append((item.key, item.value))
        else:
            out[item[0]].append((item[1], item[2]))
    return dict(out)


def first_difference(sent: Sequence[Any], got: Sequence[Any]) -> str:
    for i, (a, b) in enumerate(zip(sent, got, strict=False)):
        if a != b:
            return f"first difference at position {i}: sent {a!r:.120}, read {b!r:.120}"
    return f"sent {len(sent)} records, read {len(got)}"


def wire_batches(conn: ops.Conn, caps: Capabilities, topic: str, partition: int) -> list[Any]:
    """Every batch header of one partition, read with the raw client from offset 0 (from its leader when
    ``conn`` is a router; bounded: 50 fetches)."""
    headers: list[Any] = []
    offset = 0
    for _ in range(50):
        _, entry = ops.fetch(conn, caps, topic, offset, partition=partition, max_wait_ms=100)
        found = ops.batches(entry) if entry is not None else []
        if not found:
            break
        headers += [h for h, _ in found]
        offset = found[-1][0].last_offset + 1
    return headers


def offset_fetch(
    conn: ops.Conn, caps: Capabilities, group: str, topic: str, partitions: Sequence[int]
) -> dict[int, int]:
    """Committed offsets of ``group`` through OffsetFetch (v1..v7 share this shape), asked of the
    group's coordinator when ``conn`` is a router."""
    v = caps.best("offset_fetch", lo=1, hi=7)
    answer = ops.coordinator_of(conn, group).request(
        "offset_fetch", v, group_id=group, topics=[{"name": topic, "partition_indexes": list(partitions)}]
    )
    return {int(p.partition_index): int(p.committed_offset) for t in answer.topics for p in t.partitions}
