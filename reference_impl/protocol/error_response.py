"""A request's own response saying one error, for every API: Kafka's ``getErrorResponse``.

Kafka answers a request it will not serve with the response type of that request carrying the
error where the version can hold it (``AbstractRequest.getErrorResponse`` and each request
class's override in ``clients/src/main/java/org/apache/kafka/common/requests/``): the top-level
error code (and message) when the version has one, and, where the request names resources, one
entry per named resource with the error (``ProduceRequest``: every partition; ``MetadataRequest``:
every topic; ``CreateTopicsRequest``: every topic with the message; ``FindCoordinatorRequest`` v4+:
every key; ``FetchRequest`` before v13: every partition as well as the top-level code, ...). The
other fields hold what Kafka puts there: -1 for offsets, epochs, ids and node coordinates, empty
arrays and strings, the schema defaults otherwise.

Sans-IO and schema-driven: :data:`MIRRORS` says, per API, which request arrays become which
response arrays and which request fields name each entry; everything else comes from the
response schema. The SASL authenticator answers a request out of turn with it
(ILLEGAL_SASL_STATE, ``SaslServerAuthenticator.handleSaslToken``).
"""

from __future__ import annotations

import dataclasses
import types
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints

from kio.static.protocol import ResponsePayload

from .apis import response_class
from .build import build, scalar_field_names
from .errors import ErrorCode

NEG_ONE = frozenset(
    {
        "base_offset",
        "committed_offset",
        "controller_id",
        "end_offset",
        "generation_id",
        "high_watermark",
        "last_stable_offset",
        "leader_epoch",
        "leader_id",
        "log_start_offset",
        "low_watermark",
        "node_id",
        "num_partitions",
        "offset",
        "port",
        "preferred_read_replica",
        "producer_epoch",
        "producer_id",
        "replication_factor",
        "timestamp",
    }
)
"""Required integer fields Kafka's error responses set to -1 (``INVALID_OFFSET``, ``NO_PRODUCER_ID``,
``Node.noNode()``'s id and port, ``UNKNOWN_GENERATION_ID``, ...), not 0."""

ERROR_FIELDS = ("error_code", "partition_error_code")
KEY_FIELDS = frozenset(
    {
        "group_id",
        "index",
        "name",
        "partition",
        "partition_index",
        "producer_id",
        "resource_name",
        "resource_type",
        "topic",
        "topic_id",
    }
)
"""The fields an entry copies from the request item it answers: what names the resource. Kafka's
overrides copy nothing else (a CreateTopics entry does not echo the asked partition count)."""


@dataclasses.dataclass(frozen=True)
class Mirror:
    """Response array ``into`` gets one entry per item of request array ``source``."""

    into: str
    source: str
    key: str | None = None
    """The request items are bare values (names, indexes): the entry field they go to."""
    renames: tuple[tuple[str, str], ...] = ()
    """(entry field, request item field) pairs whose names differ; same-named :data:`KEY_FIELDS`
    are copied."""
    children: tuple[Mirror, ...] = ()
    message: bool = False
    """The entries carry the error message (where Kafka's override sets it)."""
    versions: tuple[int, int] = (0, 2**15)
    nulls: bool = True
    """A null copied from the request stays null where the response allows it (else: the zero)."""


def _m(into: str, source: str, *children: Mirror, **kw: Any) -> Mirror:
    return Mirror(into, source, children=children, **kw)


def _partitions(source: str = "partitions", **kw: Any) -> Mirror:
    return _m("partitions", source, **kw)


