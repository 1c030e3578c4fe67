"""The suites can fail: a conformance test pointed at a target that breaks one rule fails naming it.

A reference broker of its own (whatever ``--target`` says) sits behind a tiny loopback proxy
that rewrites one field of one response: every partition's ``leader_id`` in Metadata answers
becomes a node id no broker has. The Metadata conformance test run through the proxy (a pytest
subprocess with ``--target bootstrap:...``) must fail and its output must name the rule it
checks ("Protocol guide, Metadata") and the leader; the same test through the same proxy with
the rewrite off must pass, so the failure comes from the corrupted field alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.targets import launch
from fixtures.wire.security import COMMAND_CONFIG_ENV
from reference_impl.protocol.codec import decode_response, encode_response, peek_header
from reference_impl.protocol.frames import FrameDecoder, size_prefix

FEATURE = "Harness self-check"
METADATA = 3
BOGUS_LEADER = 4242
ROOT = Path(__file__).resolve().parents[2]
CHECK = "suites/conformance/test_k03_metadata.py::test_topic_partitions_and_leader_are_listed"


def corrupt_metadata(version: int, frame: bytes) -> bytes:
    """The Metadata answer with every partition's leader replaced by a node that does not exist."""
    correlation_id, body = decode_response(METADATA, version, frame)
    topics = tuple(
        dataclasses.replace(
            t, partitions=tuple(dataclasses.replace(p, leader_id=BOGUS_LEADER) for p in t.partitions)
        )
        for t in body.topics  # type: ignore[attr-defined]
    )
    return encode_response(METADATA, version, correlation_id, dataclasses.replace(body, topics=topics))


class CorruptingProxy:
    """Forwards loopback connections to ``upstream``; rewrites Metadata answers while ``corrupt``."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.corrupt = True
        self.rewritten = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self._sockets += [client, server]
            asked: dict[int, tuple[int, int]] = {}  # correlation id → (api key, version)
            threading.Thread(target=self._requests, args=(client, server, asked), daemon=True).start()
            threading.Thread(target=self._answers, args=(server, client, asked), daemon=True).start()

    def _requests(self, src: socket.socket, dst: socket.socket, asked: dict[int, tuple[int, int]]) -> None:
        frames = FrameDecoder()
        while data := _recv(src):
            for frame in frames.feed(data):
                key, version, correlation_id = peek_header(frame)
                asked[correlation_id] = (key, version)
                dst.sendall(size_prefix(len(frame)) + frame)
        _close(dst)

    def _answers(self, src: socket.socket, dst: socket.socket, asked: dict[int, tuple[int, int]]) -> None:
        frames = FrameDecoder()
        while data := _recv(src):
            for frame in frames.feed(data):
                key, version = asked.pop(int.from_bytes(frame[:4], "big", signed=True), (-1, -1))
                if key == METADATA and self.corrupt:
                    self.rewritten += 1
                    dst.sendall(corrupt_metadata(version, frame))
                else:
                    dst.sendall(size_prefix(len(frame)) + frame)
        _close(dst)

    def close(self) -> None:
        for s in self._sockets:
            _close(s)


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(1 << 16)
    except OSError:
        return b""


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()


@pytest.fixture(scope="module")
def proxy() -> Iterator[CorruptingProxy]:
    with launch("reference") as reference:
        p = CorruptingProxy(reference.bootstrap_servers.split(",")[0])
        yield p
        p.close()


def run_check(proxy: CorruptingProxy) -> subprocess.CompletedProcess[str]:
    # the check runs against the proxy (a bootstrap target): nothing of this run's target goes with it
    # (its reference is PLAINTEXT: a secured run's client properties stay behind too)
    dropped = ("KH_TARGET", "KH_BROKER_CONFIGS", COMMAND_CONFIG_ENV)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [
            sys.executable, "-m", "pytest", CHECK, "-q", "-p", "no:cacheprovider",
            f"--target=bootstrap:{proxy.address}", "-o", "addopts=", "--tb=short",
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


def test_corrupted_leader_fails_naming_the_rule(proxy: CorruptingProxy) -> None:
    """Issue 5 acceptance: a suite pointed at a target that violates a rule (Metadata leaders that are
    not brokers) fails, and the failure message names the rule it checks."""
    proxy.corrupt = True
    result = run_check(proxy)
    output = result.stdout + result.stderr
    assert proxy.rewritten > 0, f"the proxy saw no Metadata answer to corrupt:\n{output[-3000:]}"
    assert result.returncode == 1, f"the check did not fail (exit {result.returncode}):\n{output[-3000:]}"
    assert "[Protocol guide, Metadata]" in output, f"the failure does not name the rule:\n{output[-3000:]}"
    assert f"leader {BOGUS_LEADER} is not a listed broker" in output, output[-3000:]


def test_same_check_passes_through_a_faithful_proxy(proxy: CorruptingProxy) -> None:
    """The control: through the same proxy with the rewrite off, the same check passes, so the failure
    above comes from the corrupted field and not from the proxy or the bootstrap target."""
    proxy.corrupt = False
    result = run_check(proxy)
    output: Any = result.stdout + result.stderr
    assert result.returncode == 0, (
        f"the unmodified exchange failed (exit {result.returncode}):\n{output[-3000:]}"
    )
