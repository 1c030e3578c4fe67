"""Length bombs against a broker process (issue 17, item 1).

Item 1: a 17-byte ListGroups v4 whose compact array claims 2^32-2 elements made kio's native reader
allocate 34 GB, and the failed allocation aborted the whole process. Kafka's generated readers
refuse a count above the bytes remaining
(``generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java``),
``RequestContext.parseRequest``
(``clients/src/main/java/org/apache/kafka/common/requests/RequestContext.java``) wraps the
failure in an ``InvalidRequestException``, and ``SocketServer``'s processor
(``core/src/main/scala/kafka/network/SocketServer.scala``, ``processCompletedReceives``) logs one
line and closes that connection; the broker serves everyone else.

The seeded defect ``reference.defects=unbounded-decode`` brings the old bug back, and the same
exchange shows it.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.targets import Target, launch
from fixtures.wire import WireClient
from reference_impl import defects
from reference_impl.protocol.frames import size_prefix

pytestmark = pytest.mark.slow

LIST_GROUPS_V4_HEAD = struct.pack(">hhih", 16, 4, 1, -1) + b"\x00"  # header v2, null client id, no tags
BOMB_17_BYTES = LIST_GROUPS_V4_HEAD + b"\xff\xff\xff\xff\x0f" + b"\x00"
"""The issue's request: 17 bytes after the size prefix, states_filter of 0xffffffff - 1 elements."""
BOMB_35_BITS = LIST_GROUPS_V4_HEAD + b"\xff\xff\xff\xff\x7f" + b"\x00"
"""The same with the largest 5-byte varint kio reads: 2^35 - 2 elements, 256 GiB, which no host
lends, so the defect's abort does not depend on how much memory the host would overcommit."""

_CHILD = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    from reference_impl import defects
    from reference_impl.protocol import codec
    mode, kind, frame = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
    if mode == "defect":
        defects.enable([defects.UNBOUNDED_DECODE])
    try:
        if kind == "request":
            codec.decode_request(frame)
        else:
            codec.decode_response(16, 4, frame)
    except (codec.MalformedRequestError, codec.MalformedResponseError) as exc:
        print(f"{type(exc).__name__}:", exc)
    """
)


def _decode_in_child(mode: str, frame: bytes, kind: str = "request") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run(
        [sys.executable, "-c", _CHILD, mode, kind, frame.hex()],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_the_17_byte_list_groups_is_malformed_not_an_abort() -> None:
    """In a child process (2 GiB address space), so that a regression aborts the child, not pytest."""
    assert len(BOMB_17_BYTES) == 17
    child = _decode_in_child("fixed", BOMB_17_BYTES)
    assert child.returncode == 0, child.stderr[-2000:]
    assert "MalformedRequestError: cannot parse ListGroupsRequest.states_filter" in child.stdout


def test_a_length_bomb_in_a_response_is_malformed_not_an_abort() -> None:
    """decode_response reads answers from peers (broker-to-broker links) and from any target (the
    harness's raw client): a ListGroups v4 answer claiming 2^32-2 groups gets the same check."""
    response = struct.pack(">i", 1) + b"\x00" + struct.pack(">ih", 0, 0) + b"\xff\xff\xff\xff\x0f\x00"
    child = _decode_in_child("fixed", response, kind="response")
    assert child.returncode == 0, child.stderr[-2000:]
    assert "MalformedResponseError: cannot parse ListGroupsResponse.groups" in child.stdout


def test_the_seeded_defect_aborts_the_child() -> None:
    """The old path: kio allocates what the wire says, the allocation fails, the process aborts."""
    child = _decode_in_child("defect", BOMB_17_BYTES)
    assert child.returncode == -signal.SIGABRT, (child.returncode, child.stdout, child.stderr[-500:])
    assert "memory allocation of 34359738352 bytes failed" in child.stderr


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with launch("reference", workdir=tmp_path_factory.mktemp("kh-decode-hostile")) as target:
        yield target


def _send_raw(address: str, payload: bytes) -> bytes | None:
    with WireClient(address, timeout_s=10) as client:
        return client.send_raw(size_prefix(len(payload)) + payload, timeout_s=10)


def _api_versions_answers(address: str) -> bool:
    with WireClient(address, timeout_s=10) as client:
        return bool(client.api_versions())


def test_broker_closes_the_connection_with_one_log_line_and_keeps_serving(broker: Target) -> None:
    address = broker.bootstrap_servers
    for bomb in (BOMB_17_BYTES, BOMB_35_BITS):
        assert _send_raw(address, bomb) is None, "the broker answered a request it cannot parse"
    assert broker.nodes[0].is_running
    assert _api_versions_answers(address)
    log = broker.nodes[0].log_path.read_text(errors="replace")
    lines = [line for line in log.splitlines() if "malformed list_groups v4 request" in line]
    assert len(lines) == 2, lines
    assert all("ListGroupsRequest.states_filter" in line for line in lines)
    assert "Traceback" not in log


def test_seeded_unbounded_decode_lets_one_request_kill_the_broker(tmp_path: Path) -> None:
    """The check above is real: with the defect on, the same kind of request aborts the process."""
    workdir = tmp_path / "kh-decode-defect"
    config = f"{defects.DEFECTS_CONFIG}={defects.UNBOUNDED_DECODE}"
    with launch("reference", workdir=workdir, broker_configs=[config]) as target:
        node = target.nodes[0]
        _send_raw(target.bootstrap_servers, BOMB_35_BITS)
        assert node.process is not None
        returncode = node.process.wait(30)
        assert returncode == -signal.SIGABRT
        assert "memory allocation of" in node.log_path.read_text(errors="replace")