MIRRORS: Mapping[int, tuple[Mirror, ...]] = {
    0: (_m("responses", "topic_data", _m("partition_responses", "partition_data", message=True)),),
    1: (
        _m(
            "responses",
            "topics",
            _partitions(renames=(("partition_index", "partition"),)),
            versions=(0, 12),  # v13+: the top-level code alone (FetchRequest.getErrorResponse)
        ),
    ),
    2: (_m("topics", "topics", _partitions()),),
    3: (_m("topics", "topics", nulls=False),),  # MetadataRequest: a null name answered as ""
    8: (_m("topics", "topics", _partitions()),),
    9: (
        _m("topics", "topics", _partitions("partition_indexes", key="partition_index"), versions=(0, 1)),
        _m("groups", "groups", versions=(8, 2**15)),
    ),
    10: (_m("coordinators", "coordinator_keys", key="key", message=True),),
    15: (_m("groups", "groups", key="group_id"),),
    19: (_m("topics", "topics", message=True),),
    20: (
        _m("responses", "topic_names", key="name", versions=(0, 5)),
        _m("responses", "topics", versions=(6, 2**15)),
    ),
    21: (_m("topics", "topics", _partitions()),),
    23: (_m("topics", "topics", _partitions()),),
    24: (
        _m(
            "results_by_topic_v3_and_below",
            "v3_and_below_topics",
            _m("results_by_partition", "partitions", key="partition_index"),
            versions=(0, 3),
        ),
    ),
    27: (
        _m(
            "markers",
            "markers",
            _m("topics", "topics", _partitions("partition_indexes", key="partition_index")),
        ),
    ),
    28: (_m("topics", "topics", _partitions()),),
    30: (_m("results", "creations", message=True),),
    31: (_m("filter_results", "filters", message=True),),
    32: (_m("results", "resources", message=True),),
    33: (_m("responses", "resources", message=True),),
    37: (_m("results", "topics", message=True),),
    42: (_m("results", "groups_names", key="group_id"),),
    43: (
        _m(
            "replica_election_results",
            "topic_partitions",
            _m("partition_result", "partitions", key="partition_id", message=True),
        ),
    ),
    44: (_m("responses", "resources", message=True),),
    51: (
        _m("results", "deletions", renames=(("user", "name"),), message=True),
        _m("results", "upsertions", renames=(("user", "name"),), message=True),
    ),
    61: (_m("topics", "topics", _partitions("partition_indexes", key="partition_index")),),
    65: (_m("transaction_states", "transactional_ids", key="transactional_id"),),
    69: (_m("groups", "group_ids", key="group_id"),),
    75: (_m("topics", "topics"),),
    77: (_m("groups", "group_ids", key="group_id"),),
    # KIP-932's share coordinator APIs (InitializeShareGroupStateRequest.getErrorResponse and the
    # Read/Write/Delete/ReadSummary ones): every partition with the error and its message
    **{key: (_m("results", "topics", _partitions(message=True)),) for key in range(83, 88)},
}
"""Per API key, the request arrays Kafka's ``getErrorResponse`` answers entry by entry."""


def error_response(
    api_key: int, version: int, request: object, code: ErrorCode, message: str | None
) -> ResponsePayload | None:
    """``request``'s response (api ``api_key`` at ``version``) carrying ``code`` as Kafka's
    ``getErrorResponse``; None for a Produce with acks=0, which Kafka does not answer. Raises
    UnknownApiError for a version the schema does not know."""
    if api_key == 0 and getattr(request, "acks", None) == 0:
        return None
    cls = response_class(api_key, version)
    data: dict[str, Any] = {}
    names = {f.name for f in dataclasses.fields(cls)}
    if "error_code" in names:
        data["error_code"] = code
    if "error_message" in names:
        data["error_message"] = message
    if api_key == 11 and version >= 7:
        data["protocol_name"] = None  # JoinGroupRequest.getErrorResponse
    for mirror in MIRRORS.get(api_key, ()):
        lo, hi = mirror.versions
        if lo <= version <= hi and mirror.into in names:
            entries = _mirrored(cls, mirror, getattr(request, mirror.source, None), code, message)
            data.setdefault(mirror.into, []).extend(entries)
    if api_key == 51:  # AlterUserScramCredentialsRequest: each user once, sorted (linear, then n log n)
        by_user = {str(entry["user"]): entry for entry in data.get("results", [])}
        data["results"] = [by_user[user] for user in sorted(by_user)]
    return build(cls, with_defaults(cls, data))


