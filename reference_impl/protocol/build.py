"""Build any version of a kio entity from plain data, and read fields a version may lack.

Kafka evolves each API by adding fields in later versions; kio generates one
class per version. A handler computes its answer once, as plain dicts and
lists with Kafka's field names, and :func:`build` shapes it into the class of
the version the client asked for: fields that version does not have are
dropped, missing fields take the schema's defaults, integers become
timedeltas, UUIDs or error codes where the schema says so. Handlers are
then written once per API, with explicit branches only where a version
changes *behaviour*, which is how Kafka's own handlers read.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable, Mapping
from types import EllipsisType, NoneType, UnionType
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from kio.schema.errors import ErrorCode

T = TypeVar("T")


class BuildError(TypeError):
    """Plain data that does not fit the entity (a programming error in a handler)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    kafka_type: str
    entity: type[Any] | None
    """The nested entity class, for entity and entity-array fields."""
    is_array: bool
    has_default: bool


def _strip_optional(tp: Any) -> Any:
    if get_origin(tp) in (UnionType, Union):
        args = [a for a in get_args(tp) if a is not NoneType]
        if len(args) == 1:
            return args[0]
    return tp


_plans: dict[type[Any], tuple[_FieldPlan, ...]] = {}


def _plan(cls: type[Any]) -> tuple[_FieldPlan, ...]:
    cached = _plans.get(cls)
    if cached is not None:
        return cached
    hints = get_type_hints(cls)
    plans = []
    for f in dataclasses.fields(cls):
        tp = _strip_optional(hints[f.name])
        is_array = False
        if get_origin(tp) is tuple:
            args = get_args(tp)
            if len(args) != 2 or not isinstance(args[1], EllipsisType):
                raise BuildError(f"{cls.__name__}.{f.name}: unexpected tuple type {tp}")
            tp = _strip_optional(args[0])
            is_array = True
        entity: type[Any] | None = tp if isinstance(tp, type) and dataclasses.is_dataclass(tp) else None
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        plans.append(_FieldPlan(f.name, str(f.metadata.get("kafka_type", "")), entity, is_array, has_default))
    _plans[cls] = result = tuple(plans)
    return result


def field_names(cls: type[Any]) -> frozenset[str]:
    return frozenset(p.name for p in _plan(cls))


def scalar_field_names(cls: type[Any]) -> frozenset[str]:
    """The fields of ``cls`` that are neither arrays nor nested entities."""
    return frozenset(p.name for p in _plan(cls) if p.entity is None and not p.is_array)


def _primitive(kafka_type: str, value: Any) -> Any:
    if value is None:
        return None
    if kafka_type == "timedelta_i32" or kafka_type == "timedelta_i64":
        if isinstance(value, datetime.timedelta):
            return value
        return datetime.timedelta(milliseconds=int(value))
    if kafka_type == "error_code":
        return ErrorCode(int(value))
    if kafka_type == "uuid":
        if isinstance(value, uuid.UUID):
            return value
        return uuid.UUID(str(value))
    if kafka_type == "datetime_i64":
        if isinstance(value, datetime.datetime):
            return value
        return datetime.datetime.fromtimestamp(int(value) / 1000, tz=datetime.UTC)
    return value


def build(cls: type[T], data: Mapping[str, Any] | Any) -> T:
    """An instance of ``cls`` from ``data``: a mapping, or an entity of another version.

    Keys that ``cls`` has no field for are ignored (an older version lacks
    them); fields absent from ``data`` take their schema default, and a field
    with no default that is absent raises :class:`BuildError`.

    By a function generated for ``cls`` (:func:`_builder`): every answer the broker sends is
    built here, and walking the field plans for each cost as much as encoding the answer
    (issue 22). :func:`build_by_plan` is the same walk, interpreted: the reference the tests
    hold the generated builders to.
    """
    built: T = _builder(cls)(data)
    return built


