"""Length bombs: requests whose array, string or bytes lengths claim far more than the frame holds.

Kafka's generated readers check every collection length against the bytes remaining before they
allocate ("Tried to allocate a collection of size N, but there are only M bytes remaining") and
refuse a null in a non-nullable field ("non-nullable field X was serialized as null"):
``generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java``. The failure becomes
an ``InvalidRequestException`` in ``RequestContext.parseRequest``
(``clients/src/main/java/org/apache/kafka/common/requests/RequestContext.java``), and the socket
server's processor (``core/src/main/scala/kafka/network/SocketServer.scala``,
``processCompletedReceives``) closes that one connection. So each request here must get the
connection closed (or an answer carrying an error), quickly, and the target must go on answering
ApiVersions on a new connection: no crash, no hang, no allocation of what the wire claims.
Issue 17 item 1: a 17-byte ListGroups v4 aborted the reference broker.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fixtures.targets import Target
from fixtures.wire import Capabilities, WireClient, WireError
from reference_impl.protocol.apis import API_KEYS, is_flexible
from reference_impl.protocol.codec import MalformedResponseError, decode_response
from reference_impl.protocol.frames import size_prefix

from .expect import expect

FEATURE = "Malformed requests"

COMPACT_2_32 = b"\xff\xff\xff\xff\x0f"
"""A compact length of 0xffffffff: 2^32-2 elements or bytes."""
COMPACT_2_35 = b"\xff\xff\xff\xff\x7f"
"""The largest 5-byte varint: 2^35-2 elements (a reader that takes 35 bits allocates 256 GiB)."""
LEGACY_2_31 = struct.pack(">i", 0x7FFFFFFF)
PADDING = b"\x00" * 8
"""A few bytes after the bomb, so that only its length, not a truncation, is what is wrong."""
ANSWER_TIMEOUT_S = 10.0


def _str(text: bytes, flexible: bool) -> bytes:
    return (bytes([len(text) + 1]) if flexible else struct.pack(">h", len(text))) + text


def _count(n: int, flexible: bool) -> bytes:
    return bytes([n + 1]) if flexible else struct.pack(">i", n)


@dataclasses.dataclass(frozen=True)
class Bomb:
    """One malformed request: which API, which versions it is built for, and its body at a version."""

    name: str
    api: str
    lo: int
    hi: int
    body: Callable[[int], bytes]


def _produce_records(version: int) -> bytes:
    flexible = version >= 9
    head = (b"\x00" if flexible else struct.pack(">h", -1)) + struct.pack(">hi", -1, 10_000)
    partition = struct.pack(">i", 0) + (COMPACT_2_32 if flexible else LEGACY_2_31)
    return head + _count(1, flexible) + _str(b"t", flexible) + _count(1, flexible) + partition + PADDING


def _fetch_partitions(version: int) -> bytes:
    head = b"" if version >= 15 else struct.pack(">i", -1)  # replica_id moved to a tag in v15
    head += struct.pack(">iiibii", 500, 1, 1 << 20, 0, 0, -1)
    topic = b"\x00" * 16 if version >= 13 else _str(b"t", True)
    return head + _count(1, True) + topic + COMPACT_2_32 + PADDING


BOMBS = [
    Bomb("list-groups-states-filter-compact-2^32", "list_groups", 4, 99, lambda v: COMPACT_2_32 + PADDING),
    Bomb("list-groups-states-filter-compact-2^35", "list_groups", 4, 99, lambda v: COMPACT_2_35 + PADDING),
    Bomb("metadata-topics-legacy-2^31", "metadata", 1, 8, lambda v: LEGACY_2_31 + PADDING),
    Bomb("metadata-topics-compact-2^35", "metadata", 9, 99, lambda v: COMPACT_2_35 + PADDING),
    Bomb("produce-records-bytes-in-a-nested-struct", "produce", 3, 99, _produce_records),
    Bomb("fetch-partitions-compact-2^32-nested", "fetch", 12, 99, _fetch_partitions),
    Bomb("api-versions-software-name-compact-2^32", "api_versions", 3, 99, lambda v: COMPACT_2_32 + PADDING),
    Bomb("list-groups-null-states-filter", "list_groups", 4, 99, lambda v: b"\x00" + PADDING),
]


def _frame(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, 2) + b"kh"
    if is_flexible(api_key, version):
        header += b"\x00"
    return size_prefix(len(header) + len(body)) + header + body


def _error_codes(value: Any) -> Iterator[int]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.name == "error_code":
                yield int(getattr(value, f.name))
            else:
                yield from _error_codes(getattr(value, f.name))
    elif isinstance(value, tuple):
        for item in value:
            yield from _error_codes(item)


def _answer_errors(key: int, version: int, answer: bytes) -> list[int]:
    """The non-zero error codes of an answer; an answer that does not parse fails the test."""
    if key == API_KEYS["api_versions"] and answer[4:6] != b"\x00\x00":
        return [struct.unpack_from(">h", answer, 4)[0]]  # an error answer may be a v0 body (KIP-511)
    try:
        _corr, body = decode_response(key, version, answer)
    except MalformedResponseError as exc:
        raise AssertionError(f"[RequestContext.java] v{version} answer does not parse: {exc}") from None
    return [c for c in _error_codes(body) if c != 0]


def _api_versions_failure(wire_factory: Callable[..., WireClient]) -> str | None:
    """Why ApiVersions on a new connection fails, or None when it is answered."""
    try:
        wire_factory(timeout_s=ANSWER_TIMEOUT_S).api_versions()
    except (OSError, WireError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.fixture
def revived(target: Target) -> Iterator[None]:
    """A launched target that one of these requests killed is started again afterwards, so the next
    case (and the next module) meets a live target and fails only for its own reasons."""
    yield
    for node in target.nodes:
        if node.process is not None and not node.is_running:
            node.start()


@pytest.mark.parametrize("bomb", BOMBS, ids=[b.name for b in BOMBS])
def test_length_bomb_closes_the_connection_and_the_target_lives(
    bomb: Bomb, caps: Capabilities, wire_factory: Callable[..., WireClient], revived: None
) -> None:
    """MessageDataGenerator.java / SocketServer.scala: a request whose length claims more than the frame
    holds (or a null where the schema has none) is refused without allocating: the connection is
    closed, or the answer carries an error; then the target still answers ApiVersions."""
    usable = caps.versions(bomb.api, bomb.lo, bomb.hi)
    if not usable:
        pytest.skip(f"{bomb.api} v{bomb.lo}+ is not advertised")
    version = usable[-1]
    key = API_KEYS[bomb.api]
    client = wire_factory(timeout_s=ANSWER_TIMEOUT_S)
    try:
        answer = client.send_raw(_frame(key, version, 1, bomb.body(version)), timeout_s=ANSWER_TIMEOUT_S)
    except WireError as exc:
        raise AssertionError(f"[SocketServer.scala] v{version}: no answer and no close: {exc}") from None
    if answer is not None:
        errors = _answer_errors(key, version, answer)
        expect(bool(errors), "RequestContext.java", f"v{version} was answered as if it were well-formed")
    failure = _api_versions_failure(wire_factory)
    expect(failure is None, "SocketServer.scala", f"after the v{version} request: ApiVersions {failure}")
