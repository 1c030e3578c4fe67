"""UnregisterBroker (API 64) on a single broker, its own controller (``LocalController``): an
unknown id is BROKER_ID_NOT_REGISTERED; its own id is unregistered and registered again at once
(a running broker's next heartbeat re-registers it in a cluster), so it stays listed and serving."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from reference_impl.core.metadata.records import UnregisterBrokerRecord

from .harness import BrokerHarness, request


def test_unknown_id_is_refused_and_own_id_registers_again() -> None:
    h = BrokerHarness()
    answer = h.call(request(64, 0, broker_id=42))
    assert answer.error_code == ErrorCode.broker_id_not_registered and answer.error_message is None
    before = h.broker.image.offset
    answer = h.call(request(64, 0, broker_id=h.broker.node_id))
    assert answer.error_code == ErrorCode.none
    assert h.broker.image.offset == before + 2  # the UnregisterBrokerRecord, then the registration again
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
