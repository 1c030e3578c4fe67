"""The probe workloads (:mod:`chaos.workloads.probes`) against one reference broker process, about
3 s each, no faults: each records what its checker judges (commit requests, two inits of one id and
the first producer fenced, rewinds after aborts), and the history is valid on a correct broker.
That the checkers catch the anomalies is shown on hand-made histories (test_probe_checkers.py) and
on a broken broker by ``kafka-harness mutants --black-box`` (lso-above-hw: early_read)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from chaos.checkers import check
from chaos.history import Recorder
from chaos.runner import _create_topic
from chaos.workloads.probes import ProbeWorkload
from fixtures.targets import Target, launch


@pytest.fixture(scope="module")
def broker() -> Iterator[Target]:
    with launch("reference") as target:
        yield target


def _run(target: Target, kind: str, seconds: float = 3.0) -> Recorder:
    topic = f"probe-{uuid.uuid4().hex[:6]}"
    _create_topic(target.bootstrap_servers, topic, 2, 1, {})
    recorder = Recorder({"workload": kind, "idempotence": True, "topic": topic})
    workload = ProbeWorkload(
        recorder, target.bootstrap_servers, topic, kind=kind, partitions=2, group=topic, rate=20
    )
    workload.start()
    try:
        assert workload.wait_ready(30.0) is not None, workload.errors
        time.sleep(seconds)
        workload.stop_producers()
    finally:
        workload.stop()
    print(kind, workload.outcomes, workload.errors)
    return recorder


def test_early_read_records_commit_requests_and_is_valid(broker: Target) -> None:
    history = _run(broker, "early-read").history
    committed = [op for op in history.ops if op.f == "txn" and op.type == "ok"]
    assert committed and all(isinstance(op.value["commit_requested"], float) for op in committed)
    assert any(op.f == "poll" for op in history.ops)
    result = check(history)
    assert not result.bad, result.bad


def test_producer_fence_fences_the_first_producer_and_is_valid(broker: Target) -> None:
    history = _run(broker, "producer-fence").history
    inits: dict[str, set[int | str]] = {}
    for op in history.ops:
        if op.f == "init" and op.type == "ok":
            inits.setdefault(op.value["transactional_id"], set()).add(op.process)
    assert inits and all(len(processes) == 2 for processes in inits.values())
    fenced = [op for op in history.ops if op.f == "txn" and op.type == "info"]
    assert fenced and all(op.error == "_FENCED" for op in fenced), {op.error for op in fenced}
    assert not check(history).bad


def test_abort_rewind_rewinds_after_aborts_and_is_valid(broker: Target) -> None:
    history = _run(broker, "abort-rewind").history
    seeks = [op for op in history.ops if op.f == "assign" and op.type == "ok" and isinstance(op.value, dict)]
    assert seeks and any(op.type == "fail" and op.f == "txn" for op in history.ops)
    assert not check(history).bad
