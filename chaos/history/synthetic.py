"""A synthetic queue history of N operations with every per-record anomaly class injected, written as
Parquet parts (``part-00000.parquet``...), for the Spark checkers' benchmark and tests.

The clean stream: record ``r`` is sent by producer ``r % P`` to partition ``r % P`` at offset
``r // P`` (an ``invoke`` and an ``ok``), and each chunk of records is then read back by one
consumer per partition (process ``1000 + p``) in polls of ``POLL`` records. Built a chunk at a time
with numpy and pyarrow (columns, not dicts), so memory is bounded by the chunk, not by N.

Injected, ``k`` of each (their side effects on other classes listed, so the expected counts are
exact; :func:`expected_counts`):

* ``lost_write``: a record of the stream left out of its consumer's polls while later ones are read
  (its consumer then jumps over a known offset: one ``poll_skip`` each too, and ``validate_delivery``'s
  missing count);
* ``unseen``: records sent last to a partition nobody reads;
* ``duplicate``: stream values read again at two positions of a partition of their own;
* ``inconsistent_offsets``: a stream position read holding a value never sent;
* ``poll_skip``: a consumer reading offsets o then o + 2 of a stream partition;
* ``nonmonotonic_poll``: a consumer reading offset o + 1 then o;
* ``nonmonotonic_send``: a producer whose second send of a pair got the lower offset;
* ``aborted_read``: a value whose send failed, read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from spark_load.history_table import META_KEY, schema

TOPIC = "synthetic"
POLL = 100
MAX_OPS = 2_000_000_000
MAX_INJECT = 100_000
CHUNK_RECORDS = 500_000


def expected_counts(k: int) -> dict[str, int]:
    return {
        "lost_write": k,
        "duplicate": k,
        "inconsistent_offsets": k,
        "poll_skip": 2 * k,
        "nonmonotonic_poll": k,
        "nonmonotonic_send": k,
        "unseen": k,
        "aborted_read": k,
        "validate_delivery": (1 if k else 0) * 2,  # missing (lost + unseen), duplicated (idempotent)
    }


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def generate(
    out: Path, ops: int, *, partitions: int = 12, inject: int = 10, chunk_records: int = CHUNK_RECORDS
) -> dict[str, Any]:
    """Write about ``ops`` operations under ``out``; returns the meta (with ``records`` and ``ops``)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    if not 0 <= ops <= MAX_OPS:
        raise ValueError(f"ops must be 0..{MAX_OPS:,}")
    if not 0 <= inject <= MAX_INJECT:
        raise ValueError(f"inject must be 0..{MAX_INJECT:,}")
    if not 3 <= partitions <= 10_000:
        raise ValueError("partitions must be 3..10,000")
    records = max(ops * POLL // (2 * POLL + 2), 4 * partitions * (inject + 2))
    chunk_records = max(partitions * POLL, min(chunk_records, 5_000_000))
    # lost records are in partition 1 (offsets 3, 3 + step...), each with later offsets read
    step = max(1, (records // partitions - 6) // max(1, inject))
    lost = {partitions * (3 + j * step) + 1 for j in range(inject)}
    meta = {
        "workload": "queue",
        "idempotence": True,
        "final_drain": True,
        "synthetic": True,
        "records": records,
        "injected": inject,
        "partitions": partitions,
    }
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    table_schema = schema().with_metadata({META_KEY: _text(meta).encode()})
    record_type = table_schema.field("records").type.value_type
    index = 0
    part = 0

    def write(columns: dict[str, Any]) -> None:
        nonlocal part
        pq.write_table(
            pa.Table.from_pydict(columns, schema=table_schema),
            str(out / f"part-{part:05d}.parquet"),
            compression="zstd",
        )
        part += 1

    for lo in range(0, records, chunk_records):
        hi = min(records, lo + chunk_records)
        r = np.arange(lo, hi, dtype=np.int64)
        n = hi - lo
        p = (r % partitions).astype(np.int32)
        offset = r // partitions
        value = np.char.add(np.char.add('"', r.astype(str)), '"').astype(object)
        # sends: invoke at 2j, ok at 2j + 1
        send = {
            "index": np.arange(index, index + 2 * n, dtype=np.int64),
            "type": np.tile(np.array(["invoke", "ok"], dtype=object), n),
            "process": np.repeat(p.astype(str).astype(object), 2),
            "f": np.full(2 * n, "send", dtype=object),
            "wall": np.zeros(2 * n),
            "mono": np.arange(index, index + 2 * n, dtype=np.float64) / 1e6,
            "value": np.repeat(value, 2),
            "topic": np.full(2 * n, TOPIC, dtype=object),
            "partition": np.repeat(p, 2),
            "offset": pa.array(np.repeat(offset, 2), mask=np.tile([True, False], n)),
            "error": pa.nulls(2 * n, pa.string()),
            "records": pa.nulls(2 * n, pa.list_(record_type)),
        }
        index += 2 * n
        write(send)
        # polls: per partition, the chunk's records in offset order, POLL at a time, lost ones left out
        keep = ~np.isin(r, np.fromiter(lost, dtype=np.int64)) if lost else np.ones(n, dtype=bool)
        order = np.lexsort((offset, p))
        order = order[keep[order]]
        sp, so, sv = p[order], offset[order], value[order]
        starts: list[int] = []
        for part_id in range(partitions):
            left, right = np.searchsorted(sp, [part_id, part_id + 1])
            starts.extend(range(int(left), int(right), POLL))
        bounds = np.array([*starts, len(order)], dtype=np.int64)
        bounds = np.unique(np.concatenate([bounds, np.searchsorted(sp, np.arange(partitions + 1))]))
        polls = len(bounds) - 1
        entries = pa.StructArray.from_arrays(
            [pa.array(np.full(len(order), TOPIC, dtype=object)), pa.array(sp), pa.array(so), pa.array(sv)],
            fields=list(record_type),
        )
        lists = pa.ListArray.from_arrays(pa.array(bounds.astype(np.int32)), entries)
        empty = pa.nulls(polls, pa.list_(record_type))
        poll_process = (1000 + sp[bounds[:-1]]).astype(str).astype(object)
        poll = {
            "index": np.arange(index, index + 2 * polls, dtype=np.int64),
            "type": np.tile(np.array(["invoke", "ok"], dtype=object), polls),
            "process": np.repeat(poll_process, 2),
            "f": np.full(2 * polls, "poll", dtype=object),
            "wall": np.zeros(2 * polls),
            "mono": np.arange(index, index + 2 * polls, dtype=np.float64) / 1e6,
            "value": pa.nulls(2 * polls, pa.string()),
            "topic": pa.nulls(2 * polls, pa.string()),
            "partition": pa.nulls(2 * polls, pa.int32()),
            "offset": pa.nulls(2 * polls, pa.int64()),
            "error": pa.nulls(2 * polls, pa.string()),
            "records": _interleave(pa, empty, lists),
        }
        index += 2 * polls
        write(poll)
    index = _write_injected(write, index, records, partitions, inject)
    meta["ops"] = index
    return meta


def _interleave(pa: Any, invokes: Any, oks: Any) -> Any:
    """[invoke_0, ok_0, invoke_1, ok_1...] of two equal-length arrays."""
    n = len(oks)
    positions = np.empty(2 * n, dtype=np.int64)
    positions[0::2] = np.arange(n)
    positions[1::2] = np.arange(n, 2 * n)
    return pa.concat_arrays([invokes, oks]).take(pa.array(positions))


def _write_injected(write: Any, index: int, records: int, partitions: int, k: int) -> int:
    """The injected anomalies' ops (after the stream), as rows; returns the next index."""
    rows: list[dict[str, Any]] = []

    def op(type_: str, process: int, f: str, **fields: Any) -> None:
        rows.append(
            {
                "index": index + len(rows),
                "type": type_,
                "process": str(process),
                "f": f,
                "wall": 0.0,
                "mono": (index + len(rows)) / 1e6,
                **fields,
            }
        )

    def send(process: int, value: str, partition: int, offset: int | None, outcome: str = "ok") -> None:
        fields = {"value": _text(value), "topic": TOPIC, "partition": partition}
        op("invoke", process, "send", **fields)
        op(outcome, process, "send", **fields, offset=offset if outcome == "ok" else None)

    def poll(process: int, *read: tuple[int, int, str]) -> None:
        op("invoke", process, "poll")
        op(
            "ok",
            process,
            "poll",
            records=[{"topic": TOPIC, "partition": q, "offset": o, "value": _text(v)} for q, o, v in read],
        )

    # partitions of their own: spare (duplicates), +1 (nonmonotonic sends), +2 (aborted), +3 (unseen);
    # re-reads of partition 0 at offsets 2 + i (records has room: at least 4 (k + 2) per partition)
    spare = partitions
    for i in range(k):
        value = str(2 + i * partitions)  # partition 2's record at offset i (lost ones are in partition 1)
        poll(5000, (spare, 2 * i, value), (spare, 2 * i + 1, value))
        o = 2 + i
        poll(6000 + i, (0, o, f"x{i}"))
        poll(7000 + i, (0, o, str(o * partitions)), (0, o + 2, str((o + 2) * partitions)))
        poll(8000 + i, (0, o + 1, str((o + 1) * partitions)), (0, o, str(o * partitions)))
        send(9000, f"ns{i}a", spare + 1, 2 * i + 1)
        send(9000, f"ns{i}b", spare + 1, 2 * i)
        send(9100, f"ab{i}", spare + 2, None, outcome="fail")
    if k:
        poll(9001, *[(spare + 1, o, f"ns{o // 2}{'b' if o % 2 == 0 else 'a'}") for o in range(2 * k)])
        poll(9002, *[(spare + 2, i, f"ab{i}") for i in range(k)])
    for i in range(k):
        send(9200, f"tail{i}", spare + 3, i)
    if rows:
        columns = {
            name: [row.get(name) for row in rows]
            for name in (
                "index",
                "type",
                "process",
                "f",
                "wall",
                "mono",
                "value",
                "topic",
                "partition",
                "offset",
                "error",
                "records",
            )
        }
        write(columns)
    return index + len(rows)
