"""Headless Chromium (Debian's ``chromium``): the rendered page of a report, and a screenshot of it.

Only loopback and local files are opened; background networking, component
updates and sync are off, so the browser itself reaches nothing outside.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,900", "--virtual-time-budget=8000",
)


class BrowserUnavailableError(RuntimeError):
    """No Chromium here (the reason is in the message)."""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise BrowserUnavailableError("no chromium on PATH (apt-get install chromium fonts-liberation)")


def _run(args: list[str], timeout_s: float) -> subprocess.CompletedProcess[bytes]:
    # a profile of its own, so two runs (or a user's browser) never share one
    with tempfile.TemporaryDirectory(prefix="kh-chromium-") as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, timeout=timeout_s)


def rendered_dom(page: Path, timeout_s: float = 120.0) -> str:
    """The page's DOM after its scripts ran (what a person sees, as HTML)."""
    done = _run(["--dump-dom", page.resolve().as_uri()], timeout_s)
    if done.returncode != 0 or not done.stdout:
        why = done.stderr.decode(errors="replace")[-400:]
        raise BrowserUnavailableError(f"chromium --dump-dom failed: {why}")
    return done.stdout.decode(errors="replace")


def screenshot(page: Path, png: Path, timeout_s: float = 120.0) -> Path:
    png.parent.mkdir(parents=True, exist_ok=True)
    done = _run([f"--screenshot={png.resolve()}", page.resolve().as_uri()], timeout_s)
    if not png.exists():
        why = done.stderr.decode(errors="replace")[-400:]
        raise BrowserUnavailableError(f"chromium wrote no screenshot: {why}")
    return png
