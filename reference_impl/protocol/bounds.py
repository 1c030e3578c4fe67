"""Every length, count and null of a message body checked against its schema before kio reads it.

kio's native reader trusts the lengths it reads: an array declared with 2³²−2 elements makes
it allocate that many slots, and the allocation failure aborts the whole process (issue 17,
item 1: a 17-byte ListGroups v4 did it). Kafka's generated readers refuse such a frame instead
("Tried to allocate a collection of size N, but there are only M bytes remaining", "non-nullable
field X was serialized as null", "string field X had invalid length N": see
``generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java``), the request
becomes an ``InvalidRequestException`` in ``RequestContext.parseRequest`` and the socket server
closes the connection.

This module walks a body the way kio will read it, without building anything: for each entity
class (every request and response of every API and version kio carries, one mechanism for all)
it generates, once, the source of a Python function from kio's own schema information (the
dataclass fields and their ``kafka_type``/``tag`` metadata, interpreted by kio's ``_introspect``
helpers), so the hot path is straight-line code: nested structs inlined, runs of fixed-size fields
folded into one addition, arrays of fixed-size items skipped by one multiplication, and only the
rare tagged fields behind a call. A length past the end of the frame, a
count the remaining bytes cannot hold, a null in a field the schema does not declare nullable, a
nullable-struct marker kio and Kafka would read differently, and a known tagged field whose
declared size differs from what its value takes are all refused with :class:`BodyShapeError`
naming the field path (``FetchRequest.topics[1].partitions[0].records``). When the walk succeeds,
kio's reader follows exactly the same path through exactly the bytes checked here.

Unknown tagged fields (KIP-482: a reader skips tags it does not know; kio refuses them) are
skipped by size and reported, so the caller can hand kio the body without them
(:func:`without_unknown_tags`).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from functools import cache
from typing import Any, Final

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.static.protocol import Entity

MAX_STRING_LENGTH: Final = 0x7FFF
"""Kafka's readers refuse a string longer than a 16-bit length allows, compact ones included."""

_FIXED_SIZES: Final[dict[str, int]] = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_LENGTH_PREFIXED: Final = frozenset({"string", "bytes", "records"})

UnknownTag = tuple[int, int, int, int, int]
"""An unknown tagged field: (its section's count position, the count's end, the count, the
field's first byte, the byte after it)."""

Scanner = Callable[[bytes, int, int, list[UnknownTag]], int]
"""A generated scanner: ``(buf, start, end, unknown) -> where the body ends``."""


class BodyShapeError(ValueError):
    """A body whose lengths, counts or nulls the frame or the schema does not allow.

    ``path`` names the field (``ListGroupsRequest.states_filter``); the path is assembled while
    the error unwinds through the generated functions, so building it costs nothing when the
    body is sound.
    """

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self._segments = [field]

    def within(self, segment: str) -> BodyShapeError:
        self._segments.append(segment)
        return self

    @property
    def path(self) -> str:
        return ".".join(reversed(self._segments))

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


# -- helpers the generated code calls on its cold paths ---------------------------------------------

_I16: Final = struct.Struct(">h").unpack_from
_I32: Final = struct.Struct(">i").unpack_from


def _truncated(field: str, need: int, left: int) -> BodyShapeError:
    return BodyShapeError(field, f"needs {need} more bytes but the frame holds {max(left, 0)}")


def _past_end(field: str, length: int, left: int) -> BodyShapeError:
    return BodyShapeError(field, f"length {length} runs past the end of the frame ({left} bytes left)")


def _too_many(field: str, count: int, item_bytes: int, left: int) -> BodyShapeError:
    return BodyShapeError(
        field,
        f"a collection of {count} items of at least {item_bytes} bytes each, "
        f"but there are only {left} bytes remaining",
    )


def _null(field: str) -> BodyShapeError:
    return BodyShapeError(field, "non-nullable field was serialized as null")


def _negative(field: str, length: int) -> BodyShapeError:
    return BodyShapeError(field, f"negative length {length}")


def _string_too_long(field: str, length: int) -> BodyShapeError:
    return BodyShapeError(field, f"string field had invalid length {length}")


def _bad_marker(field: str, marker: int) -> BodyShapeError:
    return BodyShapeError(field, f"nullable struct marker {marker} is neither -1 (null) nor >= 0 (present)")


