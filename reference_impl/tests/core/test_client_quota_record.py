"""ClientQuotaRecord (metadata record type 14) round-trips the JSON codec and replays into the
image's quota table: set, overwrite, remove, and the entity gone once its last key is removed."""

from __future__ import annotations

from reference_impl.core.controller.records import ControllerImage, decode_snapshot, encode_snapshot
from reference_impl.core.metadata.image import MetadataImage
from reference_impl.core.metadata.records import ClientQuotaRecord, decode, encode


def _rec(key: str, value: float = 0.0, remove: bool = False) -> ClientQuotaRecord:
    return ClientQuotaRecord(
        entity_types=("user", "client-id"),
        entity_names=("alice", None),
        key=key,
        value=value,
        remove=remove,
    )


def test_round_trip() -> None:
    record = _rec("producer_byte_rate", 1024.0)
    assert decode(encode(record)) == record


def test_replay_set_overwrite_remove() -> None:
    image = MetadataImage(cluster_id="c", controller_id=0)
    entity = frozenset({("user", "alice"), ("client-id", None)})
    image.apply(_rec("producer_byte_rate", 100.0), 0)
    image.apply(_rec("consumer_byte_rate", 200.0), 1)
    image.apply(_rec("producer_byte_rate", 300.0), 2)
    assert image.client_quotas[entity] == {"producer_byte_rate": 300.0, "consumer_byte_rate": 200.0}
    image.apply(_rec("producer_byte_rate", remove=True), 3)
    assert image.client_quotas[entity] == {"consumer_byte_rate": 200.0}
    image.apply(_rec("consumer_byte_rate", remove=True), 4)
    assert entity not in image.client_quotas


def test_snapshot_keeps_quotas() -> None:
    image = ControllerImage(cluster_id="c", controller_id=1)
    image.apply(_rec("producer_byte_rate", 100.0), 0)
    again = decode_snapshot(encode_snapshot(image), "c", 1)
    assert again.client_quotas == image.client_quotas
