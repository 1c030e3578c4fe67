"""What the load run prints while it works: one line at a time, flushed (a Spark job's output
interleaves with the JVM's), and each phase's progress with its rate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def say(text: str) -> None:
    print(text, flush=True)


def progress_printer(
    phase: str, counter: str, total: int, done_key: str, total_tasks: int
) -> Callable[[Any], None]:
    last = {"value": 0, "elapsed": 0.0}

    def show(sample: Any) -> None:
        value = sample.counters.get(counter, 0)
        interval = max(sample.elapsed_s - last["elapsed"], 1e-9)
        rate = (value - last["value"]) / interval
        last.update(value=value, elapsed=sample.elapsed_s)
        extra = "".join(
            f" {k}={v:,}" for k, v in sample.counters.items() if k not in (counter, done_key) and v
        )
        say(
            f"{phase:8s} {sample.elapsed_s:6.1f}s {counter}={value:,}/{total:,} ({rate:,.0f}/s){extra} "
            f"tasks {sample.counters.get(done_key, 0)}/{total_tasks}"
        )

    return show