def _tag_size(field: str, declared: int, taken: int) -> BodyShapeError:
    return BodyShapeError(field, f"tagged field declares {declared} bytes but its value takes {taken}")


def read_uvarint(buf: bytes, pos: int, end: int, field: str) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's ``readUnsignedVarint``) and the position after it.

    The usual cases, with five bytes to spare, without a loop: a record set's compact length takes
    two or three bytes in every Produce.
    """
    if pos + 5 <= end:
        b0, b1, b2, b3, b4 = buf[pos : pos + 5]
        if b0 < 0x80:
            return b0, pos + 1
        low = b0 & 0x7F
        if b1 < 0x80:
            return low | b1 << 7, pos + 2
        low |= (b1 & 0x7F) << 7
        if b2 < 0x80:
            return low | b2 << 14, pos + 3
        low |= (b2 & 0x7F) << 14 | (b3 & 0x7F) << 21
        if b3 < 0x80:
            return low, pos + 4
        if b4 < 0x80:
            return low | b4 << 28, pos + 5
        raise BodyShapeError(field, "varint longer than 5 bytes")
    value = 0
    for shift in range(0, 35, 7):
        if pos >= end:
            raise _truncated(field, 1, 0)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
    raise BodyShapeError(field, "varint longer than 5 bytes")


# -- the schema, as kio reads it --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    """One field of an entity as the reader meets it on the wire."""

    name: str
    kind: str
    """``fixed``, ``string``, ``bytes``, ``struct``, ``array``."""
    size: int = 0
    """Bytes of a fixed field."""
    nullable: bool = False
    entity: type[Entity] | None = None
    """The struct (or array item struct) class."""
    item: _Field | None = None
    """An array's item."""


def _field_of(field: dataclasses.Field[Any], *, tagged: bool) -> _Field:
    """How kio reads ``field``: kio's own classification, Kafka's nullability.

    A tagged struct is read without the nullable-struct marker (kio writes and reads tagged
    values as non-nullable), so only an untagged optional struct carries one.
    """
    shape = classify_field(field)
    nullable = is_optional(field)
    if isinstance(shape, EntityField):
        return _Field(field.name, "struct", nullable=nullable and not tagged, entity=shape.type_)
    if isinstance(shape, EntityTupleField):
        item = _Field(field.name, "struct", entity=shape.type_)
        return _Field(field.name, "array", nullable=nullable, item=item)
    kafka_type = get_schema_field_type(field)
    if isinstance(shape, PrimitiveTupleField):
        return _Field(field.name, "array", nullable=nullable, item=_primitive(field.name, kafka_type, False))
    assert isinstance(shape, PrimitiveField)
    return _primitive(field.name, kafka_type, nullable)


def _primitive(name: str, kafka_type: str, nullable: bool) -> _Field:
    if kafka_type in _FIXED_SIZES:
        return _Field(name, "fixed", size=_FIXED_SIZES[kafka_type])
    if kafka_type in _LENGTH_PREFIXED:
        return _Field(name, "string" if kafka_type == "string" else "bytes", nullable=nullable)
    raise TypeError(f"field {name}: kafka_type {kafka_type!r} has no known wire layout")


@cache
def _layout(cls: type[Entity]) -> tuple[tuple[_Field, ...], tuple[tuple[int, _Field], ...]]:
    """(the untagged fields in wire order, the tagged fields by tag) of an entity class."""
    plain: list[_Field] = []
    tagged: list[tuple[int, _Field]] = []
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        if tag is None:
            plain.append(_field_of(field, tagged=False))
        else:
            tagged.append((int(tag), _field_of(field, tagged=True)))
    return tuple(plain), tuple(sorted(tagged, key=lambda t: t[0]))


@cache
def _fixed_size(cls: type[Entity]) -> int | None:
    """The wire size of a struct every instance of which has the same size, else None."""
    if cls.__flexible__:
        return None  # a tagged-field section follows every flexible struct
    total = 0
    for f in _layout(cls)[0]:
        size = _fixed_field_size(f)
        if size is None:
            return None
        total += size
    return total


def _fixed_field_size(f: _Field) -> int | None:
    if f.kind == "fixed":
        return f.size
    if f.kind == "struct" and not f.nullable and f.entity is not None:
        return _fixed_size(f.entity)
    return None