def _mirrored(
    owner: type[Any], mirror: Mirror, items: Iterable[Any] | None, code: ErrorCode, message: str | None
) -> list[dict[str, Any]]:
    entity = _entity_of(owner, mirror.into)
    fields = {f.name for f in dataclasses.fields(entity)}
    scalars = scalar_field_names(entity) & KEY_FIELDS
    hints = _hints(entity)
    by_name = {f.name: f for f in dataclasses.fields(entity)}
    renamed = dict(mirror.renames)
    out = []
    for item in items or ():
        entry: dict[str, Any] = {}
        if mirror.key is not None:
            entry[mirror.key] = item
        else:
            for name in scalars | {into for into, _ in mirror.renames}:
                value = getattr(item, renamed.get(name, name), None)
                if value is None and not (mirror.nulls and _nullable(hints[name])):
                    value = _zero(by_name[name], hints[name], allow_null=False)
                entry[name] = value
        for name in ERROR_FIELDS:
            if name in fields:
                entry[name] = code
        if mirror.message and "error_message" in fields:
            entry["error_message"] = message
        for child in mirror.children:
            source_items = None if mirror.key is not None else getattr(item, child.source, None)
            entry[child.into] = _mirrored(entity, child, source_items, code, message)
        out.append(with_defaults(entity, entry))
    return out


_HINTS: dict[type[Any], dict[str, Any]] = {}
_ZEROS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    """``typing.get_type_hints``, once per class: it is slow, and an answer may hold thousands of entries."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _entity_of(owner: type[Any], field: str) -> type[Any]:
    hint = _unwrap(_hints(owner)[field])
    if get_origin(hint) is tuple:
        hint = _unwrap(get_args(hint)[0])
    assert isinstance(hint, type) and dataclasses.is_dataclass(hint), f"{owner.__name__}.{field}"
    return hint


def _unwrap(hint: Any) -> Any:
    if get_origin(hint) in (Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


def _nullable(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)


def with_defaults(cls: type[Any], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with a value for every field of ``cls`` that has no schema default (the values are
    shared between calls: :func:`build` reads them, nothing may change them)."""
    return {**_required_zeros(cls), **data}


def _required_zeros(cls: type[Any]) -> dict[str, Any]:
    if cls not in _ZEROS:
        hints = _hints(cls)
        _ZEROS[cls] = {
            f.name: _zero(f, hints[f.name])
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
    return _ZEROS[cls]


def _zero(f: dataclasses.Field[Any], hint: Any, allow_null: bool = True) -> Any:
    kafka_type = str(f.metadata.get("kafka_type", ""))
    bare = _unwrap(hint)
    if get_origin(bare) is tuple:
        return []
    if kafka_type == "records":
        return b""  # MemoryRecords.EMPTY
    if f.name == "metadata":
        return ""  # OffsetFetchResponse.NO_METADATA
    if allow_null and _nullable(hint) and f.name not in NEG_ONE:
        return None
    if isinstance(bare, type) and dataclasses.is_dataclass(bare):
        return with_defaults(bare, {})
    if kafka_type in ("int8", "int16", "int32", "int64", "uint16"):
        return -1 if f.name in NEG_ONE else 0
    zeros: dict[str, Any] = {
        "string": "",
        "bytes": b"",
        "bool": False,
        "float64": 0.0,
        "uuid": uuid.UUID(int=0),
        "error_code": ErrorCode.none,
        "timedelta_i32": 0,
        "timedelta_i64": -1 if f.name in NEG_ONE else 0,
        "datetime_i64": 0,
    }
    return zeros.get(kafka_type, 0)
