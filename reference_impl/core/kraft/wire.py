"""Raft and controller messages as Kafka wire entities, and back.

The sans-IO quorum (:mod:`reference_impl.core.raft`) and controller speak
plain dataclasses; between processes they travel as the Kafka APIs KRaft
uses: Vote (52), BeginQuorumEpoch (53), EndQuorumEpoch (54), Fetch (1, v17,
on the ``__cluster_metadata`` partition by its topic id), FetchSnapshot (59),
BrokerRegistration (62), BrokerHeartbeat (63), AlterPartition (56) and
AllocateProducerIds (67), and the admin requests brokers forward (ElectLeaders 43, the reassignment
APIs 45-46, UnregisterBroker 64). Each function maps field to field with
:func:`~reference_impl.protocol.build.build`, so a version's missing fields
take their schema defaults. Correlation ids are not on the wire (the frame
header carries its own): the caller passes the one the dataclass must carry.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload

from reference_impl.core.controller import messages as cm
from reference_impl.core.metadata.records import METADATA_TOPIC, METADATA_TOPIC_ID
from reference_impl.core.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    OffsetAndEpoch,
    VoteRequest,
)
from reference_impl.protocol.apis import request_class, response_class
from reference_impl.protocol.build import build, millis

from . import raft_wire

VOTE, BEGIN_EPOCH, END_EPOCH, FETCH, FETCH_SNAPSHOT = 52, 53, 54, 1, 59
REGISTRATION, HEARTBEAT, ALTER_PARTITION, ALLOCATE_IDS, ASSIGN_DIRS = 62, 63, 56, 67, 73
HEARTBEAT_VERSION = 1
REGISTRATION_VERSION = 4
"""BrokerRegistration v4, as Kafka 4's brokers send it (LogDirs v2+, PreviousBrokerEpoch v3+); every
reference controller serves v0-4."""
"""BrokerHeartbeat v1 carries the offline log directories (KIP-858)."""
MAX_LOG_DIRS = 64
"""At most so many offline log directories are read from a heartbeat (a broker has at most 64)."""
MAX_FEATURES = 64
"""At most so many features are read from a registration (Kafka 4 has a handful)."""
MAX_ASSIGNMENTS = 10_000
"""At most so many replica assignments in one AssignReplicasToDirs (the sender batches below it)."""
ELECT_LEADERS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS, UNREGISTER_BROKER = 43, 45, 46, 64
ADMIN_FORWARD_TIMEOUT_MS = 30_000
"""Timeout of an admin request a broker forwards to the active controller (KIP-590's forwarding)."""
RAFT_FETCH_VERSION = 17
"""KRaft's Fetch (KIP-853, v17, as Kafka's KafkaRaftClient sends it;
``clients/src/main/resources/common/message/FetchRequest.json``): the replica id in ``ReplicaState``
(v15+), the ReplicaDirectoryId (v17), and an answer's ``NodeEndpoints`` (v16+) naming where the leader
it names listens, which a node that found the quorum through ``controller.quorum.bootstrap.servers``
fetches from next (``peer_addresses.py``)."""
RAFT_REQUESTS = (VoteRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchSnapshotRequest)


def _one(topics: tuple[Any, ...]) -> Any:
    """The single partition of the single topic every quorum message carries (None if absent)."""
    for topic in topics:
        for partition in topic.partitions:
            return partition
    return None


def _topic(partition: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0, **partition}]}]


# -- requests: dataclass -> wire ------------------------------------------------------------------