@cache
def _min_size(cls: type[Entity]) -> int:
    """The fewest bytes an instance of ``cls`` can take (bounds a declared count before the loop)."""
    flexible = bool(cls.__flexible__)
    fields: int = sum(_min_field_size(f, flexible) for f in _layout(cls)[0])
    return fields + 1 if flexible else fields


def _min_field_size(f: _Field, flexible: bool) -> int:
    if f.kind == "fixed":
        return f.size
    if f.kind == "struct":
        assert f.entity is not None
        return 1 if f.nullable else _min_size(f.entity)
    if f.kind == "array":
        return 1 if flexible else 4
    return 1 if flexible else (2 if f.kind == "string" else 4)


# -- code generation --------------------------------------------------------------------------------


class _Source:
    """The generated module for one top-level class: its scanner, with every nested struct inlined
    (a call per array item would cost more than the checks), and one function per flexible struct
    for its tagged fields, which are rare enough to be worth a call."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.tag_functions: dict[type[Entity], str] = {}
        self.pending: list[type[Entity]] = []
        self.counter = 0

    def tags_function_for(self, cls: type[Entity]) -> str:
        name = self.tag_functions.get(cls)
        if name is None:
            name = self.tag_functions[cls] = f"_tags_{cls.__name__}_{len(self.tag_functions)}"
            self.pending.append(cls)
        return name

    def var(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _emit_entity(src: _Source, indent: int, cls: type[Entity], end: str) -> None:
    """The checks of one struct's fields, in wire order, then its tagged-field section."""
    plain, _tagged = _layout(cls)
    flexible = bool(cls.__flexible__)
    run: list[_Field] = []
    for f in plain:
        if _fixed_field_size(f) is not None:
            run.append(f)
            continue
        _emit_fixed_run(src, indent, run, end)
        run = []
        _emit_value(src, indent, f, flexible, end)
    _emit_fixed_run(src, indent, run, end)
    if flexible:
        # Almost every section is empty (one zero byte): test for that inline, read the rest in a call.
        src.emit(indent, f"if pos >= {end}:")
        src.emit(indent + 1, "raise _truncated('_tagged_fields', 1, 0)")
        src.emit(indent, "if buf[pos]:")
        src.emit(indent + 1, f"pos = {src.tags_function_for(cls)}(buf, pos, {end}, unknown)")
        src.emit(indent, "else:")
        src.emit(indent + 1, "pos += 1")


def _emit_fixed_run(src: _Source, indent: int, run: list[_Field], end: str) -> None:
    total = sum(_fixed_field_size(f) or 0 for f in run)
    if total == 0:
        return
    src.emit(indent, f"if pos + {total} > {end}:")
    src.emit(indent + 1, f"raise _truncated({run[0].name!r}, {total}, {end} - pos)")
    src.emit(indent, f"pos += {total}")


def _emit_uvarint(src: _Source, indent: int, target: str, end: str, field: str) -> None:
    """``target`` = an unsigned varint at ``pos``; the one-byte case inline, the rest in a helper."""
    src.emit(indent, f"if pos >= {end}:")
    src.emit(indent + 1, f"raise _truncated({field!r}, 1, 0)")
    src.emit(indent, f"{target} = buf[pos]")
    src.emit(indent, f"if {target} & 0x80:")
    src.emit(indent + 1, f"{target}, pos = _uvarint(buf, pos, {end}, {field!r})")
    src.emit(indent, "else:")
    src.emit(indent + 1, "pos += 1")


def _emit_length(src: _Source, indent: int, f: _Field, flexible: bool, end: str, width: int) -> str:
    """Read a length prefix (compact: varint minus one; legacy: int16/int32); return its variable.
    A negative length is a null; what a null may be is the caller's to decide."""
    n = src.var("n")
    if flexible:
        _emit_uvarint(src, indent, n, end, f.name)
        src.emit(indent, f"{n} -= 1")
    else:
        unpack = "_I16" if width == 2 else "_I32"
        src.emit(indent, f"if pos + {width} > {end}:")
        src.emit(indent + 1, f"raise _truncated({f.name!r}, {width}, {end} - pos)")
        src.emit(indent, f"{n} = {unpack}(buf, pos)[0]")
        src.emit(indent, f"pos += {width}")
    return n


