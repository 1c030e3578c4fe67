"""Clock faults (:mod:`chaos.nemesis.clock`): the nemesis writes the seeded offset and takes it back,
and a reference broker started on the faked clock stamps records with the moved time
(``message.timestamp.type=LogAppendTime``: the broker's own wall clock, Kafka's
``LogValidator``/``UnifiedLog.append`` assign it at append). Skipped without libfaketime."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from chaos.history import Recorder
from chaos.nemesis.clock import Clock, unavailable_reason
from chaos.nemesis.faults import Nemesis
from chaos.nemesis.schedule import Planned
from chaos.nemesis.topology import Topology
from chaos.runner import _create_topic
from fixtures.targets import launch


def test_the_nemesis_sets_the_seeded_offset_and_takes_it_back(tmp_path: Path) -> None:
    clock = Clock(tmp_path / "offset")
    nemesis = Nemesis(Recorder(), Topology.plan("http://unused", [1, 2]), None, "t", clock=clock)
    plan = Planned(0, "clock-jump", 0.0, 1.0, pick=5)
    nemesis.start(plan)
    offset = Clock.offset_for("clock-jump", 5)
    assert 600 <= offset <= 7200 and clock.path.read_text() == f"{offset:+.3f}s\n"
    start = nemesis.recorder.history.nemesis_ops()[0].value
    assert start["offset_s"] == round(offset, 3) and start["nodes"] == [1, 2] and "error" not in start
    nemesis.stop(plan)
    assert clock.path.read_text() == "+0.000s\n"
    assert 5 <= abs(Clock.offset_for("clock-skew", 9)) <= 60


def test_a_clock_fault_without_a_faked_clock_is_recorded_as_an_error() -> None:
    nemesis = Nemesis(Recorder(), Topology.plan("http://unused", [1]), None, "t")
    nemesis.start(Planned(0, "clock-skew", 0.0, 1.0, 0))
    assert "faked clock" in nemesis.recorder.history.nemesis_ops()[0].value["error"]


def _append_time(bootstrap: str, topic: str, value: bytes) -> float:
    """Produce ``value`` and read it back: the broker's append time, in seconds."""
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value, partition=0)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None and msg.value() == value:
                return float(msg.timestamp()[1]) / 1000
    finally:
        consumer.close()
    raise AssertionError(f"{value!r} not read back")


@pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
def test_a_reference_broker_on_the_faked_clock_stamps_the_moved_time(tmp_path: Path) -> None:
    clock = Clock(tmp_path / "offset")
    with clock.applied(), launch("reference") as target:
        topic = f"clock-{uuid.uuid4().hex[:6]}"
        _create_topic(target.bootstrap_servers, topic, 1, 1, {"message.timestamp.type": "LogAppendTime"})
        clock.set(3600.0)
        skewed = _append_time(target.bootstrap_servers, topic, b"ahead") - time.time()
        clock.set(0.0)
        back = _append_time(target.bootstrap_servers, topic, b"now") - time.time()
    print(f"append time vs real time: {skewed:+.1f} s under +3600 s, {back:+.1f} s after the reset")
    # after the step back the reference keeps stamping its latest time (its logs take
    # max(now, last now): reference_impl/log/partition_log.py), so only the step forward is asserted
    assert 3500 < skewed < 3700