def request_to_wire(body: Any, cluster_id: str, endpoint: raft_wire.Endpoint | None = None) -> RequestPayload:
    """The kio request for a quorum or controller request dataclass (``endpoint``: this node's
    controller listener, which a leader's BeginQuorumEpoch and EndQuorumEpoch v1 carry)."""
    raft = raft_wire.request_to_wire(body, cluster_id, endpoint)
    if raft is not None:
        return raft
    match body:
        case FetchRequest():
            fetch_part = {
                "partition": 0,
                "current_leader_epoch": body.current_leader_epoch,
                "fetch_offset": body.fetch_offset,
                "last_fetched_epoch": body.last_fetched_epoch,
                "log_start_offset": -1,
                "partition_max_bytes": body.max_bytes,
                "replica_directory_id": body.replica_directory_id or uuid.UUID(int=0),
            }
            return build(
                request_class(FETCH, RAFT_FETCH_VERSION),
                {
                    "cluster_id": cluster_id,
                    "replica_state": {"replica_id": body.replica_id, "replica_epoch": -1},
                    "max_wait": body.max_wait_ms,
                    "min_bytes": 0,
                    "max_bytes": body.max_bytes,
                    "isolation_level": 0,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [fetch_part]}],
                    "forgotten_topics_data": [],
                    "rack_id": "",
                },
            )
        case cm.BrokerRegistrationRequest():
            return build(
                # v4; v1 from a broker that knows no directory ids (a memory store: the simulator)
                request_class(REGISTRATION, REGISTRATION_VERSION if body.log_dirs else 1),
                {
                    "is_migrating_zk_broker": body.is_migrating_zk_broker,
                    "features": [
                        {"name": n, "min_supported_version": low, "max_supported_version": high}
                        for n, low, high in body.features or ()
                    ],
                    "log_dirs": [uuid.UUID(d) for d in body.log_dirs or ()],
                    "previous_broker_epoch": body.previous_broker_epoch,
                    "broker_id": body.broker_id,
                    "cluster_id": cluster_id,
                    "incarnation_id": uuid.UUID(body.incarnation_id) if body.incarnation_id else uuid.uuid4(),
                    "listeners": [
                        {"name": "PLAINTEXT", "host": body.host, "port": body.port, "security_protocol": 0}
                    ],
                    "rack": body.rack,
                },
            )
        case cm.BrokerHeartbeatRequest():
            return build(
                request_class(HEARTBEAT, HEARTBEAT_VERSION),
                {
                    "broker_id": body.broker_id,
                    "broker_epoch": body.broker_epoch,
                    "current_metadata_offset": body.current_metadata_offset,
                    "want_fence": body.want_fence,
                    "want_shut_down": body.want_shut_down,
                    "offline_log_dirs": [uuid.UUID(d) for d in body.offline_log_dirs],
                },
            )
        case cm.AssignReplicasToDirsRequest():
            directories = _by_directory((a, {"partition_index": a.partition}) for a in body.assignments)
            return build(
                request_class(ASSIGN_DIRS, 0),
                {"broker_id": body.broker_id, "broker_epoch": body.broker_epoch, "directories": directories},
            )
        case cm.AlterPartitionRequest():
            part = {
                "partition_index": body.partition,
                "leader_epoch": body.leader_epoch,
                "new_isr": list(body.new_isr),
                "leader_recovery_state": 0,
                "partition_epoch": body.partition_epoch,
            }
            return build(
                request_class(ALTER_PARTITION, 2),
                {
                    "broker_id": body.broker_id,
                    "broker_epoch": body.broker_epoch,
                    "topics": [{"topic_id": uuid.UUID(body.topic_id), "partitions": [part]}],
                },
            )
        case cm.AllocateProducerIdsRequest():
            return build(
                request_class(ALLOCATE_IDS, 0),
                {"broker_id": body.broker_id, "broker_epoch": body.broker_epoch},
            )
        case cm.CreateTopicsRequest():
            topic = {
                "name": body.name,
                "num_partitions": body.num_partitions,
                "replication_factor": body.replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in body.configs],
            }
            return build(request_class(19, 4), {"topics": [topic], "timeout": 30_000, "validate_only": False})
        case cm.ElectLeadersRequest():
            asked = None if body.partitions is None else _grouped(body.partitions)
            return build(
                request_class(ELECT_LEADERS, 2),
                {
                    "election_type": body.election_type,
                    "topic_partitions": None
                    if asked is None
                    else [{"topic": t, "partitions": ps} for t, ps in asked.items()],
                    "timeout": ADMIN_FORWARD_TIMEOUT_MS,
                },
            )
        case cm.AlterPartitionReassignmentsRequest():
            moves: dict[str, list[dict[str, Any]]] = {}
            for topic_name, index, target in body.reassignments:
                replicas = None if target is None else list(target)
                moves.setdefault(topic_name, []).append({"partition_index": index, "replicas": replicas})
            return build(
                request_class(ALTER_REASSIGNMENTS, 1),
                {
                    "timeout": ADMIN_FORWARD_TIMEOUT_MS,
                    "allow_replication_factor_change": body.allow_replication_factor_change,
                    "topics": [{"name": t, "partitions": ps} for t, ps in moves.items()],
                },
            )
        case cm.ListPartitionReassignmentsRequest():
            listed = None if body.partitions is None else _grouped(body.partitions)
            return build(
                request_class(LIST_REASSIGNMENTS, 0),
                {
                    "timeout": ADMIN_FORWARD_TIMEOUT_MS,
                    "topics": None
                    if listed is None
                    else [{"name": t, "partition_indexes": ps} for t, ps in listed.items()],
                },
            )
        case cm.UnregisterBrokerRequest():
            return build(request_class(UNREGISTER_BROKER, 0), {"broker_id": body.broker_id})
    raise TypeError(f"no wire form for {type(body).__name__}")


