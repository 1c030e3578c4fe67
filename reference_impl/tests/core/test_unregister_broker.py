"""UnregisterBroker (API 64) on a single broker, the only voter of its own quorum: an unknown id is
BROKER_ID_NOT_REGISTERED; its own id is unregistered, and the broker's next heartbeat, refused,
registers it again (Kafka's BrokerLifecycleManager), so it is listed and serving again."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from reference_impl.core.metadata.records import UnregisterBrokerRecord

from .harness import BrokerHarness, request


def test_unknown_id_is_refused_and_own_id_registers_again() -> None:
    h = BrokerHarness()
    answer = h.call(request(64, 0, broker_id=42))
    assert answer.error_code == ErrorCode.broker_id_not_registered and answer.error_message is None
    answer = h.call(request(64, 0, broker_id=h.broker.node_id))
    assert answer.error_code == ErrorCode.none
    assert h.broker.node_id not in h.broker.image.brokers  # the UnregisterBrokerRecord, applied
    interval = h.broker.config.get_int("broker.heartbeat.interval.ms")
    for _ in range(10):  # the next heartbeats: refused, then a registration, then unfenced
        h.advance(interval)
        registered = h.broker.image.brokers.get(h.broker.node_id)
        if registered is not None and not registered.fenced:
            break
    assert h.broker.node_id in h.broker.image.brokers
    metadata = h.call(
        request(
            3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
        )
    )
    assert [int(b.node_id) for b in metadata.brokers] == [h.broker.node_id]


def test_the_record_is_replayed_by_a_plain_metadata_image() -> None:
    h = BrokerHarness()
    image = h.broker.image
    image.apply(UnregisterBrokerRecord(broker_id=h.broker.node_id, broker_epoch=-1), image.offset + 1)
    assert h.broker.node_id not in image.brokers
