"""Topic administration: CreateTopics (19), DeleteTopics (20), DeleteRecords (21), CreatePartitions (37).

Rules from the protocol guide, KIP-4 (admin requests and their error codes), KIP-107
(DeleteRecords moves the log start offset; -1 means the high watermark), KIP-195
(CreatePartitions only grows a topic), KIP-516 (DeleteTopics by id, v6), KIP-590 (a broker
forwards topic administration to the controller, so any broker takes it) and Kafka's
topic-name rule (Topic.java: at most 249 characters of [a-zA-Z0-9._-]).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, ops

from .expect import expect, expect_code, expect_equal

FEATURE = "Topic administration"


def listed(router: Router, caps: Capabilities, name: str) -> bool:
    """Whether the controller's Metadata lists ``name``: the broker that answered the change knows its
    outcome (the others learn it from the metadata log a moment later)."""
    answer = ops.metadata(router.to_controller(), caps, [name])
    return bool(answer.topics[0].error_code.value == 0)


@pytest.mark.versions("create_topics")
def test_create_topic(version: int, router: Router, caps: Capabilities, unique: Callable[[str], str]) -> None:
    """KIP-4 CreateTopics: a new topic is created with the requested partitions and appears in Metadata."""
    name = unique("create")
    result = ops.create_topic(router, caps, name, 3, version=version)
    expect_code(result.error_code, "NONE", rule="KIP-4 CreateTopics")
    answer = ops.metadata(router.to_controller(), caps, [name]).topics[0]
    expect_equal(len(answer.partitions), 3, "KIP-4 CreateTopics", "partitions in Metadata")


def test_create_existing_topic(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-4 CreateTopics: creating a topic that exists is TOPIC_ALREADY_EXISTS."""
    expect_code(
        ops.create_topic(router, caps, topic).error_code, "TOPIC_ALREADY_EXISTS", rule="KIP-4 CreateTopics"
    )


@pytest.mark.parametrize(
    "bad_name",
    ["bad/name", "bad name", "x" * 250, ".", ".."],
    ids=["slash", "space", "too-long", "dot", "dotdot"],
)
def test_invalid_topic_name(bad_name: str, router: Router, caps: Capabilities) -> None:
    """Topic.java naming rule: names are 1-249 characters of [a-zA-Z0-9._-] and not '.' or '..';
    others are INVALID_TOPIC_EXCEPTION."""
    expect_code(
        ops.create_topic(router, caps, bad_name).error_code, "INVALID_TOPIC_EXCEPTION", rule="Topic naming"
    )


def test_zero_partitions_is_invalid(router: Router, caps: Capabilities, unique: Callable[[str], str]) -> None:
    """KIP-4 CreateTopics: num_partitions must be positive (or -1 for the broker default);
    0 is INVALID_PARTITIONS."""
    result = ops.create_topic(router, caps, unique("zero"), 0)
    expect_code(result.error_code, "INVALID_PARTITIONS", rule="KIP-4 CreateTopics")


