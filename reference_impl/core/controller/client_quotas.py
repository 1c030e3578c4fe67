"""Client quotas, decided by the controller: AlterClientQuotas (API 49) turned into ClientQuotaRecords.

Kafka's ``ClientQuotaControlManager.alterClientQuotas``
(``metadata/src/main/java/org/apache/kafka/controller/ClientQuotaControlManager.java``; the keys and
their types are ``server-common/src/main/java/org/apache/kafka/server/config/QuotaConfig.java``;
the request's entity a map, ``clients/.../common/requests/AlterClientQuotasRequest.java``), read,
not copied, check for check:

* an entity is a map from entity type to name (``None``: the default entity of that type), so a
  type named twice in one entry keeps its last name (the request's ``entries()`` fills a HashMap);
  results are per distinct entity, not per request entry;
* a key twice in one entry's ops, or an entity already seen earlier in the request, is
  INVALID_REQUEST "Ignoring duplicate entity ..." (Kafka records "Duplicate quota key" and then
  overwrites it with that message); the earlier entry of a repeated entity keeps its records
  although its result is overwritten too, as Kafka's loop does;
* an empty entity, a type other than ``user``/``client-id``/``ip``, an empty (not null) name,
  ``ip`` with ``user`` or ``client-id``, or an ``ip`` name that is no IP address: INVALID_REQUEST;
* ``user``/``client-id`` entities take ``producer_byte_rate`` and ``consumer_byte_rate`` (LONG),
  ``request_percentage`` and ``controller_mutation_rate`` (DOUBLE); ``ip`` entities
  ``connection_creation_rate`` (INT); any other key is "Invalid configuration key"; a value must be
  > 0, and a LONG/INT one integral (within 1e-6) and within the type's range;
* a removal (``remove``) of a key the entity holds writes a removal record, of one it does not
  hold nothing (its key is not checked); a value equal to the current one writes nothing;
* the first failing op fails the whole entity and nothing of it is written; the others still are,
  all records of the request committed together (``ControllerResult.atomicOf``); validate_only
  answers the same and writes nothing (``QuorumController.alterClientQuotas``);
* more than :data:`MAX_RECORDS_PER_USER_OP` records fail the whole request with POLICY_VIOLATION
  (``BoundedList`` and ``EventHandlerExceptionInfo``).

Differences: Kafka accepts an ``ip`` name ``InetAddress.getByName`` resolves, hostnames included;
the reference accepts IP literals only (the controller does no name look-ups).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass

from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..metadata.image import MetadataImage
from ..metadata.records import ClientQuotaRecord, MetadataRecord
from ..quota_entities import CLIENT_ID, IP, USER

MAX_RECORDS_PER_USER_OP = 10_000
"""Kafka's ``QuorumController.MAX_RECORDS_PER_USER_OP``."""
TOO_LARGE_BATCH = "Unable to perform excessively large batch operation."

LONG, INT, DOUBLE = "LONG", "INT", "DOUBLE"
USER_AND_CLIENT_KEYS = {
    "producer_byte_rate": LONG,
    "consumer_byte_rate": LONG,
    "request_percentage": DOUBLE,
    "controller_mutation_rate": DOUBLE,
}
"""``QuotaConfig.userAndClientQuotaConfigs``: key → ConfigDef type."""
IP_KEYS = {"connection_creation_rate": INT}
"""``QuotaConfig.ipConfigs``."""
_LIMITS = {LONG: (float(2**63 - 1), "a LONG"), INT: (float(2**31 - 1), "an INT")}

EntityPairs = tuple[tuple[str, "str | None"], ...]
"""An entity as (type, name) pairs, in the order the request gave its types."""


@dataclass(frozen=True, slots=True)
class Alteration:
    """One request entry: the entity's (type, name) pairs as sent and its ops, (key, value or
    None to remove)."""

    entity: EntityPairs
    ops: tuple[tuple[str, float | None], ...]


Result = tuple[EntityPairs, ErrorCode, "str | None"]
"""(entity, error, message): one distinct entity's outcome."""


