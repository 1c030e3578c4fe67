"""Find a Toxiproxy server to drive, in the order the issue asks for.

1. an existing server at ``--toxiproxy-url``;
2. a ``toxiproxy-server`` binary on PATH;
3. a Toxiproxy container, when a Docker engine answers;
4. otherwise the project's own server, started as ``kafka-harness toxiproxy`` in a child process.

Every path ends in an :class:`Endpoint` that points ``toxiproxy-python``'s ``APIConsumer`` at the
server and stops what it started on ``close()``.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import requests

from fixtures.targets import free_port, processes, wait_for_port


class ToxiproxyUnavailableError(RuntimeError):
    """No Toxiproxy server could be found or started (reason in the message)."""


@dataclass
class Endpoint:
    host: str
    port: int
    kind: str  # url | binary | container | project
    _stop: list[Any] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def use(self) -> None:
        """Point toxiproxy-python (class attributes of APIConsumer) at this server."""
        from toxiproxy.api import APIConsumer

        APIConsumer.host = self.host
        APIConsumer.port = self.port

    def close(self) -> None:
        for stop in reversed(self._stop):
            with contextlib.suppress(Exception):
                stop()
        self._stop.clear()

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/version", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _child(command: list[str], host: str, port: int, kind: str) -> Endpoint:
    process = processes.start_in_session(command, subprocess.DEVNULL)

    def stop() -> None:
        processes.end_child(process, 10)

    try:
        wait_for_port(host, port, 15, process)
    except Exception as exc:
        stop()
        raise ToxiproxyUnavailableError(f"{kind} Toxiproxy did not start: {exc}") from exc
    return Endpoint(host, port, kind, [stop])


def _container(host: str) -> Endpoint | None:
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception:  # no engine: the usual case here
        return None
    port = free_port(host)
    container = client.containers.run(
        "ghcr.io/shopify/toxiproxy",
        command=["-host", "0.0.0.0", "-port", str(port)],
        network_mode="host",
        detach=True,
        remove=True,
    )
    wait_for_port(host, port, 30)
    return Endpoint(host, port, "container", [container.stop])


def find_toxiproxy(url: str | None = None, *, prefer_project: bool = False) -> Endpoint:
    """Return a live server, starting one when needed (see the module docstring for the order)."""
    if url:
        parsed = urlparse(url if "://" in url else f"http://{url}")
        if not parsed.hostname or not parsed.port:
            raise ToxiproxyUnavailableError(f"--toxiproxy-url {url!r} is not http://HOST:PORT")
        if not _answers(f"http://{parsed.hostname}:{parsed.port}"):
            raise ToxiproxyUnavailableError(f"no Toxiproxy answers at {url}")
        return Endpoint(parsed.hostname, parsed.port, "url")
    host = "127.0.0.1"
    if not prefer_project:
        binary = shutil.which("toxiproxy-server")
        if binary:
            port = free_port(host)
            return _child([binary, "-host", host, "-port", str(port)], host, port, "binary")
        container = _container(host)
        if container is not None:
            return container
    port = free_port(host)
    command = [sys.executable, "-m", "kafka_harness", "toxiproxy", "--listen", f"{host}:{port}"]
    endpoint = _child(command, host, port, "project")
    deadline = time.monotonic() + 10
    while not _answers(endpoint.url) and time.monotonic() < deadline:
        time.sleep(0.05)
    return endpoint
