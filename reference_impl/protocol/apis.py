"""The (api_key, version) → kio entity index, and header-version rules.

kio generates one dataclass per API, version and direction from Kafka's own
message definitions; this module finds them lazily (importing all of kio's
~1,500 schema modules costs seconds) and answers the questions framing needs:
is this version flexible, which request and response header version go with it.
"""

from __future__ import annotations

from functools import cache

from kio.index import load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType
from kio.static.protocol import RequestPayload, ResponsePayload

API_VERSIONS_KEY = 18

API_NAMES: dict[int, str] = dict(api_key_map)
"""Kafka API key → snake_case API name, as kio (and Kafka's JSON) names them."""

API_KEYS: dict[str, int] = {name: key for key, name in API_NAMES.items()}


class UnknownApiError(LookupError):
    """No API with this key, or no schema for this version of it."""


def api_name(api_key: int) -> str:
    try:
        return API_NAMES[api_key]
    except KeyError:
        raise UnknownApiError(f"unknown api key {api_key}") from None


def schema_versions(api_key: int) -> range:
    """Every version kio has a schema for (the versions Kafka itself still defines)."""
    versions = schema_name_map[api_name(api_key)]
    known = [v for v, kinds in versions.items() if EntityType.request in kinds]
    return range(min(known), max(known) + 1)


@cache
def request_class(api_key: int, version: int) -> type[RequestPayload]:
    try:
        return load_request_schema(api_key, version)
    except LookupError as exc:  # kio's UnknownAPIKey / UnknownEntity derive from RuntimeError
        raise UnknownApiError(str(exc)) from None
    except RuntimeError as exc:
        raise UnknownApiError(str(exc)) from None


@cache
def response_class(api_key: int, version: int) -> type[ResponsePayload]:
    try:
        return load_response_schema(api_key, version)
    except (LookupError, RuntimeError) as exc:
        raise UnknownApiError(str(exc)) from None


@cache
def is_flexible(api_key: int, version: int) -> bool:
    """True when this version uses compact encodings and tagged fields (KIP-482)."""
    return bool(request_class(api_key, version).__flexible__)


def request_header_version(api_key: int, version: int) -> int:
    """Request header v2 for flexible versions, v1 otherwise (v0 only served ControlledShutdown v0)."""
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """Response header v1 for flexible versions, v0 otherwise.

    ApiVersions is the exception: its response always carries header v0, so a
    client that does not yet know whether the broker speaks flexible versions
    can still read the answer (KIP-511).
    """
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, version) else 0
