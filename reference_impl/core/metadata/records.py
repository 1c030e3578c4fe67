"""Metadata records (KRaft's ``TopicRecord``, ``PartitionRecord``, ...) and their JSON codec.

Kafka encodes these with its own generated schemas; we keep the same record
types and fields but store each as a JSON value, so ``dump-log`` of the
metadata log is readable by a person. Records are immutable values.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..security.acls import Acl

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)
"""Kafka's ``Uuid.METADATA_TOPIC_ID``: the metadata partition's topic id on Fetch v13+."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRecord:
    type_name: ClassVar[str] = "TopicRecord"
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecord:
    type_name: ClassVar[str] = "PartitionRecord"
    topic_id: uuid.UUID
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    directories: tuple[str, ...] = ()
    """KIP-858: the log directory id of each replica, parallel to ``replicas`` ("" unassigned)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecord:
    """A change of leader, ISR or replicas; ``None`` fields are unchanged (as in KRaft).

    ``adding_replicas``/``removing_replicas`` are a reassignment in progress (KIP-455):
    ``replicas`` then lists the target replicas followed by those being removed."""

    type_name: ClassVar[str] = "PartitionChangeRecord"
    topic_id: uuid.UUID
    partition: int
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    directories: tuple[str, ...] | None = None
    """KIP-858: every replica's log directory id, parallel to the (new) replicas (AssignReplicasToDirs)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigRecord:
    """Set (value) or delete (value None) one config of a resource (2 = topic, 4 = broker)."""

    type_name: ClassVar[str] = "ConfigRecord"
    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientQuotaRecord:
    """Set (``remove`` false) or remove one quota key of a client-quota entity (Kafka's
    ``ClientQuotaRecord``, metadata record type 14,
    metadata/src/main/resources/common/metadata/ClientQuotaRecord.json). Kafka's ``entity`` list
    of (entityType, entityName) is kept as two parallel tuples so the JSON codec stays flat; an
    entity name ``None`` is the default entity of that type."""

    type_name: ClassVar[str] = "ClientQuotaRecord"
    entity_types: tuple[str, ...]
    entity_names: tuple[str | None, ...]
    key: str
    value: float = 0.0
    remove: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTopicRecord:
    type_name: ClassVar[str] = "RemoveTopicRecord"
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecord:
    type_name: ClassVar[str] = "RegisterBrokerRecord"
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    fenced: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRecord:
    """The registration of ``broker_id`` made at ``broker_epoch`` is gone (Kafka's
    ``UnregisterBrokerRecord``, metadata record type 1,
    metadata/src/main/resources/common/metadata/UnregisterBrokerRecord.json; replayed by
    ``ClusterControlManager.replay(UnregisterBrokerRecord)``, which removes the registration)."""

    type_name: ClassVar[str] = "UnregisterBrokerRecord"
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdsRecord:
    """The next block of producer ids starts at ``next_producer_id`` (survives restarts)."""

    type_name: ClassVar[str] = "ProducerIdsRecord"
    broker_id: int
    next_producer_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureLevelRecord:
    """Kafka's type-12 record (metadata/.../common/metadata/FeatureLevelRecord.json): ``name`` is
    finalized at ``feature_level``; level 0 removes it from the finalized features."""

    type_name: ClassVar[str] = "FeatureLevelRecord"
    name: str
    feature_level: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryRecord:
    """One ACL (Kafka's ``AccessControlEntryRecord``, metadata record type 18,
    metadata/src/main/resources/common/metadata/AccessControlEntryRecord.json); codes as
    ``AclOperation``, ``AclPermissionType``, ``ResourceType``, ``PatternType``."""

    type_name: ClassVar[str] = "AccessControlEntryRecord"
    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def of(cls, acl_id: uuid.UUID, acl: Acl) -> AccessControlEntryRecord:
        """The record that keeps ``acl`` under ``acl_id``."""
        return cls(
            id=acl_id,
            resource_type=int(acl.resource_type),
            resource_name=acl.resource_name,
            pattern_type=int(acl.pattern_type),
            principal=acl.principal,
            host=acl.host,
            operation=int(acl.operation),
            permission_type=int(acl.permission),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveAccessControlEntryRecord:
    """The ACL ``id`` is gone (Kafka's ``RemoveAccessControlEntryRecord``, type 19)."""

    type_name: ClassVar[str] = "RemoveAccessControlEntryRecord"
    id: uuid.UUID


SCRAM_MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
"""Kafka's ``org.apache.kafka.clients.admin.ScramMechanism`` types (0 is UNKNOWN)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UserScramCredentialRecord:
    """KRaft's record of the same name: a user's SCRAM credential for one mechanism (1 = SHA-256,
    2 = SHA-512), what the server keeps of a password (salt, stored key, server key, iterations)."""

    type_name: ClassVar[str] = "UserScramCredentialRecord"
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveUserScramCredentialRecord:
    type_name: ClassVar[str] = "RemoveUserScramCredentialRecord"
    name: str
    mechanism: int


MetadataRecord = (
    TopicRecord
    | PartitionRecord
    | PartitionChangeRecord
    | ConfigRecord
    | ClientQuotaRecord
    | RemoveTopicRecord
    | RegisterBrokerRecord
    | UnregisterBrokerRecord
    | ProducerIdsRecord
    | FeatureLevelRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
)

_TYPES: dict[str, type[Any]] = {
    cls.type_name: cls
    for cls in (
        TopicRecord,
        PartitionRecord,
        PartitionChangeRecord,
        ConfigRecord,
        ClientQuotaRecord,
        RemoveTopicRecord,
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        ProducerIdsRecord,
        FeatureLevelRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
        UserScramCredentialRecord,
        RemoveUserScramCredentialRecord,
    )
}
_BYTES_FIELDS = frozenset({"salt", "stored_key", "server_key"})
"""Byte fields, kept as base64 text in the JSON value."""


class MetadataRecordError(ValueError):
    """Bytes that are not a metadata record this version knows."""


def _plain(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def encode(record: MetadataRecord) -> bytes:
    body = {k: _plain(v) for k, v in asdict(record).items()}
    return json.dumps({"type": record.type_name, **body}, sort_keys=True).encode()


def decode(raw: bytes) -> MetadataRecord:
    try:
        data = json.loads(raw)
        cls = _TYPES[data.pop("type")]
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            value = data[f.name]
            if f.name in ("topic_id", "id"):
                value = uuid.UUID(value)
            elif f.name in _BYTES_FIELDS:
                value = base64.b64decode(value, validate=True)
            elif isinstance(value, list):
                value = tuple(value)
            kwargs[f.name] = value
        record: MetadataRecord = cls(**kwargs)
        return record
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise MetadataRecordError(f"not a metadata record: {exc}") from None
