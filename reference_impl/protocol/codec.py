"""Request and response encoding on top of kio entities.

Headers are read by hand (they are tiny, fixed, and on every request's hot
path); bodies are read and written by kio's codecs, generated from Kafka's
message definitions. kio omits a tagged field whose value equals its default,
as Kafka does, which old clients (librdkafka 2.0.2) depend on.

Both directions live here because the broker and the harness's raw client are
mirror images: the broker decodes requests and encodes responses, the client
the opposite, and each side's tests use the other.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from kio.serial import entity_reader
from kio.static.protocol import Entity, RequestPayload, ResponsePayload

from reference_impl import defects

from . import writers
from .apis import (
    is_flexible,
    request_class,
    request_header_version,
    response_class,
    response_header_version,
)
from .bounds import BodyShapeError, UnknownTag, check_body, read_uvarint, uvarint_bytes, without_unknown_tags
from .frames import size_prefix

T = TypeVar("T")

_HEAD = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class MalformedRequestError(ValueError):
    """Bytes that do not parse as the request they claim to be."""


class MalformedResponseError(ValueError):
    """Bytes that do not parse as the response they should be."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The fields of request header v1/v2 that the broker uses."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) without parsing anything else.

    Every header version starts with these three fields, so the broker can
    answer or reject a request whose version it cannot parse.
    """
    if len(frame) < 8:
        raise MalformedRequestError(f"frame of {len(frame)} bytes is shorter than a request header")
    key, version, correlation_id = _HEAD.unpack_from(frame, 0)
    return int(key), int(version), int(correlation_id)


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    try:
        return read_uvarint(buf, pos, len(buf), "header")
    except BodyShapeError as exc:
        raise MalformedRequestError(exc.detail) from None


def _skip_tagged_fields(buf: bytes, pos: int) -> int:
    count, pos = _read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(buf, pos)
        size, pos = _read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise MalformedRequestError("tagged field runs past the end of the frame")
    return pos


def decode_request_header(frame: bytes) -> tuple[RequestHeader, int]:
    """Parse the request header; return it and the offset where the body starts.

    The client id is a nullable *legacy* string in every header version
    (Kafka keeps it non-compact even in header v2 so any broker can log it).
    """
    api_key, api_version, correlation_id = peek_header(frame)
    pos = 8
    if len(frame) < pos + 2:
        raise MalformedRequestError("truncated client id")
    (length,) = _I16.unpack_from(frame, pos)
    pos += 2
    client_id: str | None = None
    if length >= 0:
        if pos + length > len(frame):
            raise MalformedRequestError("client id runs past the end of the frame")
        try:
            client_id = frame[pos : pos + length].decode()
        except UnicodeDecodeError as exc:
            raise MalformedRequestError(f"client id is not UTF-8: {exc}") from None
        pos += length
    if request_header_version(api_key, api_version) >= 2:
        pos = _skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


@cache
def _reader(cls: type[Entity]) -> Any:
    return entity_reader(cls)


def decode_request_body(header: RequestHeader, frame: bytes, offset: int) -> RequestPayload:
    """Parse the body with kio's generated schema for this API and version.

    Every length, count and null is checked against the frame and the schema first
    (:mod:`.bounds`), so kio's reader never sees a length it would allocate blindly; a body that
    fails is a :class:`MalformedRequestError`, which the broker answers by closing the connection,
    as Kafka's ``RequestContext.parseRequest`` and ``SocketServer`` do. Bytes after the body are
    ignored, as Kafka's generated readers ignore them: librdkafka 2.16's Metadata v13 "all topics"
    request carries three trailing bytes that Kafka accepts.
    """
    cls = request_class(header.api_key, header.api_version)
    if defects.enabled(defects.UNBOUNDED_DECODE):
        return _read_unchecked(cls, frame, offset)  # type: ignore[no-any-return]
    return _read_checked(cls, frame, offset, MalformedRequestError)  # type: ignore[no-any-return]


def _read_checked(cls: type[Entity], buf: bytes, offset: int, error: type[ValueError]) -> Any:
    """The body of ``cls`` at ``offset``, its shape checked before kio reads it; ``error`` otherwise.

    Unknown tagged fields are cut out before kio sees the body (kio refuses them; KIP-482 says a
    reader skips them). One inside a known tagged field's value cannot be cut without resizing
    that value, so the second check refuses it.
    """
    unknown: list[UnknownTag] = []
    try:
        end = check_body(cls, buf, offset, unknown)
        if unknown:
            buf, offset = without_unknown_tags(buf, offset, end, unknown), 0
            check_body(cls, buf, 0, unknown := [])
    except BodyShapeError as exc:
        raise error(f"cannot parse {exc}") from None
    if unknown:
        raise error(f"cannot parse {cls.__name__}: unknown tagged fields inside a tagged field")
    try:
        body, _size = _reader(cls)(buf, offset)
    except Exception as exc:  # kio raises assorted errors on garbage (bad UTF-8, say)
        raise error(f"cannot parse {cls.__name__}: {exc}") from None
    return body


def _read_unchecked(cls: type[Entity], frame: bytes, offset: int) -> Any:
    """The seeded defect UNBOUNDED_DECODE: kio reads lengths and nulls from the wire unchecked."""
    try:
        body, size = _reader(cls)(frame, offset)
    except KeyError:  # an unknown tagged field: kio read everything before it without aborting
        return _read_checked(cls, frame, offset, MalformedRequestError)
    except Exception as exc:
        raise MalformedRequestError(f"cannot parse {cls.__name__}: {exc}") from None
    if offset + size > len(frame):
        held = len(frame) - offset
        raise MalformedRequestError(f"{cls.__name__} needs {size} bytes but the frame holds {held}")
    return body


def decode_request(frame: bytes) -> tuple[RequestHeader, RequestPayload]:
    header, offset = decode_request_header(frame)
    return header, decode_request_body(header, frame, offset)


def decode_data(cls: type[T], buf: bytes) -> T:
    """A data entity (a control record's value, say) read from ``buf`` with the same shape checks as
    a request body; ValueError when it is not one."""
    return _read_checked(cls, buf, 0, ValueError)  # type: ignore[arg-type,no-any-return]


def encode_body(entity: Entity) -> bytes:
    """``entity``'s bytes: kio's layout, by the writers generated from its schema (:mod:`.writers`)."""
    return writers.encode(entity)


def response_header_bytes(api_key: int, api_version: int, correlation_id: int) -> bytes:
    head = _I32.pack(correlation_id)
    if response_header_version(api_key, api_version) >= 1:
        head += b"\x00"  # no tagged fields
    return head


def encode_response(api_key: int, api_version: int, correlation_id: int, body: ResponsePayload) -> bytes:
    """A whole response frame: size, header, body.

    ``api_version`` selects the header version; the body's own class decides
    its layout (an ApiVersions error answer is a v0 body under any version).
    """
    payload = response_header_bytes(api_key, api_version, correlation_id) + encode_body(body)
    return size_prefix(len(payload)) + payload


def encode_response_spliced(
    api_key: int,
    api_version: int,
    correlation_id: int,
    body: ResponsePayload,
    splices: Mapping[bytes, tuple[Sequence[T], int]],
) -> list[bytes | T]:
    """A response frame whose ``records`` placeholders are replaced by parts sent from elsewhere.

    The fetch path's zero-copy trick: the body is encoded with a unique
    placeholder token as each partition's records; each token (and its
    length prefix, 4-byte legacy or varint compact) is then replaced by the
    real length and the given parts (file regions the shell sends with
    ``sendfile``) whose total length is given. Returns the frame as parts,
    the size prefix first; record data never passes through Python.

    The answer groups partitions by topic, which need not be the order the
    splices were made in (a request's partitions may interleave topics, as
    librdkafka's do): each placeholder is found wherever it is, and the
    pieces are assembled in payload order.
    """
    payload = response_header_bytes(api_key, api_version, correlation_id) + encode_body(body)
    flexible = is_flexible(api_key, api_version)
    if defects.enabled(defects.FETCH_PLACEHOLDER_ORDER):
        found = _placeholders_in_splice_order(payload, splices)
    else:
        found = sorted((_find_placeholder(payload, token), token) for token in splices)
    pieces: list[bytes | T] = []
    total = 0
    position = 0
    for at, token in found:
        parts, length = splices[token]
        if flexible:
            prefix_at, real_prefix = at - 1, uvarint_bytes(length + 1)
            if payload[prefix_at] != len(token) + 1:
                raise ValueError("placeholder is not a compact bytes field")
        else:
            prefix_at, real_prefix = at - 4, _I32.pack(length)
            if _I32.unpack_from(payload, prefix_at)[0] != len(token):
                raise ValueError("placeholder is not a legacy bytes field")
        head = payload[position:prefix_at] + real_prefix
        pieces.append(head)
        pieces.extend(parts)
        total += len(head) + length
        position = at + len(token)
    tail = payload[position:]
    pieces.append(tail)
    total += len(tail)
    return [size_prefix(total), *pieces]


def _find_placeholder(payload: bytes, token: bytes) -> int:
    at = payload.find(token)
    if at < 0:
        raise ValueError("placeholder not found in the encoded response")
    return at


def _placeholders_in_splice_order(payload: bytes, splices: Mapping[bytes, Any]) -> list[tuple[int, bytes]]:
    """The seeded defect FETCH_PLACEHOLDER_ORDER: each token searched forward from the previous one."""
    found = []
    position = 0
    for token in splices:
        at = payload.find(token, position)
        if at < 0:
            raise ValueError("placeholder not found in the encoded response")
        found.append((at, token))
        position = at + len(token)
    return found


def encode_request(body: RequestPayload, correlation_id: int, client_id: str | None) -> bytes:
    """A whole request frame for ``body`` (client side)."""
    api_key = int(body.__api_key__)
    api_version = int(body.__version__)
    parts = [_HEAD.pack(api_key, api_version, correlation_id)]
    if client_id is None:
        parts.append(_I16.pack(-1))
    else:
        raw = client_id.encode()
        parts.append(_I16.pack(len(raw)) + raw)
    if request_header_version(api_key, api_version) >= 2:
        parts.append(b"\x00")
    parts.append(encode_body(body))
    payload = b"".join(parts)
    return size_prefix(len(payload)) + payload


def decode_response(
    api_key: int, api_version: int, frame: bytes, body_class: type[ResponsePayload] | None = None
) -> tuple[int, ResponsePayload]:
    """(correlation_id, body) from a response frame (client side: the raw client, broker-to-broker
    links). A peer's answer is as hostile as a client's request: its shape is checked before kio
    reads it, and one that fails raises :class:`MalformedResponseError`."""
    if len(frame) < 4:
        raise MalformedResponseError(f"frame of {len(frame)} bytes is shorter than a response header")
    (correlation_id,) = _I32.unpack_from(frame, 0)
    pos = 4
    if response_header_version(api_key, api_version) >= 1:
        try:
            pos = _skip_tagged_fields(frame, pos)
        except MalformedRequestError as exc:
            raise MalformedResponseError(f"response header: {exc}") from None
    cls = body_class or response_class(api_key, api_version)
    return correlation_id, _read_checked(cls, frame, pos, MalformedResponseError)
