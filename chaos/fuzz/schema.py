"""The wire layout of a kio entity, as a generator and an encoder need it.

kio generates one dataclass per API, version and direction from Kafka's message definitions
(``clients/src/main/resources/common/message/*.json`` in apache/kafka) and keeps the wire type of
each field in its metadata (``kafka_type``, ``tag``). This module reads that once per class into
plain :class:`FieldSpec` rows: enough to generate a value for every field and to write it byte by
byte, which is what lets the fuzzer mutate one length or one count in place (kio's own writer
gives only the finished bytes). The broker's bounds checker (``reference_impl.protocol.bounds``)
reads the same metadata for the opposite job; it keeps no value types, so it is not shared.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING
from functools import cache
from typing import Any

from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.static.protocol import Entity

SIGNED_INT = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "error_code": 2, "timedelta_i32": 4,
              "timedelta_i64": 8, "datetime_i64": 8}
UNSIGNED_INT = {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}
"""Bytes of each integer type (durations, instants and error codes are integers on the wire)."""


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of an entity as it travels: its wire type, nullability, nesting and tag."""

    name: str
    kafka_type: str
    """The primitive's Kafka type; ``struct`` for a nested entity (or an array of them)."""
    is_array: bool
    nullable: bool
    entity: type[Entity] | None
    tag: int | None
    default: Any
    """The value kio leaves out when the field is tagged (``MISSING`` when there is none)."""


@cache
def layout(cls: type[Entity]) -> tuple[tuple[FieldSpec, ...], tuple[FieldSpec, ...]]:
    """(untagged fields in wire order, tagged fields in tag order) of a kio entity class."""
    plain: list[FieldSpec] = []
    tagged: list[FieldSpec] = []
    for field in dataclasses.fields(cls):
        shape = classify_field(field)
        tag = get_field_tag(field)
        entity = shape.type_ if isinstance(shape, EntityField | EntityTupleField) else None
        kafka_type = "struct" if entity is not None else get_schema_field_type(field)
        is_array = isinstance(shape, EntityTupleField | PrimitiveTupleField)
        default: Any = MISSING
        if tag is not None:
            default = field.default if field.default is not MISSING else get_tagged_field_default(field)
        spec = FieldSpec(field.name, kafka_type, is_array, is_optional(field), entity,
                         None if tag is None else int(tag), default)
        (plain if tag is None else tagged).append(spec)
    return tuple(plain), tuple(sorted(tagged, key=lambda f: f.tag or 0))


def is_flexible(cls: type[Any]) -> bool:
    return bool(getattr(cls, "__flexible__", False))