def _by_directory(items: Iterable[tuple[cm.DirectoryAssignment, dict[str, Any]]]) -> list[dict[str, Any]]:
    """AssignReplicasToDirs' nesting: directories, their topics (by id), their partitions."""
    by_dir: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for a, partition in items:
        by_dir.setdefault(a.directory_id, {}).setdefault(a.topic_id, []).append(partition)
    return [
        {
            "id_": uuid.UUID(d),
            "topics": [{"topic_id": uuid.UUID(t), "partitions": ps} for t, ps in topics.items()],
        }
        for d, topics in by_dir.items()
    ]


def _grouped(partitions: tuple[tuple[str, int], ...]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, index in partitions:
        out.setdefault(topic, []).append(index)
    return out


def _results(topics: Any, partitions_field: str, index_field: str) -> tuple[cm.PartitionResult, ...]:
    return tuple(
        (
            str(getattr(t, "topic", None) or t.name),
            int(getattr(p, index_field)),
            p.error_code,
            p.error_message,
        )
        for t in topics
        for p in getattr(t, partitions_field)
    )


# -- responses: wire -> dataclass ----------------------------------------------------------------


def response_from_wire(request: Any, wire: Any) -> Any:
    """The dataclass answer to ``request`` (a dataclass) from its kio response ``wire``."""
    cid = request.correlation_id
    if isinstance(request, RAFT_REQUESTS):
        return raft_wire.response_from_wire(request, _one(wire.topics), wire)
    match request:
        case FetchRequest():
            p = _one(wire.responses)
            if p is None:
                return FetchResponse(
                    correlation_id=cid, error_code=wire.error_code, leader_id=-1, leader_epoch=-1,
                    high_watermark=-1, log_start_offset=-1, diverging_epoch=None, snapshot_id=None,
                    records=b"",
                )  # fmt: skip
            diverging = p.diverging_epoch
            snapshot = p.snapshot_id
            return FetchResponse(
                correlation_id=cid,
                error_code=p.error_code,
                leader_id=int(p.current_leader.leader_id),
                leader_epoch=int(p.current_leader.leader_epoch),
                high_watermark=int(p.high_watermark),
                log_start_offset=int(p.log_start_offset),
                diverging_epoch=(
                    OffsetAndEpoch(int(diverging.end_offset), int(diverging.epoch))
                    if diverging.epoch >= 0
                    else None
                ),
                snapshot_id=(
                    OffsetAndEpoch(int(snapshot.end_offset), int(snapshot.epoch))
                    if snapshot.end_offset >= 0
                    else None
                ),
                records=bytes(p.records or b""),
            )
        case cm.BrokerRegistrationRequest():
            return cm.BrokerRegistrationResponse(
                correlation_id=cid, error_code=wire.error_code, broker_epoch=int(wire.broker_epoch)
            )
        case cm.BrokerHeartbeatRequest():
            return cm.BrokerHeartbeatResponse(
                correlation_id=cid,
                error_code=wire.error_code,
                is_caught_up=bool(wire.is_caught_up),
                is_fenced=bool(wire.is_fenced),
                should_shut_down=bool(wire.should_shut_down),
            )
        case cm.AssignReplicasToDirsRequest():
            results = tuple(
                (cm.DirectoryAssignment(topic_id=str(t.topic_id), partition=int(p.partition_index),
                                        directory_id=str(d.id_)), p.error_code)
                for d in wire.directories for t in d.topics for p in t.partitions
            )  # fmt: skip
            return cm.AssignReplicasToDirsResponse(
                correlation_id=cid, error_code=wire.error_code, results=results
            )
        case cm.AlterPartitionRequest():
            p = _one(wire.topics)
            error = wire.error_code if p is None or wire.error_code != ErrorCode.none else p.error_code
            return cm.AlterPartitionResponse(
                correlation_id=cid,
                error_code=error,
                leader_id=-1 if p is None else int(p.leader_id),
                leader_epoch=-1 if p is None else int(p.leader_epoch),
                partition_epoch=-1 if p is None else int(p.partition_epoch),
                isr=() if p is None else tuple(int(r) for r in p.isr),
            )
        case cm.AllocateProducerIdsRequest():
            return cm.AllocateProducerIdsResponse(
                correlation_id=cid,
                error_code=wire.error_code,
                producer_id_start=int(wire.producer_id_start),
                producer_id_len=int(wire.producer_id_len),
            )
        case cm.CreateTopicsRequest():
            topics = list(wire.topics)
            error = topics[0].error_code if topics else ErrorCode.unknown_server_error
            return cm.CreateTopicsResponse(
                correlation_id=cid, error_code=error, error_message=None, topic_id=None
            )
        case cm.ElectLeadersRequest():
            return cm.ElectLeadersResponse(
                correlation_id=cid,
                error_code=wire.error_code,
                results=_results(wire.replica_election_results, "partition_result", "partition_id"),
            )
        case cm.AlterPartitionReassignmentsRequest():
            return cm.AlterPartitionReassignmentsResponse(
                correlation_id=cid,
                error_code=wire.error_code,
                results=_results(wire.responses, "partitions", "partition_index"),
            )
        case cm.ListPartitionReassignmentsRequest():
            return cm.ListPartitionReassignmentsResponse(
                correlation_id=cid,
                error_code=wire.error_code,
                ongoing=tuple(
                    cm.OngoingReassignment(
                        topic=t.name,
                        partition=int(p.partition_index),
                        replicas=tuple(int(r) for r in p.replicas),
                        adding_replicas=tuple(int(r) for r in p.adding_replicas),
                        removing_replicas=tuple(int(r) for r in p.removing_replicas),
                    )
                    for t in wire.topics
                    for p in t.partitions
                ),
            )
        case cm.UnregisterBrokerRequest():
            return cm.UnregisterBrokerResponse(
                correlation_id=cid, error_code=wire.error_code, error_message=wire.error_message
            )
    raise TypeError(f"no wire form for {type(request).__name__}")


# -- requests: wire -> dataclass (the serving side) --------------------------------------------


def request_from_wire(api_key: int, wire: Any, correlation_id: int) -> tuple[int, Any] | None:
    """(source node id, dataclass request) for an inbound quorum or controller request; None if it
    names no metadata partition."""
    if api_key in (VOTE, BEGIN_EPOCH, END_EPOCH, FETCH_SNAPSHOT):
        p = _one(wire.topics)
        return None if p is None else raft_wire.request_from_wire(api_key, p, wire, correlation_id)
    match api_key:
        case 1:
            p = _one(wire.topics)
            if p is None:
                return None
            state = getattr(wire, "replica_state", None)  # v15+: the replica id moved in here
            replica = int(state.replica_id if state is not None else wire.replica_id)
            directory = getattr(p, "replica_directory_id", None)  # v17+ (KIP-853)
            return replica, FetchRequest(
                correlation_id=correlation_id,
                replica_id=replica,
                current_leader_epoch=int(p.current_leader_epoch),
                fetch_offset=int(p.fetch_offset),
                last_fetched_epoch=int(p.last_fetched_epoch),
                max_wait_ms=millis(wire.max_wait),
                max_bytes=int(p.partition_max_bytes),
                replica_directory_id=None if directory is None or directory.int == 0 else directory,
            )
        case 62:
            listener = wire.listeners[0] if wire.listeners else None
            return (
                int(wire.broker_id),
                cm.BrokerRegistrationRequest(
                    correlation_id=correlation_id,
                    broker_id=int(wire.broker_id),
                    host="" if listener is None else listener.host,
                    port=0 if listener is None else int(listener.port),
                    rack=wire.rack,
                    incarnation_id=str(wire.incarnation_id or ""),
                    is_migrating_zk_broker=bool(getattr(wire, "is_migrating_zk_broker", False)),
                    log_dirs=None  # v0/v1 carry none: not said (registration.py)
                    if not hasattr(wire, "log_dirs")
                    else tuple(str(d) for d in wire.log_dirs[: MAX_LOG_DIRS + 1]),
                    previous_broker_epoch=int(getattr(wire, "previous_broker_epoch", -1)),
                    features=tuple(
                        (str(f.name), int(f.min_supported_version), int(f.max_supported_version))
                        for f in wire.features[: MAX_FEATURES + 1]
                    ),
                ),
            )
        case 63:
            return int(wire.broker_id), cm.BrokerHeartbeatRequest(
                correlation_id=correlation_id,
                broker_id=int(wire.broker_id),
                broker_epoch=int(wire.broker_epoch),
                current_metadata_offset=int(wire.current_metadata_offset),
                want_fence=bool(wire.want_fence),
                want_shut_down=bool(wire.want_shut_down),
                offline_log_dirs=tuple(
                    str(d) for d in getattr(wire, "offline_log_dirs", ())[:MAX_LOG_DIRS] if d is not None
                ),
            )
        case 73:
            assignments: list[cm.DirectoryAssignment] = []
            for d in wire.directories:
                for t in d.topics:
                    for p in t.partitions:
                        if len(assignments) >= MAX_ASSIGNMENTS:  # bounded: a broker sends far fewer
                            return None
                        assignments.append(
                            cm.DirectoryAssignment(
                                topic_id=str(t.topic_id),
                                partition=int(p.partition_index),
                                directory_id=str(d.id_),
                            )
                        )
            return int(wire.broker_id), cm.AssignReplicasToDirsRequest(
                correlation_id=correlation_id,
                broker_id=int(wire.broker_id),
                broker_epoch=int(wire.broker_epoch),
                assignments=tuple(assignments),
            )
        case 56:
            topics = list(wire.topics)
            if not topics or not topics[0].partitions:
                return None
            topic, p = topics[0], topics[0].partitions[0]
            return int(wire.broker_id), cm.AlterPartitionRequest(
                correlation_id=correlation_id,
                broker_id=int(wire.broker_id),
                broker_epoch=int(wire.broker_epoch),
                topic_id=str(topic.topic_id),
                partition=int(p.partition_index),
                leader_epoch=int(p.leader_epoch),
                partition_epoch=int(p.partition_epoch),
                new_isr=tuple(int(getattr(r, "broker_id", r)) for r in p.new_isr),
            )
        case 67:
            return int(wire.broker_id), cm.AllocateProducerIdsRequest(
                correlation_id=correlation_id,
                broker_id=int(wire.broker_id),
                broker_epoch=int(wire.broker_epoch),
            )
    return None


# -- responses: dataclass -> wire (the serving side) -------------------------------------------


def response_to_wire(
    api_key: int,
    version: int,
    body: Any,
    request: Any = None,
    addresses: Mapping[int, tuple[str, int]] | None = None,
    node_endpoints: list[dict[str, Any]] | None = None,
) -> Any:
    """The kio response of ``version`` for a dataclass answer to ``request`` (a dataclass);
    ``addresses``: the voters' endpoints, named in Raft answers v1+ (NodeEndpoints);
    ``node_endpoints``: a Fetch answer's leader endpoint (v16+)."""
    cls = response_class(api_key, version)
    raft = raft_wire.response_to_wire(cls, body, addresses or {})
    if raft is not None:
        return raft
    match body:
        case FetchResponse():
            fetch_part = {
                "partition_index": 0,
                "error_code": body.error_code,
                "high_watermark": body.high_watermark,
                "last_stable_offset": body.high_watermark,
                "log_start_offset": body.log_start_offset,
                "current_leader": {"leader_id": body.leader_id, "leader_epoch": body.leader_epoch},
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": body.records,
            }
            if body.diverging_epoch is not None:
                fetch_part["diverging_epoch"] = {
                    "epoch": body.diverging_epoch.epoch,
                    "end_offset": body.diverging_epoch.offset,
                }
            if body.snapshot_id is not None:
                fetch_part["snapshot_id"] = {
                    "end_offset": body.snapshot_id.offset,
                    "epoch": body.snapshot_id.epoch,
                }
            return build(
                cls,
                {
                    "throttle_time": 0,
                    "error_code": 0,
                    "session_id": 0,
                    "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [fetch_part]}],
                    "node_endpoints": node_endpoints or [],
                },
            )
        case cm.BrokerRegistrationResponse():
            return build(
                cls, {"throttle_time": 0, "error_code": body.error_code, "broker_epoch": body.broker_epoch}
            )
        case cm.BrokerHeartbeatResponse():
            return build(
                cls,
                {
                    "throttle_time": 0,
                    "error_code": body.error_code,
                    "is_caught_up": body.is_caught_up,
                    "is_fenced": body.is_fenced,
                    "should_shut_down": body.should_shut_down,
                },
            )
        case cm.AlterPartitionResponse():
            part = {
                "partition_index": getattr(request, "partition", 0),
                "error_code": body.error_code,
                "leader_id": body.leader_id,
                "leader_epoch": body.leader_epoch,
                "isr": list(body.isr),
                "leader_recovery_state": 0,
                "partition_epoch": body.partition_epoch,
            }
            topic_id = uuid.UUID(request.topic_id) if request is not None else uuid.UUID(int=0)
            topic = {"topic_id": topic_id, "partitions": [part]}
            return build(cls, {"throttle_time": 0, "error_code": 0, "topics": [topic]})
        case cm.AssignReplicasToDirsResponse():
            directories = _by_directory(
                (a, {"partition_index": a.partition, "error_code": code}) for a, code in body.results
            )
            return build(cls, {"throttle_time": 0, "error_code": body.error_code, "directories": directories})
        case cm.AllocateProducerIdsResponse():
            return build(
                cls,
                {
                    "throttle_time": 0,
                    "error_code": body.error_code,
                    "producer_id_start": body.producer_id_start,
                    "producer_id_len": body.producer_id_len,
                },
            )
    raise TypeError(f"no wire form for {type(body).__name__}")
