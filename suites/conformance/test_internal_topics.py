"""Internal topics belong to their coordinators, and a transactional id is never empty (issue 17, item 7).

* Produce to ``__consumer_offsets`` or ``__transaction_state`` is INVALID_TOPIC_EXCEPTION
  (core/src/main/scala/kafka/server/ReplicaManager.scala, ``appendToLocalLog``: "Cannot append to internal
  topic"; ``Topic.isInternal``), and so is DeleteRecords (``deleteRecordsOnLocalLog``): a client can neither
  plant records a coordinator would load as its own state nor erase them.
* CreatePartitions and config changes of an internal topic carry no internal-topic check in KRaft
  (core/src/main/scala/kafka/server/ControllerApis.scala ``createPartitions``,
  ``handleIncrementalAlterConfigs``; metadata/.../ReplicationControlManager.java): only ACLs, and without
  an authorizer they succeed (asked here with ``validate_only``, so nothing changes).
* DeleteTopics of ``__consumer_offsets`` also succeeds in KRaft (``ControllerApis.deleteTopics``: no
  internal-topic check); that is not asked of a shared target here, since it would erase every group's
  committed offsets. ``__cluster_metadata`` is no topic to clients: DeleteTopics of it is
  UNKNOWN_TOPIC_OR_PARTITION (``findTopicIds``), CreateTopics of it TOPIC_AUTHORIZATION_FAILED
  (``ControllerApis.createTopics`` leaves it out of the authorized names).
* InitProducerId with an empty transactional id is INVALID_REQUEST at every version, on any broker
  (core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala ``handleInitProducerId``:
  "consistent with producer client", checked before the coordinator is looked up).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, ops
from reference_impl.protocol.record_set import build_batch

from .expect import expect_code, expect_equal

FEATURE = "Internal topics"
RULE = "ReplicaManager internal topics"
INTERNAL = {"__consumer_offsets": 0, "__transaction_state": 1}
"""Each internal topic and the FindCoordinator key type that makes the target create it."""


def _ensure(router: Router, topic: str, unique: Callable[[str], str]) -> None:
    """The internal topic exists (FindCoordinator creates it) and has a leader for partition 0."""
    router.coordinator_of(unique("internal"), INTERNAL[topic])
    router.wait_for_topic(topic)


def _earliest_and_latest(router: Router, caps: Capabilities, topic: str) -> tuple[int, int]:
    earliest = ops.list_offset(router, caps, topic, ops.EARLIEST_TIMESTAMP)
    latest = ops.list_offset(router, caps, topic, ops.LATEST_TIMESTAMP)
    return int(earliest.offset), int(latest.offset)


@pytest.mark.parametrize("topic", list(INTERNAL))
def test_produce_to_an_internal_topic_is_refused(
    topic: str, router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """A client's Produce to an internal topic: INVALID_TOPIC_EXCEPTION, and its log does not grow."""
    _ensure(router, topic, unique)
    before = _earliest_and_latest(router, caps, topic)
    batch = build_batch([(b"planted", b"not a coordinator record")], base_timestamp=int(time.time() * 1000))
    result = ops.produce_batch(router, caps, topic, batch)
    expect_code(result.error_code, "INVALID_TOPIC_EXCEPTION", rule=RULE, where=f"Produce to {topic}")
    after = _earliest_and_latest(router, caps, topic)
    expect_equal(after, before, RULE, f"{topic}-0 offsets after the produce")


