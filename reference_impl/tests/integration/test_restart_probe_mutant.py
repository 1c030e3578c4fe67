"""The chaos restart probe (:mod:`chaos.nemesis.restart_probe`) against a reference cluster, with and
without the seeded mode ``answer-before-caught-up`` (:mod:`reference_impl.core.mutants`), which
undoes the gate of be82885: a restarted cluster broker then answers clients before it has caught
up with the metadata log.

One three-node cluster serves both checks: node 3 runs the mode (a broker config of its own), node 2
does not. To make the window certain rather than a race, the node is started again while the two
other nodes (its controller quorum) are stopped with SIGSTOP: it cannot catch up until they are
resumed, :data:`HOLD_S` later. The correct broker holds the probe's requests until then and then
names the topic; the mutant answers at once that the topic does not exist (error 3) and names it
once it has caught up, which the probe records as confirmed: the checker's
``restart_answered_uncaught_up``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from chaos.nemesis import restart_probe as rp
from fixtures.targets import Target, launch

pytestmark = pytest.mark.slow

MODE = "answer-before-caught-up"
HOLD_S = 2.0
BOUNDS = rp.Bounds(accept_s=30.0, answer_s=30.0, confirm_s=30.0)


def _create(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 3)]).values():
        future.result(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Target, str]]:
    workdir = tmp_path_factory.mktemp("restart-probe")
    with launch(
        "reference", workdir=workdir, brokers=3, node_configs={3: [f"reference.mutant={MODE}"]}
    ) as target:
        topic = f"probe-{uuid.uuid4().hex[:6]}"
        _create(target.bootstrap_servers, topic)
        yield target, topic


def _probe_restart_held(target: Target, topic: str, node_id: int) -> dict[str, Any]:
    """Kill ``node_id``, stop the two others, start it, probe it, resume the others after HOLD_S."""
    node = target.node(node_id)
    others = [target.node(n) for n in (1, 2, 3) if n != node_id]
    node.kill()
    for other in others:
        other.pause()
    try:
        node.start()
        found: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: found.update(rp.probe(node.host, node.port, topic, BOUNDS)))
        began = time.monotonic()
        thread.start()
        time.sleep(HOLD_S)
    finally:
        for other in others:
            other.resume()
    thread.join(BOUNDS.accept_s + BOUNDS.answer_s + BOUNDS.confirm_s)
    print(f"node {node_id}: {found} (probe {time.monotonic() - began:.2f} s, quorum held {HOLD_S} s)")
    return found


def test_the_correct_broker_holds_its_answer_until_caught_up_and_names_the_topic(
    cluster: tuple[Target, str],
) -> None:
    found = _probe_restart_held(*cluster, node_id=2)
    assert found["outcome"] == rp.NAMED, found


def test_the_probe_catches_a_broker_answering_before_caught_up(cluster: tuple[Target, str]) -> None:
    found = _probe_restart_held(*cluster, node_id=3)
    assert found["outcome"] == rp.UNKNOWN and found["code"] == 3, found
    assert found["confirmed_after_s"] is not None, f"the node never named the topic: {found}"
