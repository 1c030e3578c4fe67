"""``kafka-harness telemetry`` against the reference broker: a subscription set, a client's pushed
metrics read back (names decoded from OTLP), errors without tracebacks."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator

import pytest

from fixtures.targets import Target, launch
from fixtures.wire import WireClient

from .test_admin_cli import run


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([(number << 3) | 2, len(payload)]) + payload


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    running = launch("reference")
    yield running
    running.close()


def test_subscribe_push_and_show(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    b = target.bootstrap_servers
    client_id = f"tele-{uuid.uuid4().hex[:6]}"
    status, out, err = run(
        capsys, "telemetry", "-b", b, "subscribe", "everything", "--interval-ms", "1000", "--match",
        f"client_id={client_id}",
    )  # fmt: skip
    assert status == 0, err
    status, out, _ = run(capsys, "telemetry", "-b", b, "--json", "subscriptions")
    assert status == 0 and {"subscription": "everything"} in json.loads(out)
    with WireClient(b.split(",")[0], client_id=client_id) as wire:
        sub = wire.request("get_telemetry_subscriptions", 0, client_instance_id=uuid.UUID(int=0))
        assert list(sub.requested_metrics) == ["*"]
        metrics = _field(1, _field(2, _field(2, _field(1, b"org.apache.kafka.producer.io.wait.time"))))
        pushed = wire.request(
            "push_telemetry", 0, client_instance_id=sub.client_instance_id,
            subscription_id=sub.subscription_id, terminating=False, compression_type=1,
            metrics=gzip.compress(metrics),
        )  # fmt: skip
        assert pushed.error_code.value == 0
    status, out, err = run(capsys, "telemetry", "-b", b, "--json")
    assert status == 0, err
    mine = [row for row in json.loads(out) if row["client_id"] == client_id]
    assert len(mine) == 1
    assert mine[0]["pushes"] == 1 and mine[0]["last_metrics"] == ["org.apache.kafka.producer.io.wait.time"]
    assert mine[0]["client_instance_id"] == str(sub.client_instance_id)
    status, _, err = run(capsys, "telemetry", "-b", b, "subscribe", "bad", "--interval-ms", "5")
    assert status == 1 and "INVALID_REQUEST" in err and "Traceback" not in err
    assert run(capsys, "telemetry", "-b", b, "unsubscribe", "everything")[0] == 0