def build_by_plan(cls: type[T], data: Mapping[str, Any] | Any) -> T:
    """:func:`build`, interpreting the field plans (the reference for the generated builders)."""
    data = _as_mapping(cls, data)
    kwargs: dict[str, Any] = {}
    for plan in _plan(cls):
        if plan.name not in data:
            if not plan.has_default:
                raise BuildError(f"{cls.__name__}.{plan.name} has no default and was not given")
            continue
        value = data[plan.name]
        if value is None:
            pass  # a nullable field (or array) left null
        elif plan.entity is not None:
            if plan.is_array:
                value = tuple(build_by_plan(plan.entity, item) for item in value)
            else:
                value = build_by_plan(plan.entity, value)
        elif plan.is_array:
            value = tuple(_primitive(plan.kafka_type, v) for v in value)
        else:
            value = _primitive(plan.kafka_type, value)
        kwargs[plan.name] = value
    return cls(**kwargs)


def _as_mapping(cls: type[Any], data: Any) -> Mapping[str, Any]:
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    if not isinstance(data, Mapping):
        raise BuildError(f"{cls.__name__} needs a mapping, got {type(data).__name__}")
    return data


_CONVERTED = frozenset({"timedelta_i32", "timedelta_i64", "error_code", "uuid", "datetime_i64"})
"""The kafka types whose plain values :func:`_primitive` converts (the others pass as they are)."""
_ABSENT = object()


_builders: dict[type[Any], Callable[[Any], Any]] = {}


def _builder(cls: type[Any]) -> Callable[[Any], Any]:
    """The generated builder of ``cls``: straight-line code over its fields, the same steps as
    :func:`build_by_plan` takes (names, defaults, conversions, nested builders)."""
    found = _builders.get(cls)
    if found is not None:
        return found
    namespace: dict[str, Any] = {
        "_cls": cls,
        "_absent": _ABSENT,
        "_dict": dict,
        "_as_mapping": _as_mapping,
        "_primitive": _primitive,
        "BuildError": BuildError,
    }
    lines = [
        "def build(data):",
        "    if data.__class__ is not _dict:",
        "        data = _as_mapping(_cls, data)",
        "    kw = {}",
    ]
    for i, plan in enumerate(_plan(cls)):
        name = plan.name
        lines.append(f"    v = data.get({name!r}, _absent)")
        lines.append("    if v is _absent:")
        if plan.has_default:
            lines.append("        pass")
        else:
            message = f"{cls.__name__}.{name} has no default and was not given"
            lines.append(f"        raise BuildError({message!r})")
        lines.append("    else:")
        item = "x" if plan.is_array else "v"
        if plan.entity is not None:
            namespace[f"_b{i}"] = _LazyBuilder(plan.entity)
            each = f"_b{i}({item})"
        elif plan.kafka_type in _CONVERTED:
            each = f"_primitive({plan.kafka_type!r}, {item})"
        else:
            each = item
        converted = (f"tuple([{each} for x in v])" if each != "x" else "tuple(v)") if plan.is_array else each
        if converted != "v":
            lines.append("        if v is not None:")
            lines.append(f"            v = {converted}")
        lines.append(f"        kw[{name!r}] = v")
    lines.append("    return _cls(**kw)")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<builder of {cls.__module__}.{cls.__name__}>", "exec"), namespace)
    function: Callable[[Any], Any] = namespace["build"]
    _builders[cls] = function
    return function


class _LazyBuilder:
    """A nested entity's builder, generated on first use (entities refer to each other freely)."""

    __slots__ = ("_cls", "_function")

    def __init__(self, cls: type[Any]) -> None:
        self._cls = cls
        self._function: Callable[[Any], Any] | None = None

    def __call__(self, data: Any) -> Any:
        function = self._function
        if function is None:
            function = self._function = _builder(self._cls)
        return function(data)


def get(entity: Any, name: str, default: Any = None) -> Any:
    """``entity.name`` if this version has the field, else ``default``."""
    return getattr(entity, name, default)


def millis(value: datetime.timedelta | int | None) -> int:
    """A kio timedelta field as integer milliseconds (Kafka's unit on the wire)."""
    if value is None:
        return 0
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)
