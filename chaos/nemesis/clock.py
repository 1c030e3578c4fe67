"""Clock faults for broker processes through libfaketime (Debian's ``libfaketime``), on any target
this machine starts: the reference broker, Tansu and noida-db alike, since the library sits under
the process (``LD_PRELOAD``) and fakes ``clock_gettime``/``gettimeofday``/``time`` for it.

Every broker process of a campaign with clock faults starts with ``LD_PRELOAD`` naming the library
and ``FAKETIME_TIMESTAMP_FILE`` naming one file per campaign, read again at every clock call
(``FAKETIME_NO_CACHE=1``), so writing an offset there (``+30s``, ``-5s``) moves the wall clock of
every broker of the target at once, relative to the clients and to this harness. Monotonic clocks are
left alone (``DONT_FAKE_MONOTONIC=1``): timers and timeouts keep running, as they do when NTP steps
a machine's clock. All brokers share the one file: the skew is between the brokers and the world
(record timestamps, retention, transaction and session deadlines stamped in wall time), not between
brokers (per-node offsets would need per-node environments in the launcher).

* ``clock-skew``: the brokers' clock off by a seeded 5-60 s (either way) for the window.
* ``clock-jump``: a seeded jump forward of 10 minutes to 2 hours for the window, then back.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
CLOCK_FAULTS = ("clock-skew", "clock-jump")


def unavailable_reason() -> str | None:
    """Why clock faults cannot run here, or None."""
    if not LIBFAKETIME.is_file():
        return f"clock faults need libfaketime ({LIBFAKETIME} missing: apt-get install libfaketime)"
    return None


class Clock:
    """The offset file every broker process of one campaign reads its wall clock through."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.set(0.0)

    def env(self) -> dict[str, str]:
        return {
            "LD_PRELOAD": str(LIBFAKETIME),
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            "FAKETIME_NO_CACHE": "1",
            "DONT_FAKE_MONOTONIC": "1",
        }

    def set(self, offset_s: float) -> None:
        """Move the brokers' wall clock ``offset_s`` from real time (written whole, then renamed, so a
        reader never sees half a line)."""
        spare = self.path.with_suffix(".new")
        spare.write_text(f"{offset_s:+.3f}s\n")
        spare.replace(self.path)

    @staticmethod
    def offset_for(fault: str, pick: int) -> float:
        """The seeded offset of one planned fault."""
        rng = random.Random(pick)
        if fault == "clock-jump":
            return float(rng.randint(600, 7200))
        return rng.choice((-1, 1)) * rng.uniform(5.0, 60.0)

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Processes started inside (and restarted by the nemesis while it lasts) run on this clock."""
        saved = {k: os.environ.get(k) for k in self.env()}
        os.environ.update(self.env())
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
