"""ACLs and the authorizer, sans-IO, as Kafka's ``StandardAuthorizer`` decides (issue 18).

Kafka's sources this follows:

* the codes: ``clients/src/main/java/org/apache/kafka/common/acl/AclOperation.java``,
  ``AclPermissionType.java``, ``common/resource/ResourceType.java``, ``PatternType.java``;
* the decision: ``metadata/src/main/java/org/apache/kafka/metadata/authorizer/StandardAuthorizerData.java``
  (``authorize``, ``findAclRule``, ``checkSection``, ``findResult``): a super user is allowed; else
  the ACLs whose pattern matches the resource (LITERAL: the same name, or the LITERAL wildcard
  ``*``; PREFIXED: a prefix of the name) are looked at; one that names the principal (or
  ``User:*``) and the host (or ``*``) decides: a DENY for the operation (or ALL) wins over any
  ALLOW; an ALLOW for the operation, for ALL, or one that implies it (DESCRIBE is implied by READ,
  WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS; implication only for ALLOW) allows.
  When no ACL at all matches the resource, ``allow.everyone.if.no.acl.found`` decides; when some do
  but none applies, the answer is DENY;
* filters: ``common/acl/AclBindingFilter.java``, ``common/resource/ResourcePatternFilter.java``
  (ANY matches every pattern type with an equal name, MATCH the patterns that would apply to the
  name: LITERAL equal or ``*``, PREFIXED a prefix);
* the checks a new ACL passes: ``metadata/.../controller/AclControlManager.java``
  (``validateNewAcl``) and ``core/src/main/scala/kafka/server/AclApis.scala`` (the CLUSTER
  resource is named ``kafka-cluster``, no empty names);
* the operations each resource type supports (the authorized-operations bitfields):
  ``clients/src/main/java/org/apache/kafka/common/acl/AclOperation.java`` with
  ``core/src/main/scala/kafka/security/authorizer/AclEntry.scala`` (``supportedOperations``);
* ``authorizeByResourceType`` (``clients/.../server/authorizer/Authorizer.java``), which
  InitProducerId without a transactional id uses (KIP-679: WRITE on any topic is enough).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum

from reference_impl import defects
from reference_impl.protocol.acl_codes import Operation, PatternType, Permission, ResourceType

AUTHORIZER_CLASS = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
MAX_ACLS = 100_000
"""The reference's bound on the ACLs a cluster holds (CreateAcls beyond it: INVALID_REQUEST)."""
NOT_REQUESTED = -2147483648
"""``Integer.MIN_VALUE``: the authorized-operations field when the client did not ask for it."""


_O = Operation
IMPLIES_DESCRIBE = frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER})
IMPLIES_DESCRIBE_CONFIGS = frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})
SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        _O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS
    ),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE),
    ResourceType.CLUSTER: (
        _O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
        _O.ALTER, _O.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}  # fmt: skip


def _enum(cls: type[IntEnum], value: int) -> int:
    """Unknown codes read as UNKNOWN (Kafka's ``fromCode``)."""
    return value if value in cls._value2member_map_ else 0


def _decoded(
    resource_type: int, pattern: int, op: int, permission: int
) -> tuple[ResourceType, PatternType, Operation, Permission]:
    """The wire's four codes of a binding or a filter as enums, unknown codes as UNKNOWN."""
    return (
        ResourceType(_enum(ResourceType, resource_type)),
        PatternType(_enum(PatternType, pattern)),
        Operation(_enum(Operation, op)),
        Permission(_enum(Permission, permission)),
    )


