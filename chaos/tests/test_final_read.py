"""The isolation of the reads after the faults, against one reference broker process (about 5 s).

The consume-transform-produce campaign (seed 500, kill + partition-leader + clock faults) was judged
``duplicate=200 poll_skip=3`` on a correct broker: one batch's transaction was aborted (its offsets
commit was refused with UNKNOWN_MEMBER_ID after a rebalance) and done again, and the final read,
made with the producing workload's read_uncommitted options, returned the aborted outputs beside
the committed ones. The live read_committed readers had skipped them, as they should.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from chaos.history import Recorder
from chaos.runner import _create_topic, reads_committed
from chaos.workloads.queue import QueueOptions, QueueWorkload, high_watermarks
from fixtures.targets import Target, launch


@pytest.fixture(scope="module")
def broker() -> Iterator[Target]:
    with launch("reference") as target:
        yield target


def _transaction(producer: Producer, topic: str, values: list[str], *, commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
    producer.flush(10)
    if commit:
        producer.commit_transaction(10)
    else:
        producer.abort_transaction(10)


def _final_values(target: Target, topic: str, read_committed: bool | None) -> list[str]:
    recorder = Recorder({"workload": "transactional", "topic": topic})
    options = QueueOptions(topic, partitions=1, producers=0, consumers=0)
    workload = QueueWorkload(recorder, target.bootstrap_servers, options, group=f"{topic}-{read_committed}")
    highs = high_watermarks(target.bootstrap_servers, [topic], 1)
    assert highs is not None
    assert workload.final_read(highs, 20.0, read_committed=read_committed)
    return [
        r[3] for op in recorder.history.ops if op.f == "poll" and op.type == "ok" for r in op.records or []
    ]


def test_a_transactional_campaign_reads_committed_after_the_faults(broker: Target) -> None:
    topic = f"final-{uuid.uuid4().hex[:6]}"
    _create_topic(broker.bootstrap_servers, topic, 1, 1, {})
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": topic})
    producer.init_transactions(10)
    _transaction(producer, topic, ["aborted-1", "aborted-2"], commit=False)
    _transaction(producer, topic, ["committed-1", "committed-2"], commit=True)

    assert reads_committed("transactional") is True
    assert reads_committed("txn-append") is True
    judged = _final_values(broker, topic, reads_committed("transactional"))
    assert judged == ["committed-1", "committed-2"], judged
    # the producing workload's own isolation shows the aborted records: what the campaign read before
    unjudged = _final_values(broker, topic, reads_committed("queue"))
    assert "aborted-1" in unjudged and "committed-2" in unjudged, unjudged
