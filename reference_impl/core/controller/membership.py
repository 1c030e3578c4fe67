"""UnregisterBroker (API 64): the records that remove a broker's registration, and the answer.

Kafka's ``ReplicationControlManager.unregisterBroker``
(metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java): a broker id
with no registration is BROKER_ID_NOT_REGISTERED; otherwise ``handleBrokerUnregistered`` first
removes the broker from every ISR it is in (moving the leadership of the partitions it led to the
next eligible replica, as fencing does) and then writes an ``UnregisterBrokerRecord`` naming the
registration's epoch. The broker stays in the replica lists that name it (an operator reassigns
them away first, as ``kafka-cluster remove-broker`` expects); being unregistered, it is neither
live nor placed on by new topics or partitions, and Metadata no longer lists it.
"""

from __future__ import annotations

from collections.abc import Set

from kio.schema.errors import ErrorCode

from reference_impl.core.metadata.image import MetadataImage
from reference_impl.core.metadata.records import MetadataRecord, UnregisterBrokerRecord

from . import messages as cm
from .elections import changes_removing_broker
from .records import ControllerImage


def unregister_broker(
    image: MetadataImage,
    body: cm.UnregisterBrokerRequest,
    live: Set[int],
    broker_epoch: int,
    unclean_default: bool,
) -> tuple[list[MetadataRecord], cm.UnregisterBrokerResponse]:
    """The records UnregisterBroker writes and its answer; ``broker_epoch`` is the registration's
    (the offset of its ``RegisterBrokerRecord``; -1 where the image keeps no epochs)."""
    broker_id = body.broker_id
    if broker_id not in image.brokers:
        # Kafka's ControllerApis.handleUnregisterBroker sets the error code alone (no message).
        return [], cm.UnregisterBrokerResponse(
            correlation_id=body.correlation_id, error_code=ErrorCode.broker_id_not_registered
        )
    records: list[MetadataRecord] = list(
        changes_removing_broker(_as_controller_image(image), broker_id, live, unclean_default)
    )
    records.append(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker_epoch))
    return records, cm.UnregisterBrokerResponse(correlation_id=body.correlation_id, error_code=ErrorCode.none)


def _as_controller_image(image: MetadataImage) -> ControllerImage:
    """``changes_removing_broker`` reads topics and broker configs only, which every image has."""
    return image  # type: ignore[return-value]
