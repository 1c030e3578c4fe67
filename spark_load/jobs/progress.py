"""Running a Spark action while printing what the tasks have reported so far.

Accumulators reach the driver as each task ends, so a job cut into many tasks
reports often; the action runs in a thread and the caller's callback sees the
counters about once a second. This works the same on a cluster, where the
executors cannot reach the terminal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark import Accumulator
from pyspark.accumulators import AccumulatorParam


class ListParam(AccumulatorParam[list[Any]]):
    """Concatenates small per-task reports (split statuses, reasons a task stopped early)."""

    def zero(self, value: list[Any]) -> list[Any]:
        return []

    def addInPlace(self, value1: list[Any], value2: list[Any]) -> list[Any]:
        value1.extend(value2)
        return value1


@dataclass(frozen=True, slots=True)
class ProgressSample:
    elapsed_s: float
    counters: dict[str, int]


def run_with_progress(
    action: Callable[[], Any],
    counters: Mapping[str, Accumulator[int]],
    on_progress: Callable[[ProgressSample], None] | None,
    interval_s: float = 1.0,
) -> Any:
    """Run ``action`` in a thread; call ``on_progress`` every ``interval_s`` and once at the end."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    started = time.monotonic()
    worker = threading.Thread(target=target, name="spark-load-action", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(interval_s)
        if on_progress is not None:
            on_progress(
                ProgressSample(time.monotonic() - started, {k: int(a.value) for k, a in counters.items()})
            )
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