def test_replication_factor_above_broker_count(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-4 CreateTopics: a replication factor larger than the number of brokers is
    INVALID_REPLICATION_FACTOR."""
    brokers = len(ops.metadata(router, caps, []).brokers)
    result = ops.create_topic(router, caps, unique("rf"), 1, replication_factor=brokers + 2)
    expect_code(result.error_code, "INVALID_REPLICATION_FACTOR", rule="KIP-4 CreateTopics")


def test_validate_only_creates_nothing(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-108: validate_only checks the request and answers as if created, but creates nothing."""
    name = unique("dry")
    v = caps.best("create_topics", lo=1)
    body = {
        "timeout": 10_000,
        "validate_only": True,
        "topics": [{"name": name, "num_partitions": 2, "replication_factor": 1}],
    }
    answer = ops.controller_request(router, "create_topics", v, body, first_topic_code)
    expect_code(answer.topics[0].error_code, "NONE", rule="KIP-108")
    expect(not listed(router, caps, name), "KIP-108", "a validate_only request created the topic")


def test_unknown_config_is_invalid(router: Router, caps: Capabilities, unique: Callable[[str], str]) -> None:
    """KIP-4 CreateTopics: an unknown topic config name is INVALID_CONFIG and nothing is created."""
    name = unique("cfg")
    result = ops.create_topic(router, caps, name, 1, {"no.such.config": "1"})
    expect_code(result.error_code, "INVALID_CONFIG", rule="KIP-4 CreateTopics")
    expect(
        not listed(router, caps, name), "KIP-4 CreateTopics", "the topic exists despite the invalid config"
    )


@pytest.mark.requires("create_topics", min_version=5)
def test_create_returns_configs_and_partitions(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-525 (CreateTopics v5): the answer carries the topic's partitions, replication factor and configs,
    including the overrides given."""
    result = ops.create_topic(router, caps, unique("v5"), 2, {"retention.ms": "123456"})
    expect_code(result.error_code, "NONE", rule="KIP-525")
    expect_equal(
        (int(result.num_partitions), int(result.replication_factor)), (2, 1), "KIP-525", "partitions, rf"
    )
    configs = {c.name: c.value for c in result.configs or ()}
    expect_equal(configs.get("retention.ms"), "123456", "KIP-525", "retention.ms in the answer")


def test_any_broker_takes_topic_administration(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KIP-590: CreateTopics and DeleteTopics sent to each broker, the controller or not, succeed (a
    broker that is not the controller forwards them); with one broker it is the controller itself."""
    for wire in router.connections():
        name = unique("forwarded")
        created = ops.create_topic(wire, caps, name, 1)
        expect_code(created.error_code, "NONE", rule="KIP-590", where=f"CreateTopics at {wire.label}")
        expect(listed(router, caps, name), "KIP-590", f"{name}, created through {wire.label}, is not listed")
        body = {"timeout": 10_000, "topic_names": [name]}
        version = caps.best("delete_topics", hi=5)
        deleted = ops.controller_request(wire, "delete_topics", version, body, deleted_code).responses[0]
        expect_code(deleted.error_code, "NONE", rule="KIP-590", where=f"DeleteTopics at {wire.label}")


@pytest.mark.versions("delete_topics")
def test_delete_topic(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-4 DeleteTopics: a deleted topic leaves Metadata (UNKNOWN_TOPIC_OR_PARTITION afterwards)."""
    if version >= 6:
        body: dict[str, Any] = {"topics": [{"name": None, "topic_id": ops.topic_id(router, caps, topic)}]}
    else:
        body = {"topic_names": [topic]}
    body["timeout"] = 10_000
    answer = ops.controller_request(router, "delete_topics", version, body, deleted_code)
    expect_code(answer.responses[0].error_code, "NONE", rule="KIP-4 DeleteTopics")
    expect(not listed(router, caps, topic), "KIP-4 DeleteTopics", "the deleted topic is still in Metadata")


def test_delete_unknown_topic(router: Router, caps: Capabilities, unique: Callable[[str], str]) -> None:
    """KIP-4 DeleteTopics: deleting a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION."""
    body = {"timeout": 5_000, "topic_names": [unique("x")]}
    version = caps.best("delete_topics", hi=5)
    answer = ops.controller_request(router, "delete_topics", version, body, deleted_code)
    expect_code(answer.responses[0].error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule="KIP-4 DeleteTopics")


def first_topic_code(answer: Any) -> Any:
    return answer.topics[0].error_code


def deleted_code(answer: Any) -> Any:
    return answer.responses[0].error_code


def _delete_records(
    router: Router, caps: Capabilities, topic: str, offset: int, version: int | None = None
) -> Any:
    v = caps.best("delete_records") if version is None else version
    answer = router.to_leader(topic).request(  # the partition's leader moves its log start
        "delete_records",
        v,
        timeout=10_000,
        topics=[{"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}],
    )
    return answer.topics[0].partitions[0]


@pytest.mark.versions("delete_records")
def test_delete_records_moves_log_start(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-107: DeleteRecords sets the log start offset (low watermark); earliest ListOffsets and Fetch
    follow it and reading below it is OFFSET_OUT_OF_RANGE."""
    ops.produce_values(router, caps, topic, [b"%d" % i for i in range(5)])
    result = _delete_records(router, caps, topic, 3, version)
    expect_code(result.error_code, "NONE", rule="KIP-107")
    expect_equal(int(result.low_watermark), 3, "KIP-107", "low watermark in the answer")
    expect_equal(
        int(ops.list_offset(router, caps, topic, ops.EARLIEST_TIMESTAMP).offset), 3, "KIP-107", "earliest"
    )
    _r, part = ops.fetch(router, caps, topic, 1, max_wait_ms=100)
    expect_code(part.error_code, "OFFSET_OUT_OF_RANGE", rule="KIP-107", where="fetch below the log start")


def test_delete_records_to_high_watermark(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-107: offset -1 in DeleteRecords means the high watermark: everything is deleted."""
    ops.produce_values(router, caps, topic, [b"a", b"b"])
    result = _delete_records(router, caps, topic, -1)
    expect_code(result.error_code, "NONE", rule="KIP-107")
    expect_equal(int(result.low_watermark), 2, "KIP-107", "low watermark after deleting to the HW")


def test_delete_records_beyond_high_watermark(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-107: an offset above the high watermark is OFFSET_OUT_OF_RANGE."""
    ops.produce_values(router, caps, topic, [b"a"])
    expect_code(_delete_records(router, caps, topic, 50).error_code, "OFFSET_OUT_OF_RANGE", rule="KIP-107")


def _create_partitions(router: Router, caps: Capabilities, topic: str, count: int) -> Any:
    body = {
        "timeout": 10_000,
        "validate_only": False,
        "topics": [{"name": topic, "count": count, "assignments": None}],
    }
    answer = ops.controller_request(
        router, "create_partitions", caps.best("create_partitions"), body, lambda r: r.results[0].error_code
    )
    return answer.results[0]


@pytest.mark.requires("create_partitions")
def test_create_partitions_grows_a_topic(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-195: CreatePartitions raises the partition count; new partitions appear in Metadata."""
    expect_code(_create_partitions(router, caps, topic, 3).error_code, "NONE", rule="KIP-195")
    partitions = ops.metadata(router.to_controller(), caps, [topic]).topics[0].partitions
    expect_equal(len(partitions), 3, "KIP-195", "partitions")


@pytest.mark.requires("create_partitions")
def test_create_partitions_cannot_shrink(
    router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """KIP-195: a count not above the current one is INVALID_PARTITIONS."""
    name = topic_factory(partitions=2)
    expect_code(_create_partitions(router, caps, name, 1).error_code, "INVALID_PARTITIONS", rule="KIP-195")
