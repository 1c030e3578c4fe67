"""Metadata records the quorum controller adds, and the image that replays them.

KRaft fences and unfences brokers with ``BrokerRegistrationChangeRecord``
(fenced, inControlledShutdown) and gives every registration a broker epoch
(the offset of its ``RegisterBrokerRecord``). The shared record module
(:mod:`reference_impl.core.metadata.records`) does not have these yet, so
they live here with a codec that handles both sets, and
:class:`ControllerImage` extends :class:`MetadataImage` to replay them. Folding
them into the shared module later changes no behaviour.

A snapshot of the image is itself a list of records (as KRaft's snapshots
are): replaying it into an empty image rebuilds the same image.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from reference_impl.core.metadata.image import (
    BROKER_RESOURCE,
    CLIENT_METRICS_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    MetadataImage,
)
from reference_impl.core.metadata.records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
    MetadataRecordError,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    decode,
    encode,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecord:
    """KRaft's record of the same name: a change of a registered broker's fencing or shutdown state;
    ``None`` fields are unchanged. ``broker_epoch`` names the registration it applies to."""

    type_name: ClassVar[str] = "BrokerRegistrationChangeRecord"
    broker_id: int
    broker_epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None


ControllerRecord = MetadataRecord | BrokerRegistrationChangeRecord


def encode_record(record: ControllerRecord) -> bytes:
    if isinstance(record, BrokerRegistrationChangeRecord):
        body = {
            "type": record.type_name,
            "broker_id": record.broker_id,
            "broker_epoch": record.broker_epoch,
            "fenced": record.fenced,
            "in_controlled_shutdown": record.in_controlled_shutdown,
        }
        return json.dumps(body, sort_keys=True).encode()
    return encode(record)


def decode_record(raw: bytes) -> ControllerRecord:
    try:
        peek = json.loads(raw)
    except ValueError as exc:
        raise MetadataRecordError(f"not a metadata record: {exc}") from None
    if isinstance(peek, dict) and peek.get("type") == BrokerRegistrationChangeRecord.type_name:
        try:
            return BrokerRegistrationChangeRecord(
                broker_id=int(peek["broker_id"]),
                broker_epoch=int(peek["broker_epoch"]),
                fenced=peek.get("fenced"),
                in_controlled_shutdown=peek.get("in_controlled_shutdown"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MetadataRecordError(f"not a broker registration change: {exc}") from None
    return decode(raw)


@dataclass
class ControllerImage(MetadataImage):
    """The metadata image plus what the controller needs about registrations."""

    broker_epochs: dict[int, int] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)

    def apply(self, record: Any, offset: int) -> None:
        if isinstance(record, BrokerRegistrationChangeRecord):
            self.offset = offset
            broker = self.brokers.get(record.broker_id)
            if broker is None:
                return
            self.broker_epochs[record.broker_id] = record.broker_epoch
            if record.fenced is not None:
                self.brokers[record.broker_id] = replace(broker, fenced=record.fenced)
            if record.in_controlled_shutdown is True:
                self.shutting_down.add(record.broker_id)
            elif record.in_controlled_shutdown is False:
                self.shutting_down.discard(record.broker_id)
            return
        if isinstance(record, UnregisterBrokerRecord):
            # Kafka's ClusterControlManager.replay refuses a record naming another registration
            # (a broker that registered again since): ignored here, as records that no longer
            # match the image are. Epoch -1 is a one-node controller's (its image keeps no epochs).
            known = self.broker_epochs.get(record.broker_id)
            if known is not None and record.broker_epoch >= 0 and known != record.broker_epoch:
                self.offset = offset
                return
            self.broker_epochs.pop(record.broker_id, None)
            self.shutting_down.discard(record.broker_id)
        super().apply(record, offset)
        if isinstance(record, RegisterBrokerRecord):
            self.broker_epochs[record.broker_id] = offset
            self.shutting_down.discard(record.broker_id)

    def live_brokers(self) -> set[int]:
        """Registered, unfenced and not shutting down: who may lead or join an ISR."""
        return {b for b, info in self.brokers.items() if not info.fenced and b not in self.shutting_down}

    def copy(self) -> ControllerImage:
        return copy.deepcopy(self)

    def summary(self) -> dict[str, Any]:
        """A comparable, readable view (tests compare the images of different nodes)."""
        return {
            "brokers": {b: (i.fenced, self.broker_epochs.get(b)) for b, i in sorted(self.brokers.items())},
            "shutting_down": sorted(self.shutting_down),
            "topics": {
                name: {
                    p: (
                        info.leader,
                        info.leader_epoch,
                        info.partition_epoch,
                        info.isr,
                        info.replicas,
                        info.adding_replicas,
                        info.removing_replicas,
                    )
                    for p, info in sorted(topic.partitions.items())
                }
                for name, topic in sorted(self.topics.items())
            },
        }


def image_records(image: ControllerImage) -> list[ControllerRecord]:
    """Records that rebuild ``image`` when replayed into an empty one (a snapshot's contents)."""
    out: list[ControllerRecord] = []
    for broker_id, broker in sorted(image.brokers.items()):
        out.append(
            RegisterBrokerRecord(
                broker_id=broker_id,
                host=broker.host,
                port=broker.port,
                rack=broker.rack,
                fenced=broker.fenced,
            )
        )
        out.append(
            BrokerRegistrationChangeRecord(
                broker_id=broker_id,
                broker_epoch=image.broker_epochs.get(broker_id, -1),
                in_controlled_shutdown=broker_id in image.shutting_down,
            )
        )
    for name, value in sorted(image.broker_configs.items()):
        out.append(ConfigRecord(resource_type=BROKER_RESOURCE, resource_name="", name=name, value=value))
    for rtype, named in (
        (BROKER_RESOURCE, image.node_configs),
        (CLIENT_METRICS_RESOURCE, image.client_metrics),
        (GROUP_RESOURCE, image.group_configs),
    ):
        for resource, configs in sorted(named.items()):
            for name, value in sorted(configs.items()):
                out.append(ConfigRecord(resource_type=rtype, resource_name=resource, name=name, value=value))
    for topic_name, topic in sorted(image.topics.items()):
        out.append(TopicRecord(name=topic_name, topic_id=topic.topic_id))
        for name, value in sorted(topic.configs.items()):
            out.append(
                ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=topic_name, name=name, value=value)
            )
        for p, info in sorted(topic.partitions.items()):
            out.append(
                PartitionRecord(
                    topic_id=topic.topic_id,
                    partition=p,
                    replicas=info.replicas,
                    isr=info.isr,
                    leader=info.leader,
                    leader_epoch=info.leader_epoch,
                    partition_epoch=info.partition_epoch,
                    adding_replicas=info.adding_replicas,
                    removing_replicas=info.removing_replicas,
                    directories=info.directories,
                )
            )
    out.extend(record for _key, record in sorted(image.scram.items()))
    out.extend(
        FeatureLevelRecord(name=name, feature_level=level)
        for name, level in sorted(image.finalized_features.items())
    )
    for entity, quotas in image.client_quotas.items():
        pairs = sorted(entity, key=lambda pair: pair[0])
        types, names = tuple(t for t, _ in pairs), tuple(n for _, n in pairs)
        for quota_key, rate in sorted(quotas.items()):
            out.append(ClientQuotaRecord(entity_types=types, entity_names=names, key=quota_key, value=rate))
    if image.next_producer_id:
        out.append(ProducerIdsRecord(broker_id=-1, next_producer_id=image.next_producer_id))
    for acl_id, acl in image.acls:
        out.append(AccessControlEntryRecord.of(acl_id, acl))
    return out


def encode_snapshot(image: ControllerImage) -> bytes:
    return b"\n".join(encode_record(r) for r in image_records(image))


def decode_snapshot(data: bytes, cluster_id: str, end_offset: int) -> ControllerImage:
    image = ControllerImage(cluster_id=cluster_id, controller_id=-1)
    for line in data.split(b"\n"):
        if line:
            image.apply(decode_record(line), end_offset - 1)
    return image
