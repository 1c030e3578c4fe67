"""A load run as a chaos history (JSONL, ``chaos/history/README.md``), so the chaos checkers can judge it too.

Why: two independent judges of the same run. The Spark verifier and the chaos
checkers (``kafka-harness check``) were written separately; a run both call
valid, or both call invalid with the same counts, is better evidence than
either alone.

Mapping: each delivery report is a ``send`` invoke (at its send time) and its
completion (at its acknowledgement time): ``ok`` with partition and offset, or
``info`` when the report was an error (a failed delivery may still have been
written). The producer task is the process. The reads follow, one process per
read split: an ``assign`` of its partition, then ``poll`` ops of up to
``POLL_RECORDS`` records in offset order, timed after the last acknowledgement
(the reader runs after the producers). A value is ``<generator id>:<seq>`` for
an intact record and the raw text for anything else.

The history is built on the driver from the Parquet files with pyarrow, so it
is bounded: :data:`MAX_RECORDS` records at most.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .payloads import is_intact, parse_value

MAX_RECORDS = 500_000
POLL_RECORDS = 500


class HistoryTooLargeError(ValueError):
    """The run is larger than a history on the driver should be."""


def _value_of(key: bytes | None, value: bytes | None) -> str:
    parsed = parse_value(value)
    if parsed is not None and is_intact(key, value):
        return f"{parsed.generator_id}:{parsed.seq}"
    return (value or b"").decode("utf-8", "replace")


def _batch_events(rows: list[dict[str, Any]], topic: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for row in rows:
        value = f"{row['generator_id']}:{row['seq']}"
        sent = row["send_us"] or 0
        base = {"process": row["producer"], "f": "send", "value": value, "topic": topic}
        yield sent, 0, {**base, "type": "invoke"}
        done = {**base, "type": "ok", "partition": row["partition"], "offset": row["offset"]}
        if row["error"] is not None:
            done = {**base, "type": "info", "error": row["error"]}
        yield max(row["ack_us"] or sent, sent), 1, done


def _parquet_rows(path: Path, columns: list[str]) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq  # here, so the load command's --help does not pay for it

    files = [path] if path.is_file() else sorted(path.glob("*.parquet"))
    for file in files:
        for batch in pq.ParquetFile(file).iter_batches(columns=columns):
            yield from batch.to_pylist()


def write_history(acks_path: Path, reads_path: Path, out: Path, *, topic: str, meta: dict[str, Any]) -> int:
    """Write the history; returns the number of ops. Raises HistoryTooLargeError past MAX_RECORDS."""
    acks = list(_parquet_rows(acks_path, ["generator_id", "seq", "producer", "partition", "offset",
                                          "error", "send_us", "ack_us"]))  # fmt: skip
    if len(acks) > MAX_RECORDS:
        raise HistoryTooLargeError(
            f"--history is for runs of at most {MAX_RECORDS:,} records ({len(acks):,} sent)"
        )
    sends = sorted(_batch_events(acks, topic), key=lambda event: (event[0], event[1]))
    first_us = sends[0][0] if sends else 0
    last_us = max((event[0] for event in sends), default=0)

    reads = sorted(
        _parquet_rows(reads_path, ["partition", "offset", "key", "value", "split"]),
        key=lambda row: (row["split"], row["offset"]),
    )
    if len(reads) > 2 * MAX_RECORDS:
        raise HistoryTooLargeError(f"--history: {len(reads):,} records read is too many for a history")
    meta = {**meta, "workload": "load", "topic": topic, "final_drain": True}
    with _sink(out, meta) as write:

        def emit(time_us: int, fields: dict[str, Any]) -> None:
            op = {"wall": round(time_us / 1e6, 6), "mono": round((time_us - first_us) / 1e6, 6)}
            op.update({k: v for k, v in fields.items() if v is not None})
            write(op)

        for time_us, _order, fields in sends:
            emit(time_us, fields)
        clock = last_us + 1000
        for split, rows in _by_split(reads):
            process = 100_000 + split
            emit(clock, {"type": "invoke", "process": process, "f": "assign"})
            emit(
                clock,
                {"type": "ok", "process": process, "f": "assign", "value": [[topic, rows[0]["partition"]]]},
            )
            for start in range(0, len(rows), POLL_RECORDS):
                chunk = rows[start : start + POLL_RECORDS]
                records = [
                    [topic, r["partition"], r["offset"], _value_of(r["key"], r["value"])] for r in chunk
                ]
                emit(clock, {"type": "invoke", "process": process, "f": "poll"})
                clock += 100
                emit(clock, {"type": "ok", "process": process, "f": "poll", "records": records})
        return write.count


class _Counted:
    """Numbers the ops (``index``) and hands them to JSONL or Parquet."""

    def __init__(self, put: Callable[[dict[str, Any]], None]) -> None:
        self.put, self.count = put, 0

    def __call__(self, op: dict[str, Any]) -> None:
        self.put({"index": self.count, **op})
        self.count += 1


@contextmanager
def _sink(out: Path, meta: dict[str, Any]) -> Iterator[_Counted]:
    """Parquet when ``out`` ends in ``.parquet`` (:mod:`.history_table`), JSONL otherwise."""
    if out.suffix == ".parquet":
        from .history_table import HistoryWriter

        with HistoryWriter(out, meta) as writer:
            yield _Counted(writer.write)
        return
    with open(out, "w", encoding="utf-8") as sink:
        sink.write(json.dumps({"meta": meta}) + "\n")

        def put(op: dict[str, Any]) -> None:
            sink.write(json.dumps(op, separators=(",", ":")) + "\n")

        yield _Counted(put)


def _by_split(rows: list[dict[str, Any]]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    current: list[dict[str, Any]] = []
    for row in rows:
        if current and row["split"] != current[0]["split"]:
            yield current[0]["split"], current
            current = []
        current.append(row)
    if current:
        yield current[0]["split"], current
