"""KIP-858 on the quorum controller, in the simulator: AssignReplicasToDirs records each replica's log
directory in the partition (Kafka's ``ReplicationControlManager.handleAssignReplicasToDirs``), and a
heartbeat naming an offline directory moves the leaderships of the replicas in it, and only those
(``handleDirectoriesOffline``); the wire forms round-trip."""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import replace

from kio.schema.errors import ErrorCode

from reference_impl.core.controller.messages import (
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
    BrokerHeartbeatRequest,
    DirectoryAssignment,
)
from reference_impl.core.controller.quorum import not_controller_answer
from reference_impl.core.kraft import wire
from reference_impl.core.metadata.image import MetadataImage
from reference_impl.core.metadata.records import (
    PartitionChangeRecord,
    PartitionRecord,
    TopicRecord,
    decode,
    encode,
)
from reference_impl.protocol.codec import decode_request, encode_request
from reference_impl.sim.controller.nodes import active_controller

from .test_controller import active, ask, cluster, create, partition

_ids = itertools.count(70_000)
DIR_A, DIR_B = str(uuid.UUID(int=0xA)), str(uuid.UUID(int=0xB))


def _assign(broker: int, epoch: int, *items: tuple[str, int, str]) -> AssignReplicasToDirsRequest:
    return AssignReplicasToDirsRequest(
        correlation_id=next(_ids),
        broker_id=broker,
        broker_epoch=epoch,
        assignments=tuple(DirectoryAssignment(topic_id=t, partition=p, directory_id=d) for t, p, d in items),
    )


def test_assignments_are_recorded_and_an_offline_directory_moves_only_its_leaderships() -> None:
    sim, _ = cluster()
    create(sim, "t", partitions=4, rf=3)
    image = active(sim).active.image
    topic_id = str(image.topics["t"].topic_id)
    epoch = image.broker_epochs[102]
    where = {0: DIR_A, 1: DIR_A, 2: DIR_B, 3: DIR_B}
    answer = ask(sim, _assign(102, epoch, *((topic_id, p, d) for p, d in where.items())))
    assert answer.error_code == ErrorCode.none and {c for _a, c in answer.results} == {ErrorCode.none}
    for p, d in where.items():
        assert partition(sim, "t", p).directory_of(102) == d
        assert partition(sim, "t", p).directory_of(101) == ""  # not assigned by its broker yet
    stale = ask(sim, _assign(102, epoch - 1, (topic_id, 0, DIR_B)))
    assert (
        stale.error_code == ErrorCode.stale_broker_epoch and partition(sim, "t", 0).directory_of(102) == DIR_A
    )
    unknown = ask(sim, _assign(999, epoch, (topic_id, 0, DIR_B)))
    assert unknown.error_code == ErrorCode.broker_id_not_registered
    standby = next(n for n in (1, 2, 3) if n != active_controller(sim))
    assert (
        ask(sim, _assign(102, epoch, (topic_id, 0, DIR_B)), to=standby).error_code == ErrorCode.not_controller
    )
    answered = AssignReplicasToDirsResponse(correlation_id=1, error_code=ErrorCode.none)
    assert not_controller_answer(answered).error_code == ErrorCode.not_controller  # lost leadership
    odd = ask(
        sim, _assign(102, epoch, (str(uuid.UUID(int=99)), 0, DIR_A), (topic_id, 9, DIR_A), ("x", 0, DIR_A))
    )
    assert [c for _a, c in odd.results] == [
        ErrorCode.unknown_topic_id,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.unknown_topic_id,
    ]
    before = {p: partition(sim, "t", p) for p in where}
    heartbeat = BrokerHeartbeatRequest(
        correlation_id=next(_ids),
        broker_id=102,
        broker_epoch=epoch,
        current_metadata_offset=sim.node(102).raft.published_offset,
        offline_log_dirs=(DIR_A,),
    )
    assert ask(sim, heartbeat).error_code == ErrorCode.none
    for p, old in before.items():
        new = partition(sim, "t", p)
        if where[p] == DIR_A:  # in the offline directory: out of the ISR, not the leader
            assert 102 not in new.isr and new.leader not in (102, -1)
        else:
            assert (new.isr, new.leader) == (old.isr, old.leader)
    assert not active(sim).active.image.brokers[102].fenced  # the broker itself stays


def test_directories_follow_their_replicas_through_changes_and_snapshots() -> None:
    topic_id = uuid.UUID(int=5)
    image = MetadataImage(cluster_id="c", controller_id=1)
    image.apply(TopicRecord(name="t", topic_id=topic_id), 0)
    created = PartitionRecord(topic_id=topic_id, partition=0, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1,
                              directories=(DIR_A, "", DIR_B))  # fmt: skip
    assert decode(encode(created)) == created
    image.apply(created, 1)
    image.apply(PartitionChangeRecord(topic_id=topic_id, partition=0, replicas=(3, 1, 4)), 2)
    info = image.topics["t"].partitions[0]
    assert info.directories == (DIR_B, DIR_A, "")  # each replica kept its own; the new one has none
    change = PartitionChangeRecord(topic_id=topic_id, partition=0, directories=(DIR_B, DIR_A, DIR_A))
    assert decode(encode(change)) == change
    image.apply(change, 3)
    assert image.topics["t"].partitions[0].directory_of(4) == DIR_A
    old = json.loads(encode(created))
    del old["directories"]  # a record written before KIP-858 support: no directories
    assert decode(json.dumps(old).encode()) == replace(created, directories=())


def test_the_kip_858_messages_round_trip_on_the_wire() -> None:
    request = _assign(2, 7, (str(uuid.UUID(int=1)), 0, DIR_A), (str(uuid.UUID(int=1)), 1, DIR_B))
    entity = wire.request_to_wire(request, "cluster")
    _header, sent = decode_request(encode_request(entity, 5, "peer")[4:])
    parsed = wire.request_from_wire(73, sent, request.correlation_id)
    assert parsed == (2, request)
    answer = AssignReplicasToDirsResponse(
        correlation_id=request.correlation_id,
        error_code=ErrorCode.none,
        results=tuple((a, ErrorCode.none) for a in request.assignments),
    )
    assert wire.response_from_wire(request, wire.response_to_wire(73, 0, answer, request)) == answer
    heartbeat = BrokerHeartbeatRequest(
        correlation_id=3, broker_id=2, broker_epoch=7, current_metadata_offset=10, offline_log_dirs=(DIR_B,)
    )
    _header, sent = decode_request(encode_request(wire.request_to_wire(heartbeat, "cluster"), 3, "peer")[4:])
    assert wire.request_from_wire(63, sent, 3) == (2, heartbeat)
