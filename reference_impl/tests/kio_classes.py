"""Every request and response class kio carries, for the tests that must hold for all of them.

Importing it registers a hypothesis strategy for kio's ``Records`` (short byte strings), so that
``st.from_type`` can draw an entity of any class.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from kio.static.primitive import Records

from reference_impl.protocol.apis import API_NAMES, request_class, response_class, schema_versions

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))

EVERY_CLASS = [
    (key, version, direction)
    for key in sorted(API_NAMES)
    for version in schema_versions(key)
    for direction in ("request", "response")
]
"""(api key, version, "request" or "response") for every API and version kio has a schema for."""


def entity_class(key: int, version: int, direction: str) -> Any:
    return request_class(key, version) if direction == "request" else response_class(key, version)
