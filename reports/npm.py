"""The project's Node tools (``reports/node/package.json``): the Allure 2 CLI and kafkajs.

They live in the npm project's own folder, ``reports/node/node_modules``
(ignored by git), installed by ``.ci/setup`` or here on first use; once
installed nothing here touches the network, so reports and the kafkajs client
work offline. Two processes installing at once would trample each other's
node_modules, so installs take a file lock.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

from .paths import NODE_PROJECT

PACKAGE_JSON = NODE_PROJECT / "package.json"
NODE_MODULES = NODE_PROJECT / "node_modules"
ALLURE_BIN = NODE_MODULES / "allure-commandline" / "dist" / "bin" / "allure"


def npm_install(timeout_s: float = 900.0) -> None:
    """``npm install`` in reports/node; RuntimeError with npm's words on failure."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed (apt-get install npm, or Node from nodejs.org)")
    with open(NODE_PROJECT / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"],
                cwd=NODE_PROJECT,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"npm install took longer than {timeout_s:.0f}s") from None
        if done.returncode != 0:
            raise RuntimeError(f"npm install failed: {(done.stderr or done.stdout).strip()[-800:]}")


def allure_cli() -> Path:
    """The Allure 2 command line (``allure-commandline``), installed on first use."""
    if not ALLURE_BIN.exists():
        npm_install()
    if not ALLURE_BIN.exists():
        raise RuntimeError(f"npm install did not provide {ALLURE_BIN}")
    return ALLURE_BIN