def collapse(pairs: EntityPairs) -> EntityPairs:
    """The entity as Kafka's map keeps it: a repeated type keeps its last name, first position."""
    names: dict[str, str | None] = {}
    for entity_type, name in pairs:
        names[entity_type] = name
    return tuple(names.items())


def entity_text(entity: EntityPairs) -> str:
    """``ClientQuotaEntity.toString``."""
    inner = ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def _entity_problem(entity: EntityPairs) -> str | None:
    """``validateEntity`` and ``configKeysForEntityType``: None when the entity may hold quotas."""
    if not entity:
        return "Invalid empty client quota entity"
    for entity_type, name in entity:
        if entity_type not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {entity_type}"
        if name is not None and not name:
            return f"Empty {entity_type} not supported"
    types = {t for t, _ in entity}
    if IP in types:
        if types & {USER, CLIENT_ID}:
            # Kafka's text, its missing space included
            return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        ip = dict(entity)[IP]
        if ip is not None and not _is_ip(ip):
            return f"{ip} is not a valid IP or resolvable host."
    return None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def value_problem(keys: dict[str, str], key: str, value: float) -> str | None:
    """``validateQuotaKeyValue``: None when ``value`` may be set for ``key``. NaN passes, as in
    Kafka (every comparison with it is false)."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == DOUBLE:
        return None
    limit, type_text = _LIMITS[kind]
    if value > limit:
        return f"Proposed value for {key} is too large for {type_text}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def _same(current: float | None, new: float) -> bool:
    """``Objects.equals`` on two Doubles (NaN equals NaN)."""
    if current is None:
        return False
    return current == new or (math.isnan(current) and math.isnan(new))


def _alter_entity(
    image: MetadataImage, entity: EntityPairs, changes: dict[str, float | None]
) -> tuple[list[MetadataRecord], str | None]:
    """``alterClientQuotaEntity``: the entity's records, or the refusal (and no records)."""
    problem = _entity_problem(entity)
    if problem is not None:
        return [], problem
    keys = IP_KEYS if IP in dict(entity) else USER_AND_CLIENT_KEYS
    current = image.client_quotas.get(frozenset(entity), {})
    types = tuple(t for t, _ in entity)
    names = tuple(n for _, n in entity)
    records: list[MetadataRecord] = []
    for key, value in changes.items():
        if value is None:
            if key in current:
                records.append(
                    ClientQuotaRecord(entity_types=types, entity_names=names, key=key, remove=True)
                )
            continue
        problem = value_problem(keys, key, value)
        if problem is not None:
            return [], problem
        if not _same(current.get(key), value):
            records.append(ClientQuotaRecord(entity_types=types, entity_names=names, key=key, value=value))
    return records, None


def decide(
    image: MetadataImage, alterations: Sequence[Alteration]
) -> tuple[list[MetadataRecord], list[Result]]:
    """The records carrying out the request and each distinct entity's result (nothing written
    here). Raises POLICY_VIOLATION when the records would pass :data:`MAX_RECORDS_PER_USER_OP`."""
    records: list[MetadataRecord] = []
    results: dict[frozenset[tuple[str, str | None]], Result] = {}
    for alteration in alterations:
        entity = collapse(alteration.entity)
        key = frozenset(entity)
        changes: dict[str, float | None] = {}
        duplicate_key = False
        for op_key, value in alteration.ops:
            if op_key in changes:
                duplicate_key = True
            else:
                changes[op_key] = value
        if duplicate_key or key in results:
            message = f"Ignoring duplicate entity {entity_text(entity)}"
            results[key] = (results[key][0] if key in results else entity, ErrorCode.invalid_request, message)
            continue
        done, problem = _alter_entity(image, entity, changes)
        if problem is not None:
            results[key] = (entity, ErrorCode.invalid_request, problem)
            continue
        records += done
        if len(records) > MAX_RECORDS_PER_USER_OP:
            raise KafkaError(ErrorCode.policy_violation, TOO_LARGE_BATCH)
        results[key] = (entity, ErrorCode.none, None)
    return records, list(results.values())
