"""What became of one request, and whether an answer is what the schema says it must be.

Classes (per request):

* ``decode_ok``: answered, and the answer decodes as the response of the API and version the
  request's header names, with the correlation id the header carried and no bytes left over;
* ``undecodable``: answered with bytes that do not (the details name the field);
* ``answered``: answered, for an API key or version no schema here describes (nothing to check);
* ``closed``: the target closed the connection (what Kafka does with a request it cannot parse:
  ``RequestContext.parseRequest`` throws and ``SocketServer`` closes the channel);
* ``silent``: no answer within the bound, as the protocol allows: Produce with ``acks=0``
  (``ProduceRequest.java``: no response), a size prefix that announces more bytes than came, a
  request that itself declares a wait longer than the bound (Fetch ``max_wait``, a join's
  rebalance timeout);
* ``hang``: no answer and no close within the bound, with nothing in the request to explain it,
  while the target still answers a fresh connection;
* ``died``: the target process is gone, or no longer accepts or answers a fresh connection.
"""

from __future__ import annotations

import dataclasses
import datetime
import struct
from typing import Any

from reference_impl.protocol.apis import UnknownApiError, response_class, response_header_version
from reference_impl.protocol.bounds import BodyShapeError, check_body, read_uvarint
from reference_impl.protocol.codec import (
    MalformedRequestError,
    MalformedResponseError,
    decode_request,
    decode_response,
)

API_VERSIONS_KEY = 18
PRODUCE_KEY = 0
UNSUPPORTED_VERSION = b"\x00\x23"

DECODE_OK = "decode_ok"
UNDECODABLE = "undecodable"
ANSWERED = "answered"
CLOSED = "closed"
SILENT = "silent"
HANG = "hang"
DIED = "died"
CLASSES = (DECODE_OK, UNDECODABLE, ANSWERED, CLOSED, SILENT, HANG, DIED)
FAILURES = (HANG, DIED)
"""Classes that make a run invalid (an undecodable answer is reported, not judged: a finding)."""

_HEAD = struct.Struct(">hhi")
KIO_LIMITS = ("Cannot parse negative timestamp",)
"""kio refusals of values Kafka sends: kio reads an int64 timestamp as a datetime and refuses -1,
which Kafka's DescribeTransactions answers for a transaction that has not started
(``TransactionMetadata.txnStartTimestamp``). The shape is still checked, byte for byte."""


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    cls: str
    detail: str = ""


def sent_header(frame: bytes) -> tuple[int, int, int] | None:
    """(api key, version, correlation id) of a frame (size prefix included), if it has a header."""
    if len(frame) < 12:
        return None
    key, version, correlation_id = _HEAD.unpack_from(frame, 4)
    return int(key), int(version), int(correlation_id)


def check_answer(frame: bytes, answer: bytes) -> Outcome:
    """Judge ``answer`` (a response frame without its size) to the request ``frame``."""
    head = sent_header(frame)
    if head is None:
        return Outcome(ANSWERED, "request too short to have a header")
    key, version, correlation_id = head
    if len(answer) < 4:
        return Outcome(UNDECODABLE, f"answer of {len(answer)} bytes has no correlation id")
    got = int.from_bytes(answer[:4], "big", signed=True)
    if got != correlation_id:
        return Outcome(UNDECODABLE, f"correlation id {got}, the request carried {correlation_id}")
    if key == API_VERSIONS_KEY and answer[4:6] == UNSUPPORTED_VERSION:
        version = 0  # KIP-511: an unsupported ApiVersions version is answered with a v0 body
    try:
        cls = response_class(key, version)
        header_version = response_header_version(key, version)
    except UnknownApiError:
        return Outcome(ANSWERED, "no schema for this api/version")
    try:
        decode_response(key, version, answer, cls)
    except MalformedResponseError as exc:
        if any(limit in str(exc) for limit in KIO_LIMITS):
            return _check_trailing(cls, answer, header_version)
        return Outcome(UNDECODABLE, str(exc)[:300])
    return _check_trailing(cls, answer, header_version)


def _check_trailing(cls: type[Any], answer: bytes, header_version: int) -> Outcome:
    """Kafka's readers ignore bytes after a body; an answer that carries some still says its
    writer and the schema disagree, so it is reported."""
    try:
        pos = 4
        if header_version >= 1:
            count, pos = read_uvarint(answer, pos, len(answer), "header")
            for _ in range(count):
                _tag, pos = read_uvarint(answer, pos, len(answer), "header")
                size, pos = read_uvarint(answer, pos, len(answer), "header")
                pos += size
        end = check_body(cls, answer, pos, [])
    except BodyShapeError as exc:  # decode_response accepted it, so this cannot happen; say so
        return Outcome(DECODE_OK, f"trailing check: {exc}"[:200])
    if end != len(answer):
        return Outcome(UNDECODABLE, f"{len(answer) - end} bytes after the {cls.__name__} body")
    return Outcome(DECODE_OK)


def expected_silence(frame: bytes, bound_ms: float) -> str | None:
    """Why the protocol lets a target leave ``frame`` unanswered past ``bound_ms``, if it does."""
    if len(frame) < 4:
        return "no size prefix"
    declared = int.from_bytes(frame[:4], "big", signed=True)
    if declared != len(frame) - 4:
        return f"size prefix {declared} for {len(frame) - 4} bytes"
    try:
        header, body = decode_request(frame[4:])
    except (MalformedRequestError, UnknownApiError, LookupError, ValueError):
        return None
    if header.api_key == PRODUCE_KEY and int(getattr(body, "acks", -1)) == 0:
        return "Produce acks=0 has no answer"
    longest = _longest_wait_ms(body, 0)
    if longest >= bound_ms * 0.8:
        return f"the request declares a wait of {longest:.0f} ms"
    return None


def _longest_wait_ms(value: Any, depth: int) -> float:
    if depth > 6:
        return 0.0
    if isinstance(value, datetime.timedelta):
        return value.total_seconds() * 1000
    if isinstance(value, tuple):
        return max((_longest_wait_ms(v, depth + 1) for v in value[:64]), default=0.0)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return max((_longest_wait_ms(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)),
                   default=0.0)
    return 0.0
