"""The wire codes of Kafka's ACL APIs (CreateAcls, DescribeAcls, DeleteAcls, the authorized-operations
bitfields), shared by the broker's authorizer and the harness's tools and suites.

Kafka's ``clients/src/main/java/org/apache/kafka/common/acl/AclOperation.java``,
``AclPermissionType.java``, ``common/resource/ResourceType.java`` and ``PatternType.java``.
"""

from __future__ import annotations

from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def parse_code(kind: type[IntEnum], text: str) -> int:
    """A code from its name (any case, ``-`` or ``_``) or its number; ValueError otherwise."""
    value = text.strip().upper().replace("-", "_")
    if value.lstrip("-").isdigit():
        number = int(value)
        if number in kind._value2member_map_:
            return number
    elif value in kind.__members__:
        return int(kind[value])
    raise ValueError(f"{text!r} is not a {kind.__name__}: one of {', '.join(kind.__members__)}")
