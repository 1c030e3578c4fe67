"""An encoder of request frames that remembers where each length, count and integer went.

Field-level mutation needs positions: "the count of ``topics``", "the length of ``group_id``",
"the int32 ``partition_max_bytes``". kio's writer (``kio/serial/_serialize.py``) returns finished
bytes only, so the fuzzer writes bodies itself from :func:`~chaos.fuzz.schema.layout`, in the
same layout kio and Kafka use (legacy int16/int32 lengths before KIP-482, unsigned-varint
lengths plus one and tagged-field sections after; KIP-893 nullable-struct markers; tagged fields
left out when they hold their default), and records a :class:`Site` for every value it writes.
A test checks that the bytes equal kio's for every request class.

A value tree is plain Python: a struct is a ``dict`` of field name to value, an array a ``list``,
durations and instants integers of milliseconds, UUIDs :class:`uuid.UUID`, ``None`` a null.
"""

from __future__ import annotations

import dataclasses
import datetime
import struct
import uuid
from dataclasses import MISSING, dataclass
from typing import Any

from kio.static.protocol import Entity

from reference_impl.protocol.apis import request_header_version

from .schema import SIGNED_INT, UNSIGNED_INT, FieldSpec, is_flexible, layout

_PACK = {
    ("int", 1, True): struct.Struct(">b"),
    ("int", 2, True): struct.Struct(">h"),
    ("int", 4, True): struct.Struct(">i"),
    ("int", 8, True): struct.Struct(">q"),
    ("int", 1, False): struct.Struct(">B"),
    ("int", 2, False): struct.Struct(">H"),
    ("int", 4, False): struct.Struct(">I"),
    ("int", 8, False): struct.Struct(">Q"),
}
_F64 = struct.Struct(">d")
_HEAD = struct.Struct(">hhi")
_I32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Site:
    """Where one value sits in the frame's payload (after the 4-byte size prefix).

    ``kind``: ``int`` (``width``, ``signed``), ``length`` of a string or bytes, ``count`` of an
    array (``width`` 0 = unsigned varint of n+1, else 2 or 4 bytes), ``marker`` of a nullable
    struct, ``tags`` (a tagged-field section's count), ``field`` (a whole field's bytes).
    """

    start: int
    end: int
    kind: str
    path: str
    width: int = 0
    signed: bool = True
    nullable: bool = False


