"""Finding a Toxiproxy: a given URL, a binary on PATH, else the project's server as a child process."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
import requests

from chaos.toxiproxy.finder import ToxiproxyUnavailableError, find_toxiproxy
from chaos.toxiproxy.server import ServerThread


def test_a_given_url_is_used_as_is() -> None:
    with ServerThread() as server, find_toxiproxy(server.url) as endpoint:
        assert (endpoint.kind, endpoint.port) == ("url", server.port)


def test_a_url_where_nothing_answers_is_refused() -> None:
    with ServerThread() as server:
        dead = server.port
    with pytest.raises(ToxiproxyUnavailableError, match="no Toxiproxy answers"):
        find_toxiproxy(f"http://127.0.0.1:{dead}")
    with pytest.raises(ToxiproxyUnavailableError, match="not http://HOST:PORT"):
        find_toxiproxy("http://nohost")


def test_a_toxiproxy_server_on_path_is_preferred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in ``toxiproxy-server`` taking the real binary's ``-host H -port P`` flags."""
    script = tmp_path / "toxiproxy-server"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m kafka_harness toxiproxy --listen "$2:$4"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with find_toxiproxy() as endpoint:
        assert endpoint.kind == "binary"
        assert requests.get(f"{endpoint.url}/version", timeout=5).status_code == 200
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{endpoint.url}/version", timeout=5)


def test_the_project_server_is_started_and_stopped() -> None:
    with find_toxiproxy(prefer_project=True) as endpoint:
        endpoint.use()
        from toxiproxy import Toxiproxy

        assert endpoint.kind == "project" and Toxiproxy().running()
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{endpoint.url}/version", timeout=5)
