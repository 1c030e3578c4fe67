"""Entity writers generated from kio's schema: the same bytes as kio's writer, a few times faster.

kio's ``entity_writer`` walks a message field by field through one small writer per field, each a
call, a ``struct.pack`` and a ``BytesIO.write``. Every answer the broker sends passes through it,
and on the acks=all round trip (a produce answer, two follower fetch answers, a consumer's, each
follower's next fetch request) it was a fifth of the CPU (issue 22). This module does what
:mod:`.bounds` does for reading: for each entity class it generates, once, the source of a Python
function from kio's own schema information (the dataclass fields, their ``kafka_type`` and ``tag``
metadata, read through kio's ``_introspect`` helpers), in which runs of fixed-size fields are one
``struct.pack`` and the pieces are joined once at the end.

kio's writer stays the reference: ``reference_impl/tests/protocol/test_writers.py`` encodes
sample entities of every request and response class kio carries, every version, with both and
compares the bytes. Where kio raises for a value it cannot write (a string too long for its
length prefix, a None in a non-nullable field), this raises too, though not always the same
exception class (``struct.error`` where kio has ``OutOfBoundValue``): the broker treats any
failure to encode its own answer the same way (``Broker.finish_request``).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from functools import cache
from typing import Any, Final

from kio.serial._implicit_defaults import get_tagged_field_default
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

Writer = Callable[[Any, Callable[[bytes], None]], None]
"""A generated writer: ``(entity, append)``, each piece of the encoding handed to ``append``."""

_FIXED: Final[dict[str, tuple[str, str]]] = {
    # kafka type: (struct code, how a value becomes what struct packs; {} is the value)
    "bool": ("?", "{}"),
    "int8": ("b", "{}"),
    "uint8": ("B", "{}"),
    "int16": ("h", "{}"),
    "uint16": ("H", "{}"),
    "error_code": ("h", "{}"),  # an IntEnum: struct packs its value
    "int32": ("i", "{}"),
    "uint32": ("I", "{}"),
    "int64": ("q", "{}"),
    "uint64": ("Q", "{}"),
    "float64": ("d", "{}"),
    "timedelta_i32": ("i", "round({}.total_seconds() * 1000)"),
    "timedelta_i64": ("q", "round({}.total_seconds() * 1000)"),
    "datetime_i64": ("q", "round({}.timestamp() * 1000)"),
    "uuid": ("16s", "_uuid({})"),
}
_ONE_BYTE: Final = tuple(bytes((n,)) for n in range(128))
_ZERO_UUID: Final = bytes(16)


def uvarint(value: int) -> bytes:
    """An unsigned varint (Kafka's ``ByteUtils.writeUnsignedVarint``)."""
    if value < 128:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _uuid(value: Any) -> bytes:
    return _ZERO_UUID if value is None else value.bytes


def _text(value: Any) -> bytes:
    """A string field's bytes: kio's compact writers take str or bytes alike."""
    return value.encode() if isinstance(value, str) else bytes(value)


_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")


def _legacy_string(value: Any) -> bytes:
    data: bytes = value.encode()
    return _I16.pack(len(data)) + data


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kafka_type: str  # "" for a struct or an array of structs
    nullable: bool
    array: bool
    entity: type[Entity] | None


def _field_of(field: dataclasses.Field[Any], *, tagged: bool) -> _Field:
    """kio's view of a field; a tagged field is written by its non-nullable writer, as kio's
    ``get_field_writer`` does (its absence stands for its default)."""
    nullable = False if tagged else is_optional(field)
    kind = classify_field(field)
    match kind:
        case PrimitiveField() | PrimitiveTupleField():
            return _Field(field.name, get_schema_field_type(field), nullable, kind.is_array, None)
        case EntityField(entity) | EntityTupleField(entity):
            return _Field(field.name, "", nullable, kind.is_array, entity)
    raise TypeError(f"unsupported field {field.name}")  # pragma: no cover - kio has no other kind


class _Source:
    """The generated module: one function per entity class reached, and the constants they use."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "_uv": uvarint,
            "_uuid": _uuid,
            "_text": _text,
            "_legacy_string": _legacy_string,
            "_I32": _I32,
            "_ZERO": b"\x00",
            "_NULL_I16": _I16.pack(-1),
            "_NULL_I32": _I32.pack(-1),
        }
        self.functions: dict[type[Entity], str] = {}
        self.pending: list[type[Entity]] = []
        self._names = 0

    def name(self, stem: str) -> str:
        self._names += 1
        return f"{stem}{self._names}"

    def constant(self, stem: str, value: Any) -> str:
        name = self.name(stem)
        self.namespace[name] = value
        return name

    def function_for(self, cls: type[Entity]) -> str:
        if cls not in self.functions:
            self.functions[cls] = self.name(f"_write_{cls.__name__}_")
            self.pending.append(cls)
        return self.functions[cls]

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _emit_entity_function(src: _Source, cls: type[Entity]) -> None:
    flexible = bool(cls.__flexible__)
    src.emit(0, f"def {src.functions[cls]}(e, ap):")
    plain: list[_Field] = []
    tagged: list[tuple[int, _Field, Any]] = []
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        if tag is None:
            plain.append(_field_of(field, tagged=False))
        else:
            tagged.append((int(tag), _field_of(field, tagged=True), get_tagged_field_default(field)))
    run: list[_Field] = []
    for f in plain:
        if _fixed(f):
            run.append(f)
            continue
        _emit_fixed_run(src, 1, run, "e", "ap")
        run = []
        _emit_value(src, 1, f, f"e.{f.name}", flexible, "ap")
    _emit_fixed_run(src, 1, run, "e", "ap")
    if flexible:
        _emit_tags(src, sorted(tagged, key=lambda t: t[0]))
    src.emit(1, "return None")
    src.emit(0, "")


def _fixed(f: _Field) -> bool:
    return (
        not f.array
        and f.entity is None
        and f.kafka_type in _FIXED
        and not (f.nullable and f.kafka_type == "datetime_i64")
    )


def _emit_fixed_run(src: _Source, indent: int, run: list[_Field], owner: str, ap: str) -> None:
    if not run:
        return
    codes = "".join(_FIXED[f.kafka_type][0] for f in run)
    packer = src.constant("_S", struct.Struct(">" + codes))
    values = ", ".join(_FIXED[f.kafka_type][1].format(f"{owner}.{f.name}") for f in run)
    src.emit(indent, f"{ap}({packer}.pack({values}))")


def _emit_value(src: _Source, indent: int, f: _Field, value: str, flexible: bool, ap: str) -> None:
    """Write ``value`` (an expression) as field ``f``."""
    if f.array:
        _emit_array(src, indent, f, value, flexible, ap)
    elif f.entity is not None:
        function = src.function_for(f.entity)
        if f.nullable:  # KIP-893: a nullable struct is a -1/1 marker, then the struct
            v = src.name("v")
            src.emit(indent, f"{v} = {value}")
            src.emit(indent, f"if {v} is None:")
            src.emit(indent + 1, f"{ap}(b'\\xff')")
            src.emit(indent, "else:")
            src.emit(indent + 1, f"{ap}(b'\\x01')")
            src.emit(indent + 1, f"{function}({v}, {ap})")
        else:
            src.emit(indent, f"{function}({value}, {ap})")
    else:
        _emit_primitive(src, indent, f.kafka_type, f.nullable, value, flexible, ap)


def _emit_primitive(
    src: _Source, indent: int, kafka_type: str, nullable: bool, value: str, flexible: bool, ap: str
) -> None:
    if kafka_type in _FIXED and not (nullable and kafka_type == "datetime_i64"):
        code, convert = _FIXED[kafka_type]
        packer = src.constant("_S", struct.Struct(">" + code))
        src.emit(indent, f"{ap}({packer}.pack({convert.format(value)}))")
        return
    if kafka_type == "datetime_i64":  # nullable: -1 for None
        packer = src.constant("_S", struct.Struct(">q"))
        v = src.name("v")
        src.emit(indent, f"{v} = {value}")
        src.emit(indent, f"{ap}({packer}.pack(-1 if {v} is None else round({v}.timestamp() * 1000)))")
        return
    if kafka_type not in ("string", "bytes", "records"):
        raise TypeError(f"no writer for kafka type {kafka_type!r}")  # pragma: no cover
    v = src.name("v")
    src.emit(indent, f"{v} = {value}")
    if flexible:  # compact: length + 1, 0 for null; str or bytes alike (kio's compact writers)
        if nullable:
            src.emit(indent, f"if {v} is None:")
            src.emit(indent + 1, f"{ap}(b'\\x00')")
            src.emit(indent, "else:")
            indent += 1
        else:
            src.emit(indent, f"if {v} is None:")
            src.emit(indent + 1, "raise TypeError('Unexpectedly received None value')")
        b = src.name("b")
        src.emit(indent, f"{b} = _text({v})")
        src.emit(indent, f"{ap}(_uv(len({b}) + 1))")
        src.emit(indent, f"{ap}({b})")
        return
    string = kafka_type == "string"
    src.emit(indent, f"if {v} is None:")
    if nullable:
        src.emit(indent + 1, f"{ap}({'_NULL_I16' if string else '_NULL_I32'})")
    else:
        src.emit(indent + 1, "raise TypeError('Unexpectedly received None value')")
    src.emit(indent, "else:")
    if string:
        src.emit(indent + 1, f"{ap}(_legacy_string({v}))")
    else:  # length, then the value as it is: a batch of records is not copied to be prefixed
        src.emit(indent + 1, f"{ap}(_I32.pack(len({v})))")
        src.emit(indent + 1, f"{ap}({v} if {v}.__class__ is bytes else bytes({v}))")


def _emit_array(src: _Source, indent: int, f: _Field, value: str, flexible: bool, ap: str) -> None:
    """An array: compact (count + 1, 0 for null) or legacy (int32 count, -1 for null); kio writes a
    None array as null whether or not the schema lets it be."""
    v = src.name("a")
    item = src.name("x")
    src.emit(indent, f"{v} = {value}")
    src.emit(indent, f"if {v} is None:")
    src.emit(indent + 1, f"{ap}({'_ZERO' if flexible else '_NULL_I32'})")
    src.emit(indent, "else:")
    count = f"_uv(len({v}) + 1)" if flexible else f"_I32.pack(len({v}))"
    src.emit(indent + 1, f"{ap}({count})")
    src.emit(indent + 1, f"for {item} in {v}:")
    element = _Field(f.name, f.kafka_type, False, False, f.entity)
    _emit_value(src, indent + 2, element, item, flexible, ap)


def _emit_tags(src: _Source, tagged: list[tuple[int, _Field, Any]]) -> None:
    """The tagged fields section (KIP-482): the count, then each field whose value is not its
    default, in tag order, as tag, size and value."""
    if not tagged:
        src.emit(1, "ap(b'\\x00')")
        return
    src.emit(1, "tags = []")
    for tag, f, default in tagged:
        d = src.constant("_D", default)
        v = src.name("t")
        src.emit(1, f"{v} = e.{f.name}")
        src.emit(1, f"if not ({v} == {d}):")
        src.emit(2, "piece = []")
        _emit_value(src, 2, f, v, True, "piece.append")
        src.emit(2, "data = b''.join(piece)")
        src.emit(2, f"tags.append({uvarint(tag)!r} + _uv(len(data)) + data)")
    src.emit(1, "ap(_uv(len(tags)))")
    src.emit(1, "ap(b''.join(tags))")


def generated_source(cls: type[Entity]) -> tuple[str, dict[str, Any], str]:
    """The source of ``cls``'s writer and of every struct it reaches; its namespace; its name."""
    src = _Source()
    top = src.function_for(cls)
    while src.pending:
        _emit_entity_function(src, src.pending.pop())
    return "\n".join(src.lines) + "\n", src.namespace, top


@cache
def writer(cls: type[Entity]) -> Writer:
    """The generated writer for ``cls`` (compiled once)."""
    source, namespace, top = generated_source(cls)
    exec(compile(source, f"<writer of {cls.__module__}.{cls.__name__}>", "exec"), namespace)
    function: Writer = namespace[top]
    return function


def encode(entity: Entity) -> bytes:
    """``entity``'s bytes, as kio's ``entity_writer`` writes them."""
    pieces: list[bytes] = []
    writer(type(entity))(entity, pieces.append)
    return b"".join(pieces)