@pytest.mark.versions("delete_records")
@pytest.mark.parametrize("topic", list(INTERNAL))
def test_delete_records_of_an_internal_topic_is_refused(
    version: int, topic: str, router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """DeleteRecords on an internal topic (to the high watermark): INVALID_TOPIC_EXCEPTION, the log start
    offset unchanged."""
    _ensure(router, topic, unique)
    before = _earliest_and_latest(router, caps, topic)
    answer = router.to_leader(topic).request(
        "delete_records", version, timeout=10_000,
        topics=[{"name": topic, "partitions": [{"partition_index": 0, "offset": -1}]}],
    )
    code = answer.topics[0].partitions[0].error_code
    expect_code(code, "INVALID_TOPIC_EXCEPTION", rule=RULE, where=f"DeleteRecords v{version} of {topic}")
    expect_equal(_earliest_and_latest(router, caps, topic), before, RULE, f"{topic}-0 offsets")


@pytest.mark.requires("create_partitions")
def test_create_partitions_of_an_internal_topic_passes_validation(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KRaft has no internal-topic check on CreatePartitions: validate_only to one more partition is NONE."""
    _ensure(router, "__consumer_offsets", unique)
    partitions = len(ops.metadata(router, caps, ["__consumer_offsets"]).topics[0].partitions)
    body = {
        "timeout": 10_000, "validate_only": True,
        "topics": [{"name": "__consumer_offsets", "count": partitions + 1, "assignments": None}],
    }
    version = caps.best("create_partitions")
    answer = ops.controller_request(router, "create_partitions", version, body, _first_result)
    expect_code(answer.results[0].error_code, "NONE", rule="ControllerApis.createPartitions")


@pytest.mark.requires("incremental_alter_configs")
def test_config_change_of_an_internal_topic_passes_validation(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """KRaft has no internal-topic check on config changes: validate_only retention.ms is NONE."""
    _ensure(router, "__consumer_offsets", unique)
    body = {
        "validate_only": True,
        "resources": [{"resource_type": 2, "resource_name": "__consumer_offsets",
                       "configs": [{"name": "retention.ms", "config_operation": 0, "value": "604800000"}]}],
    }
    version = caps.best("incremental_alter_configs")
    answer = ops.controller_request(router, "incremental_alter_configs", version, body, _first_response)
    expect_code(answer.responses[0].error_code, "NONE", rule="ControllerApis.handleIncrementalAlterConfigs")


@pytest.mark.requires("delete_topics")
def test_the_metadata_log_cannot_be_deleted(router: Router, caps: Capabilities) -> None:
    """``__cluster_metadata`` is no topic to clients: DeleteTopics of it is UNKNOWN_TOPIC_OR_PARTITION."""
    version = caps.best("delete_topics", hi=5)
    body: dict[str, Any] = {"timeout": 10_000, "topic_names": ["__cluster_metadata"]}
    deleted = ops.controller_request(router, "delete_topics", version, body, _first_deleted)
    code = deleted.responses[0].error_code
    expect_code(code, "UNKNOWN_TOPIC_OR_PARTITION", rule="ControllerApis.deleteTopics")


def test_the_metadata_log_cannot_be_created(router: Router, caps: Capabilities) -> None:
    """CreateTopics of ``__cluster_metadata`` is TOPIC_AUTHORIZATION_FAILED: the controller leaves the name
    out of the ones a client may create."""
    created = ops.create_topic(router, caps, "__cluster_metadata")
    expect_code(created.error_code, "TOPIC_AUTHORIZATION_FAILED", rule="ControllerApis.createTopics")


@pytest.mark.versions("init_producer_id")
def test_init_producer_id_with_an_empty_transactional_id(
    version: int, router: Router, caps: Capabilities
) -> None:
    """An empty transactional id is INVALID_REQUEST (null is an idempotent producer, '' is no id at all)."""
    entity = ops.wire_build("init_producer_id", version, {
        "transactional_id": "", "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1,
    })
    answer = router.any().send(entity)
    expect_code(answer.error_code, "INVALID_REQUEST", rule="TransactionCoordinator.handleInitProducerId",
                where=f"InitProducerId v{version}")
    expect_equal((int(answer.producer_id), int(answer.producer_epoch)), (-1, -1),
                 "TransactionCoordinator.handleInitProducerId", "producer id and epoch")


def _first_result(answer: Any) -> Any:
    return answer.results[0].error_code


def _first_response(answer: Any) -> Any:
    return answer.responses[0].error_code


def _first_deleted(answer: Any) -> Any:
    return answer.responses[0].error_code
