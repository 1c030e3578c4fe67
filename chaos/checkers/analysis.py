"""Indices built once from a history and shared by every detector (Jepsen's ``analysis`` step).

Writes come from ``send`` ops and the records of ``txn`` ops; reads from the records of ``poll``
ops and the ``read`` list of committed ``txn`` ops. Positions are (topic, partition, offset).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from chaos.history import History, Op

Position = tuple[str, int, int]
TopicPartition = tuple[str, int]


@dataclass(slots=True)
class Write:
    value: Any
    status: str  # ok | fail | info | open (never completed)
    process: int | str
    invoke_index: int
    complete_index: int | None
    topic: str | None
    partition: int | None
    offset: int | None


@dataclass(slots=True)
class Read:
    op_index: int
    process: int | str
    topic: str
    partition: int
    offset: int
    value: Any


@dataclass
class Analysis:
    writes: dict[Any, Write] = field(default_factory=dict)
    reads: list[Read] = field(default_factory=list)
    """Reads in history order (the order each process saw them)."""
    assigns: dict[int | str, list[int]] = field(default_factory=lambda: defaultdict(list))
    """Op indices of each process's ``assign`` completions (a new poll sequence starts after each)."""
    offsets_by_position: dict[Position, dict[Any, list[int]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    """(t, p, o) -> value -> op indices that show it there (ok sends and reads)."""
    known_offsets: dict[TopicPartition, list[int]] = field(default_factory=dict)
    """Sorted offsets known to hold a record, per partition."""
    max_read_offset: dict[TopicPartition, int] = field(default_factory=dict)
    read_values: dict[Any, list[int]] = field(default_factory=lambda: defaultdict(list))
    final_values: set[Any] | None = None
    """What the final reader found in the whole log, when it read every partition to its end."""
    final_start: int | None = None
    """Index of the final reader's first op. Writes acknowledged after it are the restart phase's
    (:mod:`.restart` judges them), not the campaign's."""

    def after_final_read(self, w: Write) -> bool:
        start, done = self.final_start, w.complete_index
        return start is not None and done is not None and done > start

    def known_between(self, tp: TopicPartition, low: int, high: int) -> list[int]:
        """Known offsets strictly between ``low`` and ``high``."""
        offsets = self.known_offsets.get(tp, [])
        return offsets[bisect.bisect_right(offsets, low) : bisect.bisect_left(offsets, high)]


def _record_write(
    a: Analysis,
    value: Any,
    invoke: Op,
    done: Op | None,
    topic: str | None,
    partition: int | None,
    offset: int | None,
) -> None:
    status = done.type if done is not None else "open"
    write = Write(
        value, status, invoke.process, invoke.index, done.index if done else None, topic, partition, offset
    )
    previous = a.writes.get(value)
    if previous is None or previous.status != "ok":
        a.writes[value] = write
    if status == "ok" and topic is not None and partition is not None and offset is not None:
        a.offsets_by_position[(topic, partition, offset)][value].append(done.index if done else invoke.index)


def analyse(history: History) -> Analysis:
    a = Analysis()
    for invoke, done in history.pairs():
        if invoke.f == "send":
            source = done if done is not None else invoke
            _record_write(
                a,
                invoke.value,
                invoke,
                done,
                source.topic,
                source.partition,
                done.offset if done is not None and done.type == "ok" else None,
            )
        elif invoke.f == "txn" and done is not None:
            for topic, partition, offset, value in done.records or []:
                known = (
                    offset if done.type == "ok" and offset is not None and offset >= 0 else None
                )  # -1: no report
                _record_write(a, value, invoke, done, topic, partition, known)
    final_reader = history.meta.get("final_reader")
    if final_reader is not None and history.meta.get("final_read_complete"):
        a.final_values = set()
    for op in history.ops:
        if op.type != "ok":
            continue
        if final_reader is not None and op.process == final_reader and a.final_start is None:
            a.final_start = op.index
        if a.final_values is not None and op.process == final_reader and op.f == "poll":
            a.final_values.update(r[3] for r in op.records or [])
        if op.f == "assign":
            a.assigns[op.process].append(op.index)
            a.reads.append(Read(op.index, op.process, "", -1, -1, _ASSIGN))
            continue
        records: list[Any] = []
        if op.f == "poll":
            records = op.records or []
        elif op.f == "txn" and isinstance(op.value, dict):
            records = op.value.get("read") or []
        for topic, partition, offset, value in records:
            a.reads.append(Read(op.index, op.process, topic, partition, offset, value))
            a.offsets_by_position[(topic, partition, offset)][value].append(op.index)
            a.read_values[value].append(op.index)
            tp = (topic, partition)
            if offset > a.max_read_offset.get(tp, -1):
                a.max_read_offset[tp] = offset
    per_tp: dict[TopicPartition, set[int]] = defaultdict(set)
    for topic, partition, offset in a.offsets_by_position:
        per_tp[(topic, partition)].add(offset)
    a.known_offsets = {tp: sorted(offsets) for tp, offsets in per_tp.items()}
    return a


class _AssignMarker:
    """Placeholder value of the pseudo-read an ``assign`` leaves in the read stream."""

    def __repr__(self) -> str:
        return "<assign>"


_ASSIGN = _AssignMarker()


def is_assign(read: Read) -> bool:
    return read.value is _ASSIGN
