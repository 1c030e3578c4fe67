"""Histories: what clients and nemeses did, as ops, and their JSONL codec (format in README.md).

Clients record and never judge: each operation is an ``invoke`` op followed by one completion,
``ok`` (it happened), ``fail`` (it certainly did not) or ``info`` (unknown: it may have). The
checkers in :mod:`chaos.checkers` are pure functions of a :class:`History`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

TYPES = ("invoke", "ok", "fail", "info")
NEMESIS = "nemesis"
RESTART_FAULT = "restart-all"
"""The nemesis fault of the durability-after-restart phase: every broker killed, then started."""

# (topic, partition, offset, value): one record a poll returned or a transaction wrote
Record = tuple[str, int, int, Any]


@dataclass(slots=True)
class Op:
    """One history line. Fields a kind of op does not use stay None and are not written."""

    index: int
    type: str
    process: int | str
    f: str
    wall: float
    """Unix time, seconds."""
    mono: float
    """Monotonic seconds since the history began (orders ops and measures durations)."""
    value: Any = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    error: str | None = None
    records: list[Record] | None = None
    """Records a ``poll`` returned, or that a ``txn`` wrote (``value`` then holds what it read)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "type": self.type,
            "process": self.process,
            "f": self.f,
            "wall": round(self.wall, 6),
            "mono": round(self.mono, 6),
        }
        for key in ("value", "topic", "partition", "offset", "error"):
            item = getattr(self, key)
            if item is not None:
                out[key] = item
        if self.records is not None:
            out["records"] = [list(r) for r in self.records]
        return out

    @staticmethod
    def from_json(raw: dict[str, Any]) -> Op:
        try:
            kind = raw["type"]
            if kind not in TYPES:
                raise ValueError(f"type {kind!r} is not one of {TYPES}")
            records = raw.get("records")
            return Op(
                int(raw["index"]),
                kind,
                raw["process"],
                str(raw["f"]),
                float(raw["wall"]),
                float(raw["mono"]),
                raw.get("value"),
                raw.get("topic"),
                raw.get("partition"),
                raw.get("offset"),
                raw.get("error"),
                None if records is None else [(r[0], int(r[1]), _offset(r[2]), r[3]) for r in records],
            )
        except KeyError as exc:
            raise ValueError(f"op lacks the field {exc.args[0]!r}") from exc


def _offset(raw: Any) -> int:
    """A record's offset; ``null`` (a delivery report without one) reads as -1, as the README says."""
    return -1 if raw is None else int(raw)


@dataclass
class History:
    """Ops in recorded order plus the run's parameters (``meta``: workload, acks, idempotence, seed...)."""

    ops: list[Op] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def pairs(self) -> Iterator[tuple[Op, Op | None]]:
        """(invoke, completion) for every client operation; completion None if it never completed.

        A process has one operation open at a time, except sends: an asynchronous producer has
        many in flight, so a send's completion is matched to its invoke by its (unique) value.
        """
        open_ops: dict[Any, Op] = {}
        done: list[tuple[Op, Op | None]] = []
        for op in self.ops:
            if op.process == NEMESIS:
                continue
            key = (op.process, op.value) if op.f == "send" else op.process
            if op.type == "invoke":
                if key in open_ops:
                    done.append((open_ops.pop(key), None))
                open_ops[key] = op
            elif key in open_ops:
                done.append((open_ops.pop(key), op))
        done.extend((op, None) for op in open_ops.values())
        return iter(done)

    def completions(self) -> Iterator[Op]:
        return (op for op in self.ops if op.type != "invoke" and op.process != NEMESIS)

    def nemesis_ops(self) -> list[Op]:
        return [op for op in self.ops if op.process == NEMESIS]


