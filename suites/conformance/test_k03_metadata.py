"""Metadata (key 3): brokers, topics, partitions, leaders, ids, auto-creation.

Rules from the protocol guide (Metadata API), KIP-204 (allow_auto_topic_creation, v4),
KIP-516 (topic ids, v10), and Kafka's MetadataRequest.json comments (an empty
topic list asks for no topics from v1, a null list for all).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from fixtures.wire import Capabilities, WireClient, ops

from .expect import expect, expect_code, expect_equal

FEATURE = "Metadata"


@pytest.mark.versions("metadata", lo=1)
def test_topic_partitions_and_leader_are_listed(
    version: int, wire: WireClient, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """Protocol guide, Metadata: a requested topic is listed with every partition and a leader among the
    brokers."""
    name = topic_factory(partitions=3)
    answer = ops.metadata(wire, caps, [name], version=version)
    brokers = {int(b.node_id) for b in answer.brokers}
    expect(bool(brokers), "Protocol guide, Metadata", "no brokers listed")
    (entry,) = answer.topics
    expect_code(entry.error_code, "NONE", rule="Protocol guide, Metadata")
    expect_equal(
        sorted(int(p.partition_index) for p in entry.partitions),
        [0, 1, 2],
        "Protocol guide, Metadata",
        "partition indexes",
    )
    for p in entry.partitions:
        expect(
            int(p.leader_id) in brokers,
            "Protocol guide, Metadata",
            f"partition {p.partition_index} leader {p.leader_id} is not a listed broker",
        )
        expect(
            int(p.leader_id) in [int(r) for r in p.replica_nodes],
            "Protocol guide, Metadata",
            "the leader is not among the replicas",
        )


@pytest.mark.versions("metadata", lo=4)
def test_unknown_topic_without_auto_creation(
    version: int, wire: WireClient, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-204: with allow_auto_topic_creation=false an unknown topic is answered UNKNOWN_TOPIC_OR_PARTITION
    and is not created."""
    name = unique("absent")
    answer = ops.metadata(wire, caps, [name], version=version, auto_create=False)
    expect_code(answer.topics[0].error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule="KIP-204")
    again = ops.metadata(wire, caps, [name], version=version, auto_create=False)
    expect_code(
        again.topics[0].error_code,
        "UNKNOWN_TOPIC_OR_PARTITION",
        rule="KIP-204",
        where="asked a second time (it must not have been created)",
    )


@pytest.mark.versions("metadata", lo=1)
def test_empty_topic_list_asks_for_no_topics(
    version: int, wire: WireClient, caps: Capabilities, topic: str
) -> None:
    """MetadataRequest.json: from v1 an empty topic array means no topics (null means all)."""
    answer = wire.request("metadata", version, topics=[], allow_auto_topic_creation=False)
    expect_equal([t.name for t in answer.topics], [], "MetadataRequest.json v1+", "topics for an empty list")


def test_null_topic_list_lists_every_topic(wire: WireClient, caps: Capabilities, topic: str) -> None:
    """MetadataRequest.json: a null topic array asks for every topic."""
    answer = ops.metadata(wire, caps, None)
    expect(
        topic in [t.name for t in answer.topics], "MetadataRequest.json", f"{topic} missing from all topics"
    )


@pytest.mark.versions("metadata", lo=2)
def test_cluster_id_and_controller_are_valid(version: int, wire: WireClient, caps: Capabilities) -> None:
    """KIP-78 (cluster id, v2) and Metadata v1 controller_id: a non-empty cluster id, a controller that is
    a broker
    or -1 (Kafka 4 with KRaft reports a random alive broker)."""
    answer = wire.request("metadata", version, topics=[], allow_auto_topic_creation=False)
    expect(bool(answer.cluster_id), "KIP-78", "empty cluster id")
    brokers = {int(b.node_id) for b in answer.brokers}
    expect(
        int(answer.controller_id) in brokers | {-1},
        "Protocol guide, Metadata",
        f"controller {answer.controller_id} is not a broker",
    )


@pytest.mark.versions("metadata", lo=10)
def test_topic_id_is_stable_and_non_zero(
    version: int, wire: WireClient, caps: Capabilities, topic: str
) -> None:
    """KIP-516: every topic has a non-zero UUID, the same on every Metadata answer."""
    first = ops.metadata(wire, caps, [topic], version=version).topics[0].topic_id
    second = ops.metadata(wire, caps, [topic], version=version).topics[0].topic_id
    expect(first != uuid.UUID(int=0), "KIP-516", "topic id is all zeros")
    expect_equal(second, first, "KIP-516", "topic id on a second request")


@pytest.mark.versions("metadata", lo=12)
def test_topic_can_be_asked_by_id(version: int, wire: WireClient, caps: Capabilities, topic: str) -> None:
    """KIP-516: from v12 a topic may be asked by id (name null); the answer names it."""
    tid = ops.topic_id(wire, caps, topic)
    answer = wire.request(
        "metadata", version, topics=[{"topic_id": tid, "name": None}], allow_auto_topic_creation=False
    )
    expect_code(answer.topics[0].error_code, "NONE", rule="KIP-516")
    expect_equal(answer.topics[0].name, topic, "KIP-516", "name of the topic asked by id")


def test_broker_addresses_are_the_advertised_ones(
    wire: WireClient, caps: Capabilities, bootstrap_servers: str
) -> None:
    """Protocol guide, Metadata: brokers are listed with their advertised host and port (clients connect
    there)."""
    answer = ops.metadata(wire, caps, [])
    listed = {f"{b.host}:{b.port}" for b in answer.brokers}
    expect(
        set(bootstrap_servers.split(",")) <= listed,
        "Protocol guide, Metadata",
        f"advertised {bootstrap_servers}, listed {sorted(listed)}",
    )


def test_auto_creation_when_allowed(
    wire: WireClient, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-204 with auto.create.topics.enable=true (Kafka's default): a requested unknown topic is created;
    the first answer may say LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION, a later one lists it."""
    import time

    name = unique("auto")
    first = ops.metadata(wire, caps, [name], auto_create=True).topics[0]
    expect_code(
        first.error_code, "NONE", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION", rule="KIP-204"
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        entry = ops.metadata(wire, caps, [name], auto_create=False).topics[0]
        if entry.error_code.value == 0 and entry.partitions:
            return
        time.sleep(0.1)
    raise AssertionError(f"[KIP-204] {name} was not created by a Metadata request allowing auto-creation")
