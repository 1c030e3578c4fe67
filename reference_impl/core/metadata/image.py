"""The metadata image: brokers, topics, partitions and configs, as replaying the log yields.

Handlers read the image to answer Metadata, DescribeCluster and
DescribeConfigs; the broker compares images to learn which partitions it must
open, lead, follow or delete. Only :meth:`MetadataImage.apply` changes it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from ..security.acls import Acl, AclStore
from .records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
CLIENT_METRICS_RESOURCE = 16
"""KIP-714's client-metrics subscriptions (Kafka's ``ConfigResource.Type.CLIENT_METRICS``)."""
GROUP_RESOURCE = 32
"""KIP-848/KIP-932's group configs (Kafka's ``ConfigResource.Type.GROUP``)."""
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding_replicas: tuple[int, ...] = ()
    """Replicas a reassignment adds (KIP-455); they join ``replicas`` at once, the ISR once caught up."""
    removing_replicas: tuple[int, ...] = ()
    """Replicas a reassignment drops once every adding replica is in the ISR."""
    directories: tuple[str, ...] = ()
    """KIP-858: each replica's log directory id, parallel to ``replicas`` ("" or missing: unassigned)."""

    def directory_of(self, broker_id: int) -> str:
        """The log directory id the replica on ``broker_id`` reported (AssignReplicasToDirs); "" if none."""
        if broker_id in self.replicas:
            index = self.replicas.index(broker_id)
            if index < len(self.directories):
                return self.directories[index]
        return ""

    @property
    def reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """Where the partition is going: ``replicas`` without those being removed."""
        return tuple(r for r in self.replicas if r not in self.removing_replicas)


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in ("__consumer_offsets", "__transaction_state")


