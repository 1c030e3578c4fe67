"""Internal topics belong to their coordinators; transactional ids are never empty (issue 17, item 7).

Kafka: a client's Produce to ``__consumer_offsets`` or ``__transaction_state`` is INVALID_TOPIC_EXCEPTION
(core/src/main/scala/kafka/server/ReplicaManager.scala, ``appendToLocalLog``: "Cannot append to internal
topic"), so is DeleteRecords (``deleteRecordsOnLocalLog``); InitProducerId with an empty transactional id
is INVALID_REQUEST (core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala,
``handleInitProducerId``). DeleteTopics, CreatePartitions and config changes of internal topics carry no
internal-topic check in KRaft (core/src/main/scala/kafka/server/ControllerApis.scala,
ReplicationControlManager.java): only ACLs, which the reference does not implement. ``__cluster_metadata``
is no topic to clients; CreateTopics of it is TOPIC_AUTHORIZATION_FAILED (``ControllerApis.createTopics``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from reference_impl import defects
from reference_impl.log.testing import make_batch

from .harness import BrokerHarness, request
from .test_admin import create_topics

INTERNAL = ("__consumer_offsets", "__transaction_state")


def _with_internal_topics() -> BrokerHarness:
    h = BrokerHarness()
    for key_type in (0, 1):  # FindCoordinator creates them
        h.call(request(10, 4, key_type=key_type, coordinator_keys=["x"]))
    assert set(INTERNAL) <= set(h.broker.image.topics)
    return h


def _produce(h: BrokerHarness, topic: str) -> Any:
    partition_data = [{"index": 0, "records": bytes(make_batch(1))}]
    body = request(0, 9, acks=1, timeout=1000, transactional_id=None,
                   topic_data=[{"name": topic, "partition_data": partition_data}])
    return h.call(body).responses[0].partition_responses[0]


def _delete_records(h: BrokerHarness, topic: str) -> Any:
    partitions = [{"partition_index": 0, "offset": -1}]
    body = request(21, 2, timeout=1000, topics=[{"name": topic, "partitions": partitions}])
    return h.call(body).topics[0].partitions[0]


@pytest.mark.parametrize("topic", INTERNAL)
def test_clients_cannot_write_or_erase_internal_topics(topic: str) -> None:
    """Produce and DeleteRecords on an internal topic: INVALID_TOPIC_EXCEPTION, the log untouched."""
    h = _with_internal_topics()
    log = h.store.logs[(topic, 0)]
    before = (log.log_start_offset, log.log_end_offset)
    produced = _produce(h, topic)
    assert (produced.error_code, produced.error_message) == (ErrorCode.invalid_topic_exception, None)
    assert _delete_records(h, topic).error_code == ErrorCode.invalid_topic_exception
    assert (log.log_start_offset, log.log_end_offset) == before


def test_the_seeded_defect_lets_clients_write_internal_topics() -> None:
    h = _with_internal_topics()
    with defects.seeded(defects.INTERNAL_TOPIC_WRITES):
        assert _produce(h, "__consumer_offsets").error_code == ErrorCode.none
        assert h.call(request(22, 4, transactional_id="", transaction_timeout=60_000, producer_id=-1,
                              producer_epoch=-1)).error_code == ErrorCode.none


@pytest.mark.parametrize("version", range(0, 6))
def test_init_producer_id_with_an_empty_transactional_id_is_invalid_request(version: int) -> None:
    h = BrokerHarness()
    def init(transactional_id: str | None) -> Any:
        return h.call(request(22, version, transactional_id=transactional_id, transaction_timeout=60_000,
                              producer_id=-1, producer_epoch=-1))

    answer = init("")
    assert answer.error_code == ErrorCode.invalid_request
    assert (answer.producer_id, answer.producer_epoch) == (-1, -1)
    idempotent = init(None)
    assert idempotent.error_code == ErrorCode.none and idempotent.producer_id >= 0


def test_administration_of_internal_topics_is_as_in_kraft() -> None:
    """CreatePartitions and config changes (validate only) are accepted; DeleteTopics deletes, and the
    next FindCoordinator creates the topic again; ``__cluster_metadata`` is no topic to clients."""
    h = _with_internal_topics()
    grow = h.call(request(37, 3, timeout=1000, validate_only=True,
                          topics=[{"name": "__consumer_offsets", "count": 60, "assignments": None}]))
    assert grow.results[0].error_code == ErrorCode.none
    alter = h.call(request(44, 1, validate_only=True, resources=[{
        "resource_type": 2, "resource_name": "__consumer_offsets",
        "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}]}]))
    assert alter.responses[0].error_code == ErrorCode.none
    topics = [{"name": "__consumer_offsets", "topic_id": uuid.UUID(int=0)}]
    deleted = h.call(request(20, 6, timeout=1000, topics=topics))
    assert deleted.responses[0].error_code == ErrorCode.none
    assert "__consumer_offsets" not in h.broker.image.topics
    h.call(request(10, 4, key_type=0, coordinator_keys=["x"]))
    assert "__consumer_offsets" in h.broker.image.topics
    (created,) = create_topics(h, {"name": "__cluster_metadata"})
    assert created.error_code == ErrorCode.topic_authorization_failed
    assert _produce(h, "__cluster_metadata").error_code == ErrorCode.unknown_topic_or_partition
