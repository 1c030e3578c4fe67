"""The first checks a quorum or controller request from the wire passes, before any state sees it.

Kafka's ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java`` answers a Vote,
BeginQuorumEpoch, EndQuorumEpoch, Fetch or FetchSnapshot whose cluster id is present and not this
cluster's with INCONSISTENT_CLUSTER_ID (``hasValidClusterId``), and one that does not name exactly
the metadata partition with INVALID_REQUEST (``hasValidTopicPartition``: one topic, one partition,
``__cluster_metadata``-0, by topic id on Fetch v13+). Its controller refuses a BrokerRegistration
for another cluster id with INCONSISTENT_CLUSTER_ID
(``metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java``,
``registerBroker``); a registration naming no usable address (no listener with a host and a
port) or a negative broker id is INVALID_REGISTRATION here, since a broker registered there would
be handed partitions no client could reach. Deeper checks (epochs, voters, sessions) belong to
the replica (:mod:`reference_impl.core.raft.request_checks`) and the controller.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from reference_impl.protocol.build import get

from ..metadata.records import METADATA_TOPIC, METADATA_TOPIC_ID
from .wire import (
    BEGIN_EPOCH,
    END_EPOCH,
    FETCH,
    FETCH_SNAPSHOT,
    MAX_FEATURES,
    MAX_LOG_DIRS,
    REGISTRATION,
    VOTE,
)

QUORUM_APIS = frozenset({VOTE, BEGIN_EPOCH, END_EPOCH, FETCH, FETCH_SNAPSHOT})


def request_error(api_key: int, request: Any, cluster_id: str) -> ErrorCode | None:
    """The top-level error Kafka answers ``request`` with before looking further, or None."""
    if api_key in QUORUM_APIS:
        claimed = get(request, "cluster_id")
        if claimed is not None and claimed != cluster_id:
            return ErrorCode.inconsistent_cluster_id
        return None if names_metadata_partition(api_key, request) else ErrorCode.invalid_request
    if api_key == REGISTRATION:
        if request.cluster_id != cluster_id:
            return ErrorCode.inconsistent_cluster_id
        usable = any(listener.host and int(listener.port) > 0 for listener in request.listeners)
        too_many = len(get(request, "log_dirs") or ()) > MAX_LOG_DIRS or len(request.features) > MAX_FEATURES
        if request.broker_id < 0 or not usable or too_many:  # a broker has at most 64 of each
            return ErrorCode.invalid_registration
    return None


def names_metadata_partition(api_key: int, request: Any) -> bool:
    """One topic, ``__cluster_metadata`` (by topic id on Fetch v13+), one partition, index 0."""
    topics = tuple(request.topics)
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        return False
    topic, partition = topics[0], topics[0].partitions[0]
    if api_key == FETCH:
        named = get(topic, "topic_id") == METADATA_TOPIC_ID or get(topic, "topic") == METADATA_TOPIC
        return named and int(partition.partition) == 0
    if api_key == FETCH_SNAPSHOT:
        return bool(topic.name == METADATA_TOPIC and int(partition.partition) == 0)
    return bool(topic.topic_name == METADATA_TOPIC and int(partition.partition_index) == 0)
