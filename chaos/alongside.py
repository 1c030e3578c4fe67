"""A Spark load run alongside a campaign: the same faults hit the campaign's workload and the load.

The load is ``kafka-harness load`` started as a process against the campaign's
proxied bootstrap address, from a load spec (``records=200000,rate=2000,verify``,
see ``spark_load/spec.py``). It runs while the nemesis works; after the faults
are healed the campaign waits for it (bounded), and its verdict joins the
campaign's: a load that lost or duplicated records makes the campaign invalid.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from fixtures.targets import processes
from spark_load.spec import LoadSpecError, load_command


@dataclass
class LoadOutcome:
    spec: str
    returncode: int | None
    verdict_line: str
    log: Path
    timed_out: bool = False

    @property
    def valid(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec, "returncode": self.returncode, "verdict": self.verdict_line,
                "log": str(self.log), "timed_out": self.timed_out, "valid": self.valid}


def check_spec(spec: str) -> None:
    """Raise ValueError for a spec the load command would refuse (before anything starts)."""
    try:
        load_command(spec, "127.0.0.1:9")
    except LoadSpecError as exc:
        raise ValueError(str(exc)) from None


class LoadAlongside:
    """The load process of one campaign: started once the topic exists, awaited after the faults."""

    def __init__(self, spec: str, bootstrap: str, out_dir: Path) -> None:
        self.spec = spec
        self.log = out_dir / "load.log"
        self.command = [*load_command(spec, bootstrap), "--out", str(out_dir / "load")]
        self._sink: IO[str] | None = None
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self._sink = self.log.open("w")
        self._sink.write("$ " + " ".join(self.command) + "\n")
        self._sink.flush()
        self._process = processes.start_in_session(
            self.command, self._sink, env={"PYTHONUNBUFFERED": "1"}, text=True
        )

    def finish(self, timeout_s: float) -> LoadOutcome:
        """Wait up to ``timeout_s`` for the load to end; an overrun is killed and counts as invalid."""
        assert self._process is not None and self._sink is not None
        timed_out = False
        try:
            self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            self.stop()
        self._sink.close()
        text = self.log.read_text(errors="replace")
        lines = [line for line in text.splitlines() if line.startswith("VERDICT:")]
        verdict = lines[-1] if lines else "VERDICT: could not run (the load printed no verdict)"
        return LoadOutcome(self.spec, self._process.returncode, verdict, self.log, timed_out)

    def stop(self) -> None:
        """Kill the load and the Spark processes it started (used when the campaign ends early)."""
        if self._process is None or self._process.poll() is not None:
            return
        processes.end_group(self._process, 15)
