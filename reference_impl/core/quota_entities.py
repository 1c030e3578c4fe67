"""Client quota entities and DescribeClientQuotas filters, as Kafka matches them.

Read from Kafka (not copied): metadata/src/main/java/org/apache/kafka/image/ClientQuotasImage.java
(``describe``: a filter component per entity type, EXACT / DEFAULT / ANY match types, ``strict``
asks for entities with no other entity types, a type given twice, an EXACT without a name, an
unknown type, or ``ip`` mixed with ``user``/``client-id`` are INVALID_REQUEST) and
DescribeClientQuotasRequest.json (match_type 0 EXACT, 1 DEFAULT, 2 ANY). An entity maps each of
its types to a name; ``None`` is the default entity of that type.

Rules written from Kafka's source as read at the time; checked by unit tests, not yet by a
conformance run against Kafka (issue 20 remainder: the handlers 48/49 and ClientQuotaRecord).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = frozenset({USER, CLIENT_ID, IP})
EXACT, DEFAULT, ANY = 0, 1, 2

Entity = Mapping[str, "str | None"]


class InvalidFilter(ValueError):
    """A filter Kafka refuses with INVALID_REQUEST; the message is the error message."""


@dataclass(frozen=True)
class Component:
    entity_type: str
    match_type: int
    match: str | None = None


def check_filter(components: Iterable[Component]) -> list[Component]:
    seen: set[str] = set()
    out: list[Component] = []
    for c in components:
        if c.entity_type not in ENTITY_TYPES:
            raise InvalidFilter(f"Custom entity type '{c.entity_type}' not supported")
        if c.entity_type in seen:
            raise InvalidFilter(f"Entity type {c.entity_type} cannot appear more than once in the filter.")
        if c.match_type not in (EXACT, DEFAULT, ANY):
            raise InvalidFilter(f"Unknown match type {c.match_type}")
        if c.match_type == EXACT and c.match is None:
            raise InvalidFilter("Request specified MATCH_TYPE_EXACT but no match string")
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
