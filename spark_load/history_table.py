"""Histories as Parquet: the JSONL history format (``chaos/history/README.md``) as one flat table.

Why: a campaign against a large cluster records hundreds of millions of ops; JSONL of that size is
read by one process at tens of thousands of lines a second, Parquet is read column by column by
many Spark tasks (``chaos/checkers/spark_checks.py``). JSONL stays the format of small histories.

One row per op, the columns of the JSONL fields::

    index int64, type string, process string, f string, wall double, mono double,
    value string (JSON text), topic string, partition int32, offset int64, error string,
    records list<struct<topic string, partition int32, offset int64, value string (JSON text)>>

``process`` is the process as text (``"3"``, ``"nemesis"``): a reader turns digits back into an
int. ``value`` and each record's value are JSON text, so values of any JSON type survive, and equal
values have equal text (a checker compares values as text). The run's ``meta`` is the file's
key-value metadata (``kafka_harness.meta``, JSON). A history may be one file or a directory of
``part-*.parquet`` files (in order), all with that schema.

Imports pyarrow only (not PySpark); works on op dicts (the JSONL form), so both the load's history
(:mod:`spark_load.history`) and :mod:`chaos.history` write through it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

META_KEY = b"kafka_harness.meta"
ROW_GROUP = 100_000
"""Ops buffered before a row group is written: bounds the writer's memory."""
MAX_FILES = 100_000


def schema() -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    record = pa.struct(
        [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("value", pa.string())]
    )
    return pa.schema(
        [
            ("index", pa.int64()),
            ("type", pa.string()),
            ("process", pa.string()),
            ("f", pa.string()),
            ("wall", pa.float64()),
            ("mono", pa.float64()),
            ("value", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("error", pa.string()),
            ("records", pa.list_(record)),
        ]
    )


COLUMNS = ("index", "type", "process", "f", "wall", "mono", "value", "topic", "partition", "offset", "error")


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def is_parquet(path: str | Path) -> bool:
    """A Parquet history: a ``.parquet`` file, a file starting with Parquet's magic, or a directory."""
    where = Path(path)
    if where.is_dir():
        return True
    if where.suffix == ".parquet":
        return True
    try:
        with open(where, "rb") as source:
            return source.read(4) == b"PAR1"
    except OSError:
        return False


class HistoryWriter:
    """Appends op dicts (the JSONL form) to a Parquet file, one row group per :data:`ROW_GROUP` ops."""

    def __init__(self, path: str | Path, meta: dict[str, Any], row_group: int = ROW_GROUP) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        self._schema = schema().with_metadata({META_KEY: _text(meta).encode()})
        self._writer = pq.ParquetWriter(str(path), self._schema, compression="zstd")
        self._pa = pa
        self._row_group = max(1, min(row_group, 10 * ROW_GROUP))
        self._columns: dict[str, list[Any]] = {name: [] for name in (*COLUMNS, "records")}
        self.count = 0

    def write(self, op: dict[str, Any]) -> None:
        columns = self._columns
        for name in COLUMNS:
            item = op.get(name)
            if name == "value":
                item = None if item is None else _text(item)
            elif name == "process":
                item = str(item)
            columns[name].append(item)
        records = op.get("records")
        columns["records"].append(
            None
            if records is None
            else [
                {
                    "topic": r[0],
                    "partition": int(r[1]),
                    "offset": -1 if r[2] is None else int(r[2]),
                    "value": _text(r[3]),
                }
                for r in records
            ]
        )
        self.count += 1
        if len(columns["index"]) >= self._row_group:
            self.flush()

    def flush(self) -> None:
        if not self._columns["index"]:
            return
        table = self._pa.Table.from_pydict(self._columns, schema=self._schema)
        self._writer.write_table(table)
        self._columns = {name: [] for name in self._columns}

    def close(self) -> None:
        self.flush()
        self._writer.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def files(path: str | Path) -> list[Path]:
    where = Path(path)
    if not where.is_dir():
        return [where]
    found = sorted(where.glob("*.parquet"))
    if not found:
        raise ValueError(f"{where} holds no .parquet file")
    if len(found) > MAX_FILES:
        raise ValueError(f"{where} holds {len(found):,} files, more than {MAX_FILES:,}")
    return found


def read_meta(path: str | Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    raw = (pq.read_schema(str(files(path)[0])).metadata or {}).get(META_KEY)
    meta = json.loads(raw) if raw else {}
    if not isinstance(meta, dict):
        raise ValueError("the history's meta is not a JSON object")
    return meta


def _process(text: str) -> int | str:
    return int(text) if text.lstrip("-").isdigit() else text


def iter_op_dicts(path: str | Path, batch_rows: int = 65_536) -> Iterator[dict[str, Any]]:
    """The ops of a Parquet history as JSONL-form dicts, in stored order, a batch at a time."""
    import pyarrow.parquet as pq

    for file in files(path):
        source = pq.ParquetFile(str(file))
        missing = {"index", "type", "process", "f", "wall", "mono"} - set(source.schema_arrow.names)
        if missing:
            raise ValueError(f"{file} lacks the columns {sorted(missing)}: not a history")
        for batch in source.iter_batches(batch_size=batch_rows):
            for row in batch.to_pylist():
                op: dict[str, Any] = {k: v for k, v in row.items() if v is not None and k != "records"}
                op["process"] = _process(row["process"])
                if row.get("value") is not None:
                    op["value"] = json.loads(row["value"])
                if row.get("records") is not None:
                    op["records"] = [
                        [r["topic"], r["partition"], r["offset"], json.loads(r["value"])]
                        for r in row["records"]
                    ]
                yield op