@dataclass
class MetadataImage:
    cluster_id: str
    controller_id: int
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    topic_names: dict[uuid.UUID, str] = field(default_factory=dict)
    broker_configs: dict[str, str] = field(default_factory=dict)
    """The cluster-wide dynamic broker configs (resource name "": DYNAMIC_DEFAULT_BROKER_CONFIG)."""
    node_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Broker id (the resource name) → its own dynamic broker configs (DYNAMIC_BROKER_CONFIG)."""
    client_metrics: dict[str, dict[str, str]] = field(default_factory=dict)
    """Subscription name → its client-metrics configs (KIP-714; a subscription with none is gone)."""
    group_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Group id → its group config overrides (Kafka's ``GroupConfig``; a group with none is gone)."""
    next_producer_id: int = 0
    acls: AclStore = field(default_factory=AclStore)
    """The ACLs (issue 18), which the authorizer reads."""
    scram: dict[tuple[int, str], UserScramCredentialRecord] = field(default_factory=dict)
    """(mechanism type, user) → the user's SCRAM credential (Kafka's ``ScramImage``)."""
    finalized_features: dict[str, int] = field(default_factory=dict)
    """Feature name → finalized level, from FeatureLevelRecords (level 0 is not finalized)."""
    features_epoch: int = -1
    """Offset of the last FeatureLevelRecord (Kafka's finalized-features epoch); -1 before any."""
    client_quotas: dict[frozenset[tuple[str, str | None]], dict[str, float]] = field(default_factory=dict)
    """Client-quota entity ((type, name or None for default) pairs) → quota key → value, from
    ``ClientQuotaRecord`` (Kafka's ``ClientQuotasImage``); an entity with no keys is gone."""
    offset: int = -1
    """Offset of the last record applied (the image's version)."""

    def live_brokers(self) -> set[int]:
        """Registered and unfenced: who may lead or join an ISR."""
        return {b for b, info in self.brokers.items() if not info.fenced}

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        name = self.topic_names.get(topic_id)
        return self.topics.get(name) if name is not None else None

    def apply(self, record: MetadataRecord, offset: int) -> None:
        """Replay one record; records that no longer match the image are ignored, as KRaft does."""
        self.offset = offset
        match record:
            case TopicRecord(name=name, topic_id=topic_id):
                self.topics[name] = TopicInfo(name, topic_id)
                self.topic_names[topic_id] = name
            case PartitionRecord():
                topic = self.topic_by_id(record.topic_id)
                if topic is not None:
                    topic.partitions[record.partition] = PartitionInfo(
                        record.partition,
                        record.replicas,
                        record.isr,
                        record.leader,
                        record.leader_epoch,
                        record.partition_epoch,
                        record.adding_replicas,
                        record.removing_replicas,
                        record.directories,
                    )
            case PartitionChangeRecord():
                self._apply_change(record)
            case ConfigRecord(resource_type=rtype, resource_name=rname, name=name, value=value):
                if rtype == TOPIC_RESOURCE:
                    topic = self.topics.get(rname)
                    target = topic.configs if topic is not None else None
                elif rtype in (CLIENT_METRICS_RESOURCE, GROUP_RESOURCE) or rname:
                    named = {
                        CLIENT_METRICS_RESOURCE: self.client_metrics,
                        GROUP_RESOURCE: self.group_configs,
                    }.get(rtype, self.node_configs)  # a broker's own configs (resource name: its id)
                    target = named.setdefault(rname, {})
                    if value is None:
                        target.pop(name, "")
                        if not target:
                            del named[rname]
                        target = None
                else:
                    target = self.broker_configs
                if target is not None:
                    if value is None:
                        target.pop(name, "")
                    else:
                        target[name] = value
            case ClientQuotaRecord():
                entity = frozenset(zip(record.entity_types, record.entity_names, strict=True))
                quotas = self.client_quotas.setdefault(entity, {})
                if record.remove:
                    quotas.pop(record.key, None)
                else:
                    quotas[record.key] = record.value
                if not quotas:
                    del self.client_quotas[entity]
            case RemoveTopicRecord(topic_id=topic_id):
                removed = self.topic_names.pop(topic_id, None)
                if removed is not None:
                    self.topics.pop(removed, None)
            case RegisterBrokerRecord():
                self.brokers[record.broker_id] = BrokerInfo(
                    record.broker_id, record.host, record.port, record.rack, record.fenced
                )
            case UnregisterBrokerRecord(broker_id=broker_id):
                self.brokers.pop(broker_id, None)
            case ProducerIdsRecord(next_producer_id=next_id):
                self.next_producer_id = max(self.next_producer_id, next_id)
            case FeatureLevelRecord(name=name, feature_level=level):
                self.features_epoch = offset
                if level > 0:
                    self.finalized_features[name] = level
                else:
                    self.finalized_features.pop(name, None)
            case AccessControlEntryRecord():
                self.acls.add(
                    record.id,
                    Acl.of(
                        record.resource_type,
                        record.resource_name,
                        record.pattern_type,
                        record.principal,
                        record.host,
                        record.operation,
                        record.permission_type,
                    ),
                )
            case RemoveAccessControlEntryRecord(id=acl_id):
                self.acls.remove(acl_id)
            case UserScramCredentialRecord(name=name, mechanism=mechanism):
                self.scram[(mechanism, name)] = record
            case RemoveUserScramCredentialRecord(name=name, mechanism=mechanism):
                self.scram.pop((mechanism, name), None)

    def _apply_change(self, record: PartitionChangeRecord) -> None:
        topic = self.topic_by_id(record.topic_id)
        if topic is None or record.partition not in topic.partitions:
            return
        old = topic.partitions[record.partition]
        new = old
        if record.replicas is not None:
            dirs = tuple(old.directory_of(r) for r in record.replicas)  # each replica keeps its directory
            new = replace(new, replicas=record.replicas, directories=dirs)
        if record.directories is not None:
            new = replace(new, directories=record.directories)
        if record.isr is not None:
            new = replace(new, isr=record.isr)
        if record.adding_replicas is not None:
            new = replace(new, adding_replicas=record.adding_replicas)
        if record.removing_replicas is not None:
            new = replace(new, removing_replicas=record.removing_replicas)
        if record.leader is not None and record.leader != old.leader:
            new = replace(new, leader=record.leader, leader_epoch=old.leader_epoch + 1)
        topic.partitions[record.partition] = replace(new, partition_epoch=old.partition_epoch + 1)
