"""Waiting for a cluster to converge: each node applies the metadata log on its own time."""

from __future__ import annotations

from collections.abc import Callable

from fixtures.wire.settle import until as _until

SETTLE_S = 20.0


def until(check: Callable[[], bool], what: str, timeout_s: float = SETTLE_S) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` after ``timeout_s`` (the harness' one loop)."""
    _until(check, what, timeout_s, interval_s=0.2)