@dataclass(frozen=True, slots=True)
class Acl:
    """One ACL binding (Kafka's ``StandardAcl``): a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @classmethod
    def of(
        cls, resource_type: int, name: str, pattern: int, principal: str, host: str, op: int, permission: int
    ) -> Acl:
        kind, pattern_type, operation, permitted = _decoded(resource_type, pattern, op, permission)
        return cls(kind, name, pattern_type, principal, host, operation, permitted)

    def problem(self) -> str | None:
        """Why Kafka refuses to create this ACL (INVALID_REQUEST), or None."""
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid patternType {self.pattern_type.name}"
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            return f"Invalid resourceType {self.resource_type.name}"
        if self.operation in (Operation.UNKNOWN, Operation.ANY):
            return f"Invalid operation {self.operation.name}"
        if self.permission in (Permission.UNKNOWN, Permission.ANY):
            return f"Invalid permissionType {self.permission.name}"
        if not self.resource_name:
            return "Invalid empty resource name specified"
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            return f"Could not parse principal from `{self.principal}` (no colon between type and name)"
        if not self.host:
            return "Invalid empty host specified"
        return None


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's ``AclBindingFilter``: None fields and ANY codes match everything."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    @classmethod
    def of(
        cls,
        resource_type: int,
        name: str | None,
        pattern: int,
        principal: str | None,
        host: str | None,
        op: int,
        permission: int,
    ) -> AclFilter:
        kind, pattern_type, operation, permitted = _decoded(resource_type, pattern, op, permission)
        return cls(kind, name, pattern_type, principal, host, operation, permitted)

    def problem(self) -> str | None:
        """Why Kafka refuses this filter (INVALID_REQUEST): an UNKNOWN code anywhere."""
        for label, value in (
            ("resource type", self.resource_type),
            ("pattern type", self.pattern_type),
            ("operation", self.operation),
            ("permission type", self.permission),
        ):
            if value == 0:
                return f"Filter contains UNKNOWN {label}"
        return None

    def matches(self, acl: Acl) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != Operation.ANY and self.operation != acl.operation:
            return False
        return self.permission == Permission.ANY or self.permission == acl.permission

    def _pattern_matches(self, acl: Acl) -> bool:
        name = self.resource_name
        if self.pattern_type == PatternType.MATCH and name is not None:
            if acl.pattern_type == PatternType.LITERAL:
                return acl.resource_name in (name, WILDCARD)
            return acl.pattern_type == PatternType.PREFIXED and name.startswith(acl.resource_name)
        if (
            self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
            and self.pattern_type != acl.pattern_type
        ):
            return False
        return name is None or name == acl.resource_name


class AclStore:
    """The ACLs of the metadata image, by id, indexed for the authorizer: LITERAL by (type, name),
    PREFIXED by (type, prefix), so a check looks at the name, ``*`` and the name's prefixes only."""

    def __init__(self) -> None:
        self.by_id: dict[uuid.UUID, Acl] = {}
        self._literal: dict[tuple[ResourceType, str], dict[uuid.UUID, Acl]] = {}
        self._prefixed: dict[tuple[ResourceType, str], dict[uuid.UUID, Acl]] = {}
        self._prefix_lengths: dict[ResourceType, dict[int, int]] = {}
        """Per resource type, the lengths of its PREFIXED names (with how many), so a check looks up
        only prefixes of those lengths: a 32 KiB group id costs as many lookups as there are
        lengths, not 32,768 slices."""

    def __len__(self) -> int:
        return len(self.by_id)

    def __iter__(self) -> Iterator[tuple[uuid.UUID, Acl]]:
        return iter(sorted(self.by_id.items(), key=lambda kv: str(kv[0])))

    def _index(self, acl: Acl) -> dict[tuple[ResourceType, str], dict[uuid.UUID, Acl]]:
        return self._prefixed if acl.pattern_type == PatternType.PREFIXED else self._literal

    def add(self, acl_id: uuid.UUID, acl: Acl) -> None:
        self.remove(acl_id)
        self.by_id[acl_id] = acl
        self._index(acl).setdefault((acl.resource_type, acl.resource_name), {})[acl_id] = acl
        if acl.pattern_type == PatternType.PREFIXED:
            lengths = self._prefix_lengths.setdefault(acl.resource_type, {})
            lengths[len(acl.resource_name)] = lengths.get(len(acl.resource_name), 0) + 1

    def remove(self, acl_id: uuid.UUID) -> Acl | None:
        acl = self.by_id.pop(acl_id, None)
        if acl is not None:
            index = self._index(acl)
            key = (acl.resource_type, acl.resource_name)
            bucket = index.get(key, {})
            bucket.pop(acl_id, None)
            if not bucket:
                index.pop(key, None)
            if acl.pattern_type == PatternType.PREFIXED:
                lengths = self._prefix_lengths.get(acl.resource_type, {})
                left = lengths.get(len(acl.resource_name), 1) - 1
                if left > 0:
                    lengths[len(acl.resource_name)] = left
                else:
                    lengths.pop(len(acl.resource_name), None)
        return acl

    def find(self, acl: Acl) -> uuid.UUID | None:
        """The id of an identical ACL already held, if any."""
        for acl_id, held in self._index(acl).get((acl.resource_type, acl.resource_name), {}).items():
            if held == acl:
                return acl_id
        return None

    def matching(self, rtype: ResourceType, name: str) -> Iterator[Acl]:
        """Every ACL whose pattern applies to resource ``rtype:name``."""
        yield from self._literal.get((rtype, name), {}).values()
        if name != WILDCARD:
            yield from self._literal.get((rtype, WILDCARD), {}).values()
        for length in sorted(self._prefix_lengths.get(rtype, {}), reverse=True):
            if 0 < length <= len(name):
                yield from self._prefixed.get((rtype, name[:length]), {}).values()

    def of_type(self, rtype: ResourceType) -> Iterator[Acl]:
        for index in (self._literal, self._prefixed):
            for (kind, _), bucket in index.items():
                if kind == rtype:
                    yield from bucket.values()


