"""Client telemetry's store and subscriptions (KIP-714, core/telemetry.py): the metadata log keeps the
client-metrics configs across snapshots, and what a hostile client sends stays bounded."""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace

import pytest

from reference_impl.core import telemetry
from reference_impl.core.controller.records import ControllerImage, decode_snapshot, encode_snapshot
from reference_impl.core.metadata.image import CLIENT_METRICS_RESOURCE
from reference_impl.core.metadata.records import ConfigRecord
from reference_impl.core.telemetry import ClientTelemetry, metric_names
from reference_impl.protocol.errors import ErrorCode, KafkaError


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([(number << 3) | 2, len(payload)]) + payload


def _otlp(*names: str) -> bytes:
    metrics = b"".join(_field(2, _field(1, n.encode())) for n in names)
    return _field(1, _field(2, metrics))


def _image(**subscriptions: dict[str, str]) -> ControllerImage:
    image = ControllerImage(cluster_id="c", controller_id=1)
    for offset, (sub, configs) in enumerate(subscriptions.items()):
        for name, value in configs.items():
            image.apply(
                ConfigRecord(
                    resource_type=CLIENT_METRICS_RESOURCE, resource_name=sub, name=name, value=value
                ),
                offset,
            )
    return image


def test_subscriptions_replay_and_survive_a_snapshot() -> None:
    image = _image(s1={"metrics": "*", "interval.ms": "1000"}, s2={"match": "client_id=a"})
    image.apply(
        ConfigRecord(resource_type=CLIENT_METRICS_RESOURCE, resource_name="s2", name="match", value=None), 9
    )
    assert image.client_metrics == {"s1": {"metrics": "*", "interval.ms": "1000"}}
    assert image.broker_configs == {}
    again = decode_snapshot(encode_snapshot(image), "c", 10)
    assert again.client_metrics == image.client_metrics


def test_metric_names_walk_otlp_and_refuse_garbage() -> None:
    assert metric_names(_otlp("a.b", "c.d")) == ["a.b", "c.d"]
    for bad in (b"\x0a\xff\xff\xff\xff\x0f", b"\x0b", b"\x0a\x05ab"):
        with pytest.raises(ValueError):
            metric_names(bad)


def test_instances_are_capped_and_subscriptions_matched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "MAX_INSTANCES", 8)
    image = _image(s1={"metrics": "org.", "interval.ms": "1000", "match": "client_id=app-.*"})
    store = ClientTelemetry()
    for i in range(20):
        fields = store.get_subscriptions(image, None, uuid.UUID(int=i + 1), f"app-{i}", "h", 100, 1000)
        assert fields["requested_metrics"] == ["org."] and fields["push_interval"] == 1000
    assert len(store.inspect(image)) == 8
    other = store.get_subscriptions(image, None, uuid.UUID(int=99), "other", "h", 100, 1000)
    assert other["requested_metrics"] == [] and other["push_interval"] == telemetry.DEFAULT_INTERVAL_MS


def test_push_keeps_a_bounded_history() -> None:
    image = _image(s1={"metrics": "*", "interval.ms": "100"})
    store = ClientTelemetry()
    iid = uuid.UUID(int=7)
    now = 1000
    sub = store.get_subscriptions(image, None, iid, "c", "h", 1 << 20, now)
    for _ in range(telemetry.KEPT_PUSHES + 3):
        push = SimpleNamespace(
            client_instance_id=iid, subscription_id=sub["subscription_id"], terminating=False,
            compression_type=0, metrics=_otlp("m"),
        )  # fmt: skip
        assert store.push(image, push, "c", "h", 1 << 20, now) == ErrorCode.none
        now += 100
    assert f'"pushes": {telemetry.KEPT_PUSHES + 3}' in store.inspect(image)[str(iid)]
    summary = json.loads(store.inspect(image)[str(iid)])
    assert len(summary["last_pushes"]) == telemetry.KEPT_PUSHES
    assert [p["metrics"] for p in summary["last_pushes"]] == [[], [], [], ["m"]]


def test_bad_subscription_configs() -> None:
    for changes, code in (
        ({"nope": "1"}, ErrorCode.invalid_request),
        ({"interval.ms": "99"}, ErrorCode.invalid_request),
        ({"match": "client_id"}, ErrorCode.invalid_config),
        ({"match": "client_id=("}, ErrorCode.invalid_config),
    ):
        with pytest.raises(KafkaError) as caught:
            telemetry.check_subscription(changes)
        assert caught.value.code == code


def test_software_selectors_match_what_api_versions_said() -> None:
    image = _image(
        s1={"metrics": "*", "match": "client_software_name=librdkafka,client_software_version=2\\..*"}
    )
    store = ClientTelemetry()
    store.note_software(5, "librdkafka", "2.16.0")
    store.note_software(6, "librdkafka", "1.9.2")
    matched = store.get_subscriptions(image, None, uuid.UUID(int=1), "c", "h", 100, 10**6, connection_id=5)
    other = store.get_subscriptions(image, None, uuid.UUID(int=2), "c", "h", 100, 10**6, connection_id=6)
    unknown = store.get_subscriptions(image, None, uuid.UUID(int=3), "c", "h", 100, 10**6, connection_id=7)
    assert matched["requested_metrics"] == ["*"]
    assert other["requested_metrics"] == [] and unknown["requested_metrics"] == []