def fault_windows(history: History) -> list[tuple[str, float, float | None]]:
    """(fault name, start mono, end mono or None) for each recorded fault, in start order."""
    starts: dict[Any, Op] = {}
    windows: list[tuple[str, float, float | None]] = []
    for op in history.nemesis_ops():
        value = op.value if isinstance(op.value, dict) else {}
        key = value.get("id", value.get("fault"))
        if op.f == "start":
            starts[key] = op
        elif op.f == "stop" and key in starts:
            begun = starts.pop(key)
            windows.append((str(value.get("fault")), begun.mono, op.mono))
    for key, begun in starts.items():
        windows.append((str((begun.value or {}).get("fault", key)), begun.mono, None))
    return sorted(windows, key=lambda w: w[1])


class Recorder:
    """Thread-safe history under construction; client threads and callbacks append to it."""

    def __init__(self, meta: dict[str, Any] | None = None) -> None:
        self.history = History(meta=dict(meta or {}))
        self._lock = threading.Lock()
        self._mono0 = time.monotonic()

    def _append(self, type_: str, process: int | str, f: str, **fields: Any) -> Op:
        with self._lock:
            op = Op(
                len(self.history.ops),
                type_,
                process,
                f,
                time.time(),
                time.monotonic() - self._mono0,
                **fields,
            )
            self.history.ops.append(op)
            return op

    def invoke(self, process: int | str, f: str, **fields: Any) -> Op:
        return self._append("invoke", process, f, **fields)

    def complete(self, invoked: Op, type_: str, **fields: Any) -> Op:
        """Record the outcome of ``invoked``; fields not given are carried over from the invoke."""
        if type_ not in TYPES[1:]:
            raise ValueError(f"a completion is ok, fail or info, not {type_!r}")
        for key in ("value", "topic", "partition"):
            fields.setdefault(key, getattr(invoked, key))
        return self._append(type_, invoked.process, invoked.f, **fields)

    def nemesis(self, f: str, value: dict[str, Any]) -> Op:
        """A fault's ``start`` or ``stop`` (type info, process ``nemesis``)."""
        return self._append("info", NEMESIS, f, value=value)

    def now(self) -> float:
        return time.monotonic() - self._mono0


def write_jsonl(history: History, path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        dump(history, out)


def dump(history: History, out: IO[str]) -> None:
    out.write(json.dumps({"meta": history.meta}, default=str) + "\n")
    for op in history.ops:
        out.write(json.dumps(op.to_json(), default=str, separators=(",", ":")) + "\n")


def write_parquet(history: History, path: str | Path) -> None:
    """The history as Parquet (:mod:`spark_load.history_table`: one row per op, meta in the file)."""
    from spark_load.history_table import HistoryWriter

    with HistoryWriter(path, history.meta) as writer:
        for op in history.ops:
            writer.write(op.to_json())


def write_history(history: History, path: str | Path) -> None:
    """Parquet when ``path`` ends in ``.parquet``, JSONL otherwise."""
    if Path(path).suffix == ".parquet":
        write_parquet(history, path)
    else:
        write_jsonl(history, path)


def iter_ops(path: str | Path) -> tuple[dict[str, Any], Iterator[Op]]:
    """(meta, the ops in recorded order) of a JSONL or a Parquet history, read as they are used;
    a malformed op raises ValueError (naming its line in JSONL)."""
    from spark_load.history_table import is_parquet

    if is_parquet(path):
        from spark_load.history_table import iter_op_dicts, read_meta

        return read_meta(path), (Op.from_json(raw) for raw in iter_op_dicts(path))
    history = read_jsonl(path)
    return history.meta, iter(history.ops)


def read_history(path: str | Path) -> History:
    """A whole history from JSONL or Parquet (the same ops either way)."""
    meta, ops = iter_ops(path)
    return History(list(ops), meta)


def read_jsonl(path: str | Path) -> History:
    """Read a history; a malformed line raises ValueError naming its line number."""
    with open(path, encoding="utf-8") as source:
        return parse_lines(source)


def parse_lines(lines: Iterable[str]) -> History:
    history = History()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("a line is a JSON object")
            if "meta" in raw and "type" not in raw:
                history.meta.update(raw["meta"] or {})
                continue
            history.ops.append(Op.from_json(raw))
        except (ValueError, TypeError, IndexError) as exc:
            raise ValueError(f"line {number}: {exc}") from exc
    return history
