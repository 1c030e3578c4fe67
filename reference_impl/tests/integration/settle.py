"""Waiting for a cluster to converge: each node applies the metadata log on its own time."""

from __future__ import annotations

import time
from collections.abc import Callable

SETTLE_S = 20.0


def until(check: Callable[[], bool], what: str, timeout_s: float = SETTLE_S) -> None:
    """Poll ``check`` every 0.2 s until it holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout_s} s: {what}")
