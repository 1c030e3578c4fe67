"""Client quota entities and DescribeClientQuotas filters, as Kafka matches them (API 48; what
AlterClientQuotas, API 49, may set is :mod:`.controller.client_quotas`).

Read from Kafka (not copied): metadata/src/main/java/org/apache/kafka/image/ClientQuotasImage.java
(``describe``: a filter component per entity type, EXACT / DEFAULT / SPECIFIED (here ANY, which
includes the default entity) match types, ``strict`` asks for entities with no other entity
types; an empty or repeated type, an EXACT without a name, a DEFAULT or SPECIFIED with one, or
``ip`` mixed with ``user``/``client-id`` are INVALID_REQUEST, an unknown type
UNSUPPORTED_VERSION; no components and not strict describes everything) and
DescribeClientQuotasRequest.json (match_type 0 EXACT, 1 DEFAULT, 2 ANY). An entity maps each of
its types to a name; ``None`` is the default entity of that type.

Rules written from Kafka's source as read at the time; checked by unit tests
(reference_impl/tests/core/test_quota_entities.py, test_describe_client_quotas.py) and by the
conformance cases of suites/conformance/test_k49_alter_client_quotas.py, which alter quotas and
describe them back; not yet run against a Kafka broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = frozenset({USER, CLIENT_ID, IP})
EXACT, DEFAULT, ANY = 0, 1, 2

Entity = Mapping[str, "str | None"]


class InvalidFilter(ValueError):
    """A filter Kafka refuses: ``error`` is the error name (INVALID_REQUEST, or UNSUPPORTED_VERSION
    for an entity type it does not know), the message the error message."""

    def __init__(self, message: str, error: str = "INVALID_REQUEST") -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True)
class Component:
    entity_type: str
    match_type: int
    match: str | None = None


def check_filter(components: Iterable[Component]) -> list[Component]:
    seen: set[str] = set()
    out: list[Component] = []
    for c in components:
        if not c.entity_type:
            raise InvalidFilter("Invalid empty entity type.")
        if c.entity_type in seen:
            raise InvalidFilter(f"Entity type {c.entity_type} cannot appear more than once in the filter.")
        if c.entity_type not in ENTITY_TYPES:
            raise InvalidFilter(f"Unsupported entity type {c.entity_type}", "UNSUPPORTED_VERSION")
        if c.match_type not in (EXACT, DEFAULT, ANY):
            raise InvalidFilter(f"Unknown match type {c.match_type}")
        if c.match_type == EXACT and c.match is None:
            raise InvalidFilter("Request specified MATCH_TYPE_EXACT, but set match string to null.")
        if c.match_type != EXACT and c.match is not None:
            raise InvalidFilter("Request specified a match string with a DEFAULT or SPECIFIED match type.")
        seen.add(c.entity_type)
        out.append(c)
    if IP in seen and seen & {USER, CLIENT_ID}:
        raise InvalidFilter(
            "Invalid entity filter component combination, IP filter component should not be used"
            " with user or clientId filter component."
        )
    return out


def matches(entity: Entity, components: list[Component], strict: bool) -> bool:
    """Whether ``entity`` is described by the (checked) filter."""
    for c in components:
        if c.entity_type not in entity:
            return False
        name = entity[c.entity_type]
        if c.match_type == EXACT and name != c.match:
            return False
        if c.match_type == DEFAULT and name is not None:
            return False
    if strict:
        return set(entity) <= {c.entity_type for c in components}
    return True
