"""The main job's stages: each level of checks is one child process with a time budget.

A stage is the same command a user would type (``pytest suites/conformance
--target T``, ``kafka-harness chaos ...``, ``kafka-harness load ...``), so the
main job adds no behaviour of its own: it sequences them, gives each its own
process group (a stage that overruns is killed with every broker it started),
keeps its output in a log file, and reads its verdict back.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fixtures.targets import processes

VERDICT = re.compile(r"^VERDICT: (?P<verdict>valid|invalid|could not run)(?P<counts>.*)$")
STOP_GRACE_S = 60.0
"""How long a stage has, after SIGTERM, to stop what it started before its group is SIGKILLed. A
chaos campaign stops its brokers on SIGTERM (chaos/tests/test_sigterm.py), and those run in their
own sessions, out of the stage's group: SIGKILLed after 10 s while stopping three of them, a
campaign left brokers running."""


@dataclass(frozen=True)
class Stage:
    """One command of the plan. ``level`` is the summary row it reports under."""

    name: str
    level: str
    argv: list[str]
    budget_s: float
    out_dir: Path | None = None
    expected_deviation: str | None = None
    """Why this stage is expected to fail on the target (from its expectations file), if it is."""
    deviation_is_intermittent: bool = False
    """Declared ``strict = false``: a fault-timing deviation that some runs do not show."""
    env: dict[str, str] = field(default_factory=dict)
    """Added to the environment the stage runs in (``kafka-harness defects`` pins the target's)."""


@dataclass
class StageResult:
    stage: Stage
    returncode: int | None
    seconds: float
    log: Path
    verdict: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def python_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafka_harness", *args]


def python_pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *args]


def parse_verdict(text: str) -> tuple[str | None, dict[str, int]]:
    """The last ``VERDICT:`` line of a command's output: its word and its ``name=count`` pairs."""
    for line in reversed(text.splitlines()):
        match = VERDICT.match(line.strip())
        if match:
            counts = {}
            for pair in match.group("counts").split():
                name, _, value = pair.partition("=")
                if value.lstrip("-").isdigit():
                    counts[name] = int(value)
            return match.group("verdict"), counts
    return None, {}


def run_stage(stage: Stage, logs: Path, *, echo: bool = True) -> StageResult:
    """Run one stage to completion or to its budget; its output goes to ``logs/<name>.log``.

    A thread copies the output, so a stage that hangs without printing still meets its deadline."""
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{stage.name}.log"
    started = time.monotonic()
    with log.open("w") as sink:
        sink.write("$ " + " ".join(stage.argv) + "\n")
        sink.flush()
        process = processes.start_in_session(
            stage.argv, subprocess.PIPE, env={"PYTHONUNBUFFERED": "1", **stage.env}, text=True
        )

        def pump() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                sink.write(line)
                if echo and _worth_echoing(line):
                    print(f"  [{stage.name}] {line.rstrip()}", flush=True)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            process.wait(timeout=stage.budget_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            processes.end_group(process, STOP_GRACE_S)
        except BaseException:
            processes.end_group(process, STOP_GRACE_S)
            raise
        else:
            processes.end_group(process)  # brokers a finished stage left behind
        reader.join(timeout=10)
        if timed_out:
            sink.write(f"\n[main job] stage {stage.name} overran its budget of {stage.budget_s:.0f} s\n")
    text = log.read_text(errors="replace")
    verdict, counts = parse_verdict(text)
    return StageResult(stage, process.returncode, time.monotonic() - started, log, verdict, counts, timed_out)


_ECHO = re.compile(
    r"^(VERDICT:|=+ .* in [0-9.]+s|[0-9]+ (passed|failed).* in [0-9.]+s|FAILED |ERROR |property: |throughput)"
)


def _worth_echoing(line: str) -> bool:
    """Progress a person wants while the job runs: verdicts, pytest's last line, failures."""
    return bool(_ECHO.match(line.strip()))
