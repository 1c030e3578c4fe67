"""``kafka-harness chaos`` ended with SIGTERM ends what it started: the reference brokers and the
Toxiproxy server run in sessions of their own (so a signal to the campaign's process group does not
reach them), and before commit 6d11415 an overrun campaign ended by SIGTERM left every one running.

The campaign runs as a subprocess; its children (found through ``/proc``: their parent is the
campaign) are noted once a broker and the Toxiproxy server are up, the campaign gets SIGTERM, and
none of those children may remain. Anything left is killed at the end so a failure leaks nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UP_BOUND_S = 60.0
"""Bound on the wait for the campaign's broker and Toxiproxy server (seconds)."""
END_BOUND_S = 40.0
"""Bound on the campaign's exit after SIGTERM (its brokers get SIGTERM, then SIGKILL after a while)."""

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _children(parent: int) -> dict[int, str]:
    """Live processes whose parent is ``parent``: pid -> command line."""
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis
        fields = stat.rpartition(")")[2].split()
        if len(fields) >= 2 and fields[0] != "Z" and int(fields[1]) == parent:
            out[int(entry.name)] = _cmdline(int(entry.name))
    return out


def _alive(pid: int, cmdline: str) -> bool:
    """Still running as the same program (a reused pid runs something else)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z" and _cmdline(pid) == cmdline


def test_sigterm_ends_the_campaigns_brokers_and_toxiproxy(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KH_TARGET", "KH_BROKER_CONFIGS")}
    log = tmp_path / "chaos.log"
    argv = [sys.executable, "-m", "kafka_harness", "chaos", "--target", "reference", "--nemesis", "pause",
            "--time", "60", "--rate", "50", "--restart-check", "false",
            "--out", str(tmp_path / "out")]  # fmt: skip
    started = time.monotonic()
    with log.open("wb") as sink:
        campaign = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # fmt: skip
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + UP_BOUND_S
        while time.monotonic() < deadline and campaign.poll() is None:
            seen.update(_children(campaign.pid))
            commands = list(seen.values())
            up = "brokers advertise" in log.read_text(errors="replace")
            if up and any(" broker " in c for c in commands) and any(" toxiproxy " in c for c in commands):
                break
            time.sleep(0.2)
        text = log.read_text(errors="replace")
        assert campaign.poll() is None, f"the campaign ended before SIGTERM:\n{text}"
        assert any(" broker " in c for c in seen.values()), f"no broker within {UP_BOUND_S:.0f} s:\n{text}"
        assert any(" toxiproxy " in c for c in seen.values()), f"no Toxiproxy server:\n{text}"
        up_s = time.monotonic() - started
        campaign.send_signal(signal.SIGTERM)
        code = campaign.wait(timeout=END_BOUND_S)
        left = {pid: c for pid, c in seen.items() if _alive(pid, c)}
        print(f"brokers and Toxiproxy up after {up_s:.1f} s; {len(seen)} children; exit {code} "
              f"{time.monotonic() - started - up_s:.1f} s after SIGTERM")  # fmt: skip
        assert not left, f"left running after SIGTERM: {left}"
        assert code == 128 + signal.SIGTERM, log.read_text(errors="replace")
    finally:
        if campaign.poll() is None:
            os.killpg(campaign.pid, signal.SIGKILL)
            campaign.wait(timeout=10)
        for pid, c in seen.items():
            if _alive(pid, c):
                os.kill(pid, signal.SIGKILL)
