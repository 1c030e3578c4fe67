"""``kafka-harness groups`` on the reference broker and Tansu: state, members, offsets, lag, reset, delete.

Whatever a target lacks is reported as a message naming the Kafka error, with
exit status 1, never a traceback.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from fixtures.targets import Target, launch
from kafka_harness.cli import main

pytestmark = pytest.mark.clients

RECORDS = 10
COMMITTED = 6


@pytest.fixture(scope="module", params=["reference", "tansu"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    running = launch(request.param)
    yield running
    running.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def _group_with_lag(bootstrap: str) -> tuple[str, str]:
    """A topic of 10 records and a group that committed offset 6 and left."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = f"grp-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(topic, key=b"k", value=b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, COMMITTED)], asynchronous=False)
    consumer.close()
    return topic, group


def _failed_cleanly(status: int, err: str) -> bool:
    return status == 1 and "Traceback" not in err and err.startswith("kafka-harness groups: ")


def test_groups_describe_reset_delete(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    b = target.bootstrap_servers
    topic, group = _group_with_lag(b)
    status, out, err = run(capsys, "groups", "-b", b, "--json", "list")
    if status:
        assert _failed_cleanly(status, err), err
        return
    assert group in {row["group"] for row in json.loads(out)}

    status, out, err = run(capsys, "groups", "-b", b, "--json", "describe", group)
    if status:
        assert _failed_cleanly(status, err), err
        return
    (row,) = [r for r in json.loads(out) if r.get("topic") == topic]
    assert row["current_offset"] == COMMITTED and row["lag"] == row["log_end_offset"] - COMMITTED
    if target.name == "reference":  # Tansu's latest offset counts differently: the row reports what it says
        assert row["log_end_offset"] == RECORDS
    assert row["state"] in ("EMPTY", "Empty")
    status, out, _err = run(capsys, "groups", "-b", b, "describe", group)
    header, *lines = out.splitlines()
    assert header.split()[:4] == ["GROUP", "STATE", "TOPIC", "PARTITION"] and lines

    status, out, err = run(capsys, "groups", "-b", b, "--json", "reset-offsets", group, "--topic", topic,
                           "--to-earliest")
    assert status == 0 and json.loads(out)[0]["new_offset"] == 0, err
    status, out, err = run(capsys, "groups", "-b", b, "reset-offsets", group, "--topic", f"{topic}:0",
                           "--shift-by", "-2", "--execute")
    if status:
        assert _failed_cleanly(status, err), err
    else:
        _status, out, _err = run(capsys, "groups", "-b", b, "--json", "describe", group)
        (row,) = [r for r in json.loads(out) if r.get("topic") == topic]
        assert row["current_offset"] == min(COMMITTED - 2, row["log_end_offset"])  # clamped to the log

    status, out, err = run(capsys, "groups", "-b", b, "delete", group)
    if status:
        assert _failed_cleanly(status, err), err
        return
    _status, out, _err = run(capsys, "groups", "-b", b, "--json", "list")
    assert group not in {row["group"] for row in json.loads(out)}


def test_unknown_group_and_bad_arguments(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    status, _out, err = run(capsys, "groups", "-b", target.bootstrap_servers, "delete", "no-such-group")
    if target.name == "reference":
        assert _failed_cleanly(status, err) and "GROUP_ID_NOT_FOUND" in err, err
    else:  # Tansu answers an unknown group's deletion without an error: the command says what it was told
        assert status == 0 or _failed_cleanly(status, err), err
    with pytest.raises(SystemExit) as usage:
        main(["groups", "-b", target.bootstrap_servers, "reset-offsets", "g", "--topic", "t"])
    assert usage.value.code == 2
