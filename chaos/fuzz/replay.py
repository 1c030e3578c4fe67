"""One frame, one fresh connection, one outcome: what ``--replay`` and the shrinker both need.

Reproducing a crash or a hang must not depend on what the run sent before, so each attempt opens
a connection of its own to a target that is known to answer (a crashed local target is restarted
first), sends the frame and classifies what follows exactly as a run does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

from fixtures.wire import WireError
from fixtures.wire.streams import open_authenticated

from .classify import (
    CLOSED,
    DIED,
    HANG,
    SILENT,
    UNDECODABLE,
    Outcome,
    check_answer,
    expected_silence,
    sent_header,
)
from .plan import api_label
from .target import FuzzTarget, probe

MAX_FILE = 1 << 20


async def _send_one(target: FuzzTarget, frame: bytes, hang_s: float) -> Outcome:
    try:
        async with asyncio.timeout(hang_s):
            reader, writer = await open_authenticated(target.host, target.port, target.security)
    except (TimeoutError, OSError, WireError):
        return Outcome(DIED, "the target accepts no connection")
    try:
        writer.write(frame)
        head = await asyncio.wait_for(reader.readexactly(4), hang_s)
        size = int.from_bytes(head, "big", signed=True)
        if not 0 <= size <= 64 << 20:
            return Outcome(UNDECODABLE, f"answer announces {size} bytes")
        answer = await asyncio.wait_for(reader.readexactly(size), hang_s)
        return check_answer(frame, answer)
    except TimeoutError:
        reason = expected_silence(frame, hang_s * 1000)
        if reason is not None:
            return Outcome(SILENT, reason)
        return await _judge(target, hang_s, HANG)
    except (OSError, asyncio.IncompleteReadError, ConnectionError):
        return await _judge(target, hang_s, CLOSED)
    finally:
        writer.close()


async def _judge(target: FuzzTarget, hang_s: float, otherwise: str) -> Outcome:
    """Closed or silent: did the target die? (its process, else two fresh probes)."""
    for _ in range(10):  # a process that aborts takes a moment to be reaped
        if target.process_alive() is False:
            return Outcome(DIED, "the process exited")
        await asyncio.sleep(0.05)
    for _ in range(2):
        pair = await probe(target.host, target.port, hang_s, target.security)
        if pair is not None:
            pair[1].close()
            return Outcome(otherwise)
        await asyncio.sleep(0.2)
    return Outcome(DIED, "no answer to a fresh connection")


def send_one(target: FuzzTarget, frame: bytes, hang_s: float = 5.0) -> Outcome:
    """Send ``frame`` alone to ``target`` (restarted first if it is local and down)."""
    ensure_up(target, hang_s)
    return asyncio.run(_send_one(target, frame, hang_s))


def ensure_up(target: FuzzTarget, hang_s: float) -> None:
    if target.local and (target.process_alive() is False or not _answers(target, hang_s)):
        target.restart()


def _answers(target: FuzzTarget, hang_s: float) -> bool:
    async def go() -> bool:
        pair = await probe(target.host, target.port, hang_s, target.security)
        if pair is None:
            return False
        pair[1].close()
        return True

    return asyncio.run(go())


# -- files -----------------------------------------------------------------------------------------


def write_finding(out: Path, outcome: str, frame: bytes, meta: dict[str, Any]) -> Path:
    """``<out>/<crash|hang>-<api>-v<ver>-<hash>.bin`` (the raw frame, size prefix included) and a
    ``.json`` beside it; returns the ``.bin`` path."""
    head = sent_header(frame)
    api, version = (api_label(head[0]), head[1]) if head else ("short", -1)
    digest = hashlib.sha256(frame).hexdigest()[:12]
    stem = "crash" if outcome == DIED else outcome
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}-{api}-v{version}-{digest}.bin"
    path.write_bytes(frame)
    path.with_suffix(".json").write_text(json.dumps(
        {"outcome": outcome, "api": api, "version": version, "bytes": len(frame), "hex": frame.hex(), **meta},
        indent=2, default=str) + "\n")
    return path


def read_frame_file(path: Path) -> bytes:
    """A reproducer's frame; refused when larger than any mutation makes one."""
    size = path.stat().st_size
    if size > MAX_FILE:
        raise ValueError(f"{path} holds {size} bytes; a reproducer is at most {MAX_FILE}")
    return path.read_bytes()
