"""ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments on a one-node broker, over
the wire at every version: its own controller decides (one replica: nothing to elect or move)."""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request


def _topic(h: BrokerHarness, name: str, partitions: int = 2) -> None:
    topic = {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }
    [created] = h.call(request(19, 7, topics=[topic], timeout=1000, validate_only=False)).topics
    assert created.error_code == ErrorCode.none


def _codes(results: Any, key: str) -> dict[tuple[str, int], ErrorCode]:
    out = {}
    for t in results:
        name = getattr(t, "topic", None) or t.name
        for p in getattr(t, "partition_result", None) or t.partitions:
            out[(name, int(getattr(p, key)))] = p.error_code
    return out


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elect_leaders_on_one_node(version: int) -> None:
    h = BrokerHarness()
    _topic(h, "e")
    fields: dict[str, Any] = {"topic_partitions": [{"topic": "e", "partitions": [0, 7]}], "timeout": 1000}
    if version >= 1:
        fields["election_type"] = 0
    answer = h.call(request(43, version, **fields))
    assert _codes(answer.replica_election_results, "partition_id") == {
        ("e", 0): ErrorCode.election_not_needed,
        ("e", 7): ErrorCode.unknown_topic_or_partition,
    }
    everything = h.call(request(43, version, **{**fields, "topic_partitions": None}))
    assert everything.replica_election_results == ()  # nothing needed an election


@pytest.mark.parametrize("version", [0, 1])
def test_reassignments_on_one_node(version: int) -> None:
    h = BrokerHarness()
    _topic(h, "r")

    def alter(replicas: list[int] | None) -> ErrorCode:
        topics = [{"name": "r", "partitions": [{"partition_index": 0, "replicas": replicas}]}]
        answer = h.call(request(45, version, topics=topics, timeout=1000))
        assert answer.error_code == ErrorCode.none
        return _codes(answer.responses, "partition_index")[("r", 0)]

    assert alter([1, 2]) == ErrorCode.invalid_replica_assignment  # broker 2 is not registered
    assert alter([]) == ErrorCode.invalid_replica_assignment
    assert alter(None) == ErrorCode.no_reassignment_in_progress
    assert alter([1]) == ErrorCode.none  # already there
    listed = h.call(request(46, 0, topics=None, timeout=1000))
    assert listed.error_code == ErrorCode.none and listed.topics == ()