def _emit_null(src: _Source, indent: int, f: _Field, n: str, flexible: bool) -> None:
    """The branch for a negative length: a null where the schema allows one, else refused.
    Legacy lengths below -1 are refused too (kio reads only -1 as null)."""
    src.emit(indent, f"if {n} < 0:")
    if not f.nullable:
        src.emit(indent + 1, f"raise _null({f.name!r})")
    elif flexible:
        src.emit(indent + 1, "pass")
    else:
        src.emit(indent + 1, f"if {n} != -1:")
        src.emit(indent + 2, f"raise _negative({f.name!r}, {n})")


def _emit_value(src: _Source, indent: int, f: _Field, flexible: bool, end: str) -> None:
    if f.kind == "fixed":
        _emit_fixed_run(src, indent, [f], end)
    elif f.kind in ("string", "bytes"):
        n = _emit_length(src, indent, f, flexible, end, 2 if f.kind == "string" else 4)
        _emit_null(src, indent, f, n, flexible)
        if f.kind == "string" and flexible:
            src.emit(indent, f"elif {n} > {MAX_STRING_LENGTH}:")
            src.emit(indent + 1, f"raise _string_too_long({f.name!r}, {n})")
        src.emit(indent, f"elif pos + {n} > {end}:")
        src.emit(indent + 1, f"raise _past_end({f.name!r}, {n}, {end} - pos)")
        src.emit(indent, "else:")
        src.emit(indent + 1, f"pos += {n}")
    elif f.kind == "struct":
        _emit_struct(src, indent, f, end)
    else:
        _emit_array(src, indent, f, flexible, end)


def _emit_struct(src: _Source, indent: int, f: _Field, end: str) -> None:
    assert f.entity is not None
    if f.nullable:  # KIP-893 marker: kio reads only -1 as null, Kafka any negative; refuse the rest
        marker = src.var("marker")
        src.emit(indent, f"if pos >= {end}:")
        src.emit(indent + 1, f"raise _truncated({f.name!r}, 1, 0)")
        src.emit(indent, f"{marker} = buf[pos]")
        src.emit(indent, "pos += 1")
        src.emit(indent, f"if {marker} >= 0x80 and {marker} != 0xFF:")
        src.emit(indent + 1, f"raise _bad_marker({f.name!r}, {marker} - 256)")
        src.emit(indent, f"if {marker} != 0xFF:")
        indent += 1
    src.emit(indent, "try:")
    _emit_entity(src, indent + 1, f.entity, end)
    src.emit(indent, "except BodyShapeError as exc:")
    src.emit(indent + 1, f"raise exc.within({f.name!r})")


def _emit_array(src: _Source, indent: int, f: _Field, flexible: bool, end: str) -> None:
    item = f.item
    assert item is not None
    n = _emit_length(src, indent, f, flexible, end, 4)
    _emit_null(src, indent, f, n, flexible)
    fixed = _fixed_field_size(item)
    least = max(1, fixed if fixed is not None else _min_field_size(item, flexible))
    src.emit(indent, f"elif {n} * {least} > {end} - pos:")
    src.emit(indent + 1, f"raise _too_many({f.name!r}, {n}, {least}, {end} - pos)")
    if fixed is not None:
        if fixed:
            src.emit(indent, "else:")
            src.emit(indent + 1, f"pos += {n} * {fixed}")
        return
    i = src.var("i")
    src.emit(indent, "else:")
    src.emit(indent + 1, f"for {i} in range({n}):")
    if item.kind == "struct":
        assert item.entity is not None
        src.emit(indent + 2, "try:")
        _emit_entity(src, indent + 3, item.entity, end)
        src.emit(indent + 2, "except BodyShapeError as exc:")
        src.emit(indent + 3, f"raise exc.within(f'{f.name}[{{{i}}}]')")
    else:
        _emit_value(src, indent + 2, item, flexible, end)


