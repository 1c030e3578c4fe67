"""Durability after a restart: everything acknowledged before every broker was killed must be
readable again, with no new write, within the phase's bound.

The phase (:mod:`chaos.workloads.restart`) records a ``restart-all`` fault (start: every broker
killed; stop: every process started again) and then only reads, as process ``meta.restart_check.reader``.
This checker holds the reader's polls after the restart to every write acknowledged before the
kill: a value it did not return is ``unreadable_after_restart``, whether the broker lost it or
keeps it hidden until the next write (issue 17 item 9: a high watermark restored from an old
checkpoint). A value lost outright is also a ``lost_write`` when the campaign's final read saw
it; this anomaly is about the restart alone.

Its figures go to the result's stats: how many writes were acknowledged before the kill, how long
the brokers were down, and how long after the restart the last of them became readable.
"""

from __future__ import annotations

from typing import Any

from chaos.history import NEMESIS, RESTART_FAULT, History, Op

from .analysis import Analysis
from .queue import Anomaly

NAME = "unreadable_after_restart"


def _restart_window(history: History) -> tuple[Op, Op | None] | None:
    """The last restart fault's (start, stop) ops; None when the history has no restart phase."""
    start: Op | None = None
    stop: Op | None = None
    for op in history.ops:
        if op.process != NEMESIS or not isinstance(op.value, dict):
            continue
        if op.value.get("fault") != RESTART_FAULT:
            continue
        if op.f == "start":
            start, stop = op, None
        elif op.f == "stop" and start is not None and op.value.get("id") == start.value.get("id"):
            stop = op
    return None if start is None else (start, stop)


def unreadable_after_restart(history: History, a: Analysis) -> tuple[list[Anomaly], dict[str, Any]]:
    """(anomalies, stats) of the restart phase; ([], {}) when the history has none."""
    window = _restart_window(history)
    if window is None:
        return [], {}
    start, stop = window
    phase = history.meta.get("restart_check") or {}
    reader = phase.get("reader")
    bound = phase.get("bound_s")
    acked = {
        value: w
        for value, w in a.writes.items()
        if w.status == "ok" and w.complete_index is not None and w.complete_index < start.index
    }
    first_read: dict[Any, float] = {}
    if stop is not None:
        for op in history.ops[stop.index + 1 :]:
            if op.process != reader or op.f != "poll" or op.type != "ok":
                continue
            for _topic, _partition, _offset, value in op.records or []:
                first_read.setdefault(value, op.mono)
    missing = [value for value in acked if value not in first_read]
    anomalies = []
    within = f"within {bound} s " if bound is not None else ""
    for value in missing:
        w = acked[value]
        where = f"{w.topic}-{w.partition}@{w.offset}"
        anomalies.append(
            Anomaly(
                NAME,
                f"{value!r} acknowledged at {where} before every broker was killed was not readable "
                f"{within}after the restart, with no write since",
                [w.invoke_index] + ([w.complete_index] if w.complete_index is not None else []),
                {"value": value, "partition": w.partition, "offset": w.offset},
            )
        )
    seen = [first_read[value] for value in acked if value in first_read]
    stats: dict[str, Any] = {
        "restart_acked": len(acked),
        NAME: len(missing),
        "restart_down_s": round(stop.mono - start.mono, 3) if stop is not None else None,
        "restart_readable_s": (
            round(max(seen) - stop.mono, 3) if stop is not None and seen and not missing else None
        ),
    }
    if stop is not None and "error" in (stop.value or {}):
        stats["restart_error"] = stop.value["error"]
    return anomalies, stats
