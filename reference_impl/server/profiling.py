"""An opt-in profile of a broker process: ``KH_BROKER_CPROFILE=DIR`` runs the broker under cProfile
and writes ``DIR/broker-<node id>.prof`` when it exits (SIGTERM included: the shell returns from its
loop first). Used to find what dominates a path (issue 22's acks=all round trip); off by default,
nothing is measured or written without the variable. The profile's clock is the process's CPU
time, so frames show what the broker computes, not how long the shared machine kept it waiting."""

from __future__ import annotations

import cProfile
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

PROFILE_ENV = "KH_BROKER_CPROFILE"

T = TypeVar("T")


def run_profiled(node_id: int, run: Callable[[], T]) -> T:
    """``run()``, under cProfile when ``KH_BROKER_CPROFILE`` names a directory."""
    where = os.environ.get(PROFILE_ENV)
    if not where:
        return run()
    profile = cProfile.Profile(time.process_time)  # CPU time: waiting in epoll costs nothing
    try:
        return profile.runcall(run)
    finally:
        Path(where).mkdir(parents=True, exist_ok=True)
        profile.dump_stats(str(Path(where) / f"broker-{node_id}.prof"))