def _emit_tag_section(src: _Source, cls: type[Entity]) -> None:
    """The cold half of a flexible struct: its tagged fields, when there are any."""
    _plain, tagged = _layout(cls)
    src.emit(0, f"def {src.tag_functions[cls]}(buf, count_at, end, unknown):")
    src.emit(1, "count, pos = _uvarint(buf, count_at, end, '_tagged_fields')")
    src.emit(1, "count_end = pos")
    src.emit(1, "for _ in range(count):")
    src.emit(2, "tag_at = pos")
    src.emit(2, "tag, pos = _uvarint(buf, pos, end, '_tagged_fields')")
    src.emit(2, "size, pos = _uvarint(buf, pos, end, '_tagged_fields')")
    src.emit(2, "stop = pos + size")
    src.emit(2, "if stop > end:")
    src.emit(3, "raise _past_end(f'_tagged_fields[{tag}]', size, end - pos)")
    keyword = "if"
    for tag, f in tagged:
        src.emit(2, f"{keyword} tag == {tag}:")
        _emit_value(src, 3, f, True, "stop")
        src.emit(3, "if pos != stop:")
        src.emit(4, f"raise _tag_size({f.name!r}, size, pos - stop + size)")
        keyword = "elif"
    indent = 2
    if tagged:
        src.emit(2, "else:")
        indent = 3
    src.emit(indent, "unknown.append((count_at, count_end, count, tag_at, stop))")
    src.emit(indent, "pos = stop")
    src.emit(1, "return pos")
    src.emit(0, "")


_HELPERS: Final[dict[str, Any]] = {
    "BodyShapeError": BodyShapeError,
    "_I16": _I16,
    "_I32": _I32,
    "_truncated": _truncated,
    "_past_end": _past_end,
    "_too_many": _too_many,
    "_null": _null,
    "_negative": _negative,
    "_string_too_long": _string_too_long,
    "_bad_marker": _bad_marker,
    "_tag_size": _tag_size,
    "_uvarint": read_uvarint,
}


def generated_source(cls: type[Entity]) -> str:
    """The Python source of the scanner for ``cls`` (``scan``) and of its tag-section functions."""
    src = _Source()
    src.emit(0, "def scan(buf, pos, end, unknown):")
    _emit_entity(src, 1, cls, "end")
    src.emit(1, "return pos")
    src.emit(0, "")
    while src.pending:
        _emit_tag_section(src, src.pending.pop(0))
    return "\n".join(src.lines)


@cache
def scanner(cls: type[Entity]) -> Scanner:
    """The generated scanner of ``cls``, compiled once: ``(buf, pos, end, unknown) -> end of body``."""
    namespace = dict(_HELPERS)
    exec(compile(generated_source(cls), f"<bounds of {cls.__module__}.{cls.__name__}>", "exec"), namespace)
    top: Scanner = namespace["scan"]
    return top


def check_body(cls: type[Entity], buf: bytes, offset: int, unknown: list[UnknownTag]) -> int:
    """Walk the body of ``cls`` that starts at ``offset`` in ``buf``; return where it ends.

    Raises :class:`BodyShapeError` (its message names the field) for any length, count or null
    the frame or the schema does not allow; appends each unknown tagged field to ``unknown``.
    """
    try:
        return scanner(cls)(buf, offset, len(buf), unknown)
    except BodyShapeError as exc:
        raise exc.within(cls.__name__) from None


def without_unknown_tags(buf: bytes, offset: int, end: int, unknown: list[UnknownTag]) -> bytes:
    """The body ``buf[offset:end]`` with the ``unknown`` tagged fields cut out and each section's
    field count lowered to match (what KIP-482 readers do when they skip a tag they do not know).

    Sections may nest (a struct's section inside a tagged value of its parent's), so the cuts and
    the new counts are applied as one list of edits in the order of the bytes they replace.
    """
    removed: dict[tuple[int, int, int], int] = {}
    edits: list[tuple[int, int, bytes]] = []
    for count_at, count_end, count, tag_at, stop in unknown:
        removed[(count_at, count_end, count)] = removed.get((count_at, count_end, count), 0) + 1
        edits.append((tag_at, stop, b""))
    for (count_at, count_end, count), cut in removed.items():
        edits.append((count_at, count_end, uvarint_bytes(count - cut)))
    out = bytearray()
    position = offset
    for start, stop, replacement in sorted(edits):
        out += buf[position:start]
        out += replacement
        position = stop
    out += buf[position:end]
    return bytes(out)


def uvarint_bytes(value: int) -> bytes:
    """An unsigned varint (the compact lengths and tagged-field sections of KIP-482)."""
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
