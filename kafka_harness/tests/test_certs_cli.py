"""``kafka-harness certs``: refuses what is not a host, writes the files otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_harness import certs_cli


def test_cli_refuses_bad_hosts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert certs_cli.main([str(tmp_path / "x"), "--hosts", "a b"]) == 2
    assert "not a host name" in capsys.readouterr().err
    assert certs_cli.main([str(tmp_path / "y"), "--hosts", "localhost"]) == 0
    assert (tmp_path / "y" / "client.pem").exists()