def uvarint(value: int) -> bytes:
    out = bytearray()
    value &= 0xFFFFFFFFFFFFFFFF
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Encoder:
    """Writes one payload, collecting :class:`Site` rows as it goes."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.sites: list[Site] = []

    def _site(self, start: int, kind: str, path: str, **info: Any) -> None:
        self.sites.append(Site(start, len(self.buf), kind, path, **info))

    def length(self, n: int | None, flexible: bool, width: int, path: str, kind: str, nullable: bool) -> None:
        """A length or count prefix: n, or null (-1) when ``n`` is None."""
        start = len(self.buf)
        if flexible:
            self.buf += uvarint(0 if n is None else n + 1)
            self._site(start, kind, path, width=0, nullable=nullable)
        else:
            value = -1 if n is None else n
            self.buf += (_PACK[("int", 2, True)] if width == 2 else _I32).pack(value)
            self._site(start, kind, path, width=width, nullable=nullable)

    def entity(self, cls: type[Entity], value: dict[str, Any], path: str) -> None:
        flexible = is_flexible(cls)
        plain, tagged = layout(cls)
        for spec in plain:
            self.field(spec, value.get(spec.name), flexible, f"{path}.{spec.name}")
        if not flexible:
            return
        present = [s for s in tagged if _differs(value.get(s.name, s.default), s.default)]
        start = len(self.buf)
        self.buf += uvarint(len(present))
        self._site(start, "tags", f"{path}._tagged_fields")
        for spec in present:
            inner = Encoder()
            inner.field(spec, value.get(spec.name), True, f"{path}.{spec.name}", tagged=True)
            self.buf += uvarint(spec.tag or 0)
            size_at = len(self.buf)
            self.buf += uvarint(len(inner.buf))
            self._site(size_at, "length", f"{path}.{spec.name}#size", width=0)
            base = len(self.buf)
            self.buf += inner.buf
            self.sites.extend(
                Site(s.start + base, s.end + base, s.kind, s.path, s.width, s.signed, s.nullable)
                for s in inner.sites
            )

    def field(self, spec: FieldSpec, value: Any, flexible: bool, path: str, *, tagged: bool = False) -> None:
        start = len(self.buf)
        if spec.is_array:
            self.length(None if value is None else len(value), flexible, 4, path, "count", spec.nullable)
            for i, item in enumerate(value or ()):
                self.item(spec, item, flexible, f"{path}[{i}]")
        else:
            self.item(spec, value, flexible, path, nullable=spec.nullable and not tagged)
        self._site(start, "field", path)

    def item(self, spec: FieldSpec, value: Any, flexible: bool, path: str, *, nullable: bool = False) -> None:
        """One value of ``spec``'s type (an array's element, or the field itself)."""
        kafka_type = spec.kafka_type
        if kafka_type == "struct":
            assert spec.entity is not None
            if nullable:
                start = len(self.buf)
                self.buf += b"\xff" if value is None else b"\x01"
                self._site(start, "marker", path, width=1)
                if value is None:
                    return
            self.entity(spec.entity, value or {}, path)
        elif kafka_type in ("string", "bytes", "records"):
            raw = value.encode() if isinstance(value, str) else value
            width = 2 if kafka_type == "string" else 4
            self.length(None if raw is None else len(raw), flexible, width, path, "length", spec.nullable)
            if raw is not None:
                self.buf += raw
        else:
            self.fixed(kafka_type, value, path)

    def fixed(self, kafka_type: str, value: Any, path: str) -> None:
        start = len(self.buf)
        if kafka_type == "uuid":
            self.buf += (value or uuid.UUID(int=0)).bytes
            return
        if kafka_type == "float64":
            self.buf += _F64.pack(float(value or 0.0))
            return
        if kafka_type == "bool":
            self.buf += b"\x01" if value else b"\x00"
            self._site(start, "int", path, width=1, signed=False)
            return
        signed = kafka_type in SIGNED_INT
        width = SIGNED_INT.get(kafka_type) or UNSIGNED_INT[kafka_type]
        self.buf += _PACK[("int", width, signed)].pack(int(value or 0))
        self._site(start, "int", path, width=width, signed=signed)


def _differs(value: Any, default: Any) -> bool:
    """Whether a tagged field's value differs from its default (kio then writes it)."""
    if default is MISSING:
        return True
    if dataclasses.is_dataclass(default) and not isinstance(default, type):
        if not isinstance(value, dict):
            return value is not default
        return any(_differs(value.get(f.name), getattr(default, f.name)) for f in dataclasses.fields(default))
    if isinstance(default, datetime.timedelta):
        return bool(value != round(default.total_seconds() * 1000))
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(default, tuple) and isinstance(value, tuple):
        return len(value) != len(default) or value != default
    return bool(value != default)



@dataclass(frozen=True, slots=True)
class Encoded:
    """A whole request frame (size prefix included) and the sites of its payload's values."""

    frame: bytes
    sites: tuple[Site, ...]
    body_start: int
    """Where the body starts in the payload (after the request header)."""


def header_bytes(api_key: int, version: int, correlation_id: int, client_id: str | None,
                 header_version: int) -> bytes:
    """Request header v1 or v2 (client id is a legacy nullable string in both, KIP-482)."""
    head = _HEAD.pack(api_key, version, correlation_id)
    if client_id is None:
        head += b"\xff\xff"
    else:
        raw = client_id.encode()
        head += len(raw).to_bytes(2, "big") + raw
    if header_version >= 2:
        head += b"\x00"
    return head


def encode_request(cls: type[Entity], api_key: int, version: int, value: dict[str, Any],
                   correlation_id: int, client_id: str | None = "kh-fuzz") -> Encoded:
    """The frame of ``value`` written as ``cls`` (api ``api_key`` at ``version``).

    ``cls`` normally is the schema of (api_key, version); a version swap passes another one. The
    header version follows the labelled version when kio knows it, else the class's flexibility.
    """
    try:
        header_version = request_header_version(api_key, version)
    except LookupError:
        header_version = 2 if is_flexible(cls) else 1
    head = header_bytes(api_key, version, correlation_id, client_id, header_version)
    enc = Encoder()
    enc.buf += head
    enc.entity(cls, value, cls.__name__)
    payload = bytes(enc.buf)
    return Encoded(_I32.pack(len(payload)) + payload, tuple(enc.sites), len(head))