def _applies(acl: Acl, principal: str, host: str, op: Operation) -> Permission | None:
    """``findResult``: the ACL's permission if it applies to this principal, host and operation."""
    if acl.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != Operation.ALL:
        if acl.permission == Permission.ALLOW:
            if op == Operation.DESCRIBE:
                if acl.operation not in IMPLIES_DESCRIBE:
                    return None
            elif op == Operation.DESCRIBE_CONFIGS:
                if acl.operation not in IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif op != acl.operation:
                return None
        elif op != acl.operation:
            return None
    return acl.permission


@dataclass(frozen=True, slots=True)
class Authorizer:
    """``StandardAuthorizer`` over an :class:`AclStore` (the metadata image's)."""

    super_users: frozenset[str]
    allow_if_no_acl: bool = False

    def authorize(
        self, acls: AclStore, principal: str, host: str, op: Operation, rtype: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        found = allowed = False
        for acl in acls.matching(rtype, name):
            found = True
            result = _applies(acl, principal, host, op)
            if result == Permission.DENY:
                if defects.enabled(defects.ALLOW_BEATS_DENY):
                    continue
                return False
            if result == Permission.ALLOW:
                allowed = True
        if allowed:
            return True
        return self.allow_if_no_acl and not found

    def authorized_operations(
        self, acls: AclStore, principal: str, host: str, rtype: ResourceType, name: str
    ) -> int:
        """The bitfield of the operations ``rtype`` supports that are allowed (bit n: code n)."""
        bits = 0
        for op in SUPPORTED_OPERATIONS.get(rtype, ()):
            if self.authorize(acls, principal, host, op, rtype, name):
                bits |= 1 << int(op)
        return bits

    def authorize_by_type(
        self, acls: AclStore, principal: str, host: str, op: Operation, rtype: ResourceType
    ) -> bool:
        """``Authorizer.authorizeByResourceType``: may the principal do ``op`` on some resource of
        ``rtype``? A DENY on the LITERAL ``*`` refuses; an ALLOW pattern no DENY pattern covers (the
        same LITERAL name, or a PREFIXED prefix of it) allows; no ACL of the type at all falls to
        ``allow.everyone.if.no.acl.found``."""
        if principal in self.super_users:
            return True
        denied_literal: set[str] = set()
        denied_prefix: set[str] = set()
        allowed: list[Acl] = []
        any_acl = False
        for acl in acls.of_type(rtype):
            any_acl = True
            if acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.host != WILDCARD and acl.host != host:
                continue
            if acl.operation not in (op, Operation.ALL):
                continue
            if acl.permission == Permission.DENY:
                (denied_prefix if acl.pattern_type == PatternType.PREFIXED else denied_literal).add(
                    acl.resource_name
                )
            else:
                allowed.append(acl)
        if WILDCARD in denied_literal:
            return False
        for acl in allowed:
            name = acl.resource_name
            if any(name.startswith(p) for p in denied_prefix):
                continue
            if acl.pattern_type == PatternType.LITERAL and name in denied_literal:
                continue
            return True
        return self.allow_if_no_acl and not any_acl


def parse_super_users(value: str) -> frozenset[str]:
    """``super.users``: semicolon-separated principals (``User:admin;User:broker``)."""
    return frozenset(p.strip() for p in value.split(";") if p.strip())


def authorizer_from_config(config: Mapping[str, str]) -> Authorizer | None:
    """The node's authorizer: None unless ``authorizer.class.name`` names Kafka's StandardAuthorizer
    (an empty value, Kafka's default, means no authorization; another class is a config error the
    caller reports)."""
    name = (config.get("authorizer.class.name") or "").strip()
    if not name:
        return None
    if name != AUTHORIZER_CLASS:
        raise ValueError(f"authorizer.class.name={name}: the reference broker serves only {AUTHORIZER_CLASS}")
    allow = (config.get("allow.everyone.if.no.acl.found") or "false").strip().lower() == "true"
    return Authorizer(parse_super_users(config.get("super.users") or ""), allow)
