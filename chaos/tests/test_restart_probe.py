"""The restart probe (:mod:`chaos.nemesis.restart_probe`) and its checker
(:mod:`chaos.checkers.restart_probe`): how a restarted node's first Metadata answer is classified,
the probe against a scripted fake broker (named, unknown then named, silent, never listening), and
which recorded outcomes make a history invalid as ``restart_answered_uncaught_up``."""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from chaos.checkers import check
from chaos.checkers.restart_probe import NAME
from chaos.history import RESTART_FAULT, Recorder
from chaos.nemesis import restart_probe as rp
from chaos.nemesis.faults import Nemesis
from chaos.nemesis.schedule import Planned
from chaos.nemesis.topology import Topology
from chaos.workloads.restart import kill_and_restart
from fixtures.targets import free_port
from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import encode_response, peek_header

from .test_checkers import Builder

TOPIC = "t"
METADATA, API_VERSIONS = 3, 18
ID, NEW_ID = uuid.UUID(int=5), uuid.UUID(int=7)


def _answer(kind: str, partitions: int = 2) -> Any:
    """A Metadata v12 answer about TOPIC: ``named`` (leaders 1, 2; id :data:`ID`), ``renamed`` (the
    same under :data:`NEW_ID`, a recreated topic), ``unknown`` (error 3), ``absent`` (topic not
    listed), ``leaderless`` (partition 1 has leader -1), ``error`` (error 29)."""
    leaders = [1, -1] if kind == "leaderless" else [1, 2]
    parts = [
        {"partition_index": i, "leader_id": leaders[i % 2], "error_code": 0, "leader_epoch": 0,
         "replica_nodes": [1, 2], "isr_nodes": [1, 2], "offline_replicas": []}
        for i in range(partitions)
    ]  # fmt: skip
    code = {"unknown": 3, "error": 29}.get(kind, 0)
    topic = {"name": TOPIC, "error_code": code, "topic_id": NEW_ID if kind == "renamed" else ID,
             "is_internal": False, "partitions": [] if code else parts,
             "topic_authorized_operations": -2147483648}  # fmt: skip
    data = {"throttle_time": 0, "brokers": [], "cluster_id": None, "controller_id": 1,
            "topics": [] if kind == "absent" else [topic]}  # fmt: skip
    return build(response_class(METADATA, 12), data)


@pytest.mark.parametrize(
    ("kind", "outcome", "code"),
    [
        ("named", rp.NAMED, 0),
        ("unknown", rp.UNKNOWN, 3),
        ("absent", rp.UNKNOWN, None),
        ("leaderless", rp.LEADERLESS, 0),
        ("error", rp.ERROR, 29),
    ],
)
def test_a_first_answer_is_classified_by_what_it_says_of_the_topic(
    kind: str, outcome: str, code: int
) -> None:
    assert rp.classify(_answer(kind), TOPIC) == (outcome, code)


def test_a_topic_named_without_partitions_is_leaderless_and_another_topic_does_not_count() -> None:
    assert rp.classify(_answer("named", partitions=0), TOPIC) == (rp.LEADERLESS, 0)
    assert rp.classify(_answer("named"), "other") == (rp.UNKNOWN, None)


def test_the_topic_id_is_read_from_the_answer() -> None:
    assert rp.topic_id(_answer("named"), TOPIC) == str(ID)
    assert rp.topic_id(_answer("renamed"), TOPIC) == str(NEW_ID)
    assert rp.topic_id(_answer("absent"), TOPIC) is None


@contextmanager
def fake_broker(script: list[str]) -> Iterator[int]:
    """A broker on a free loopback port answering ApiVersions (Metadata v0-12) and each Metadata with
    the script's next kind (the last one repeats); ``silent`` answers nothing at all."""
    server = socket.create_server(("127.0.0.1", free_port()))
    server.settimeout(0.1)
    port = int(server.getsockname()[1])
    done = threading.Event()

    asked = [0]

    def serve_one(conn: socket.socket) -> None:
        conn.settimeout(0.2)
        buf = b""
        while not done.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                size = struct.unpack(">i", buf[:4])[0]
                frame, buf = buf[4 : 4 + size], buf[4 + size :]
                key, version, correlation_id = peek_header(frame)
                if key == API_VERSIONS:
                    body = build(response_class(API_VERSIONS, version), {
                        "error_code": 0, "throttle_time": 0,
                        "api_keys": [{"api_key": METADATA, "min_version": 0, "max_version": 12},
                                     {"api_key": API_VERSIONS, "min_version": 0, "max_version": 3}],
                    })  # fmt: skip
                else:
                    kind = script[min(asked[0], len(script) - 1)]
                    asked[0] += 1
                    if kind == "silent":
                        continue
                    body = _answer(kind)
                conn.sendall(encode_response(key, version, correlation_id, body))

    def serve() -> None:
        """One connection at a time (the probe's port check, then its client), a bounded number."""
        for _ in range(200):
            if done.is_set():
                return
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                serve_one(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        done.set()
        server.close()
        thread.join(5)


FAST = rp.Bounds(accept_s=1.0, answer_s=1.0, confirm_s=2.0)


def test_the_probe_reports_a_named_topic_and_its_figures() -> None:
    with fake_broker(["named"]) as port:
        found = rp.probe("127.0.0.1", port, TOPIC, FAST)
    assert found["outcome"] == rp.NAMED and found["version"] == 12
    assert "confirmed_after_s" not in found
    print(f"named: port accepted after {found['accept_s']} s, answered after {found['answer_s']} s")


def test_the_probe_asks_again_after_unknown_until_the_node_names_the_topic() -> None:
    with fake_broker(["unknown", "unknown", "named"]) as port:
        found = rp.probe("127.0.0.1", port, TOPIC, FAST)
    assert found["outcome"] == rp.UNKNOWN and found["code"] == 3
    assert isinstance(found["confirmed_after_s"], float)


def test_a_topic_named_again_under_a_new_id_was_recreated() -> None:
    """The node lost the topic and a producer's auto-creation made a new one: not caught-up trouble."""
    with fake_broker(["unknown", "renamed"]) as port:
        found = rp.probe("127.0.0.1", port, TOPIC, FAST, known_id=str(ID))
    assert found["outcome"] == rp.UNKNOWN and found["recreated"] is True and found["named_id"] == str(NEW_ID)
    with fake_broker(["unknown", "named"]) as port:
        found = rp.probe("127.0.0.1", port, TOPIC, FAST, known_id=str(ID))
    assert found["confirmed_after_s"] is not None and "recreated" not in found


def test_the_topic_id_is_learnt_from_a_bootstrap_address() -> None:
    with fake_broker(["named"]) as port:
        assert rp.topic_id_of(f"127.0.0.1:{port}", TOPIC) == str(ID)
    assert rp.topic_id_of(f"127.0.0.1:{free_port()}", TOPIC) is None


def test_unknown_for_good_is_recorded_unconfirmed() -> None:
    with fake_broker(["unknown"]) as port:
        found = rp.probe("127.0.0.1", port, TOPIC, rp.Bounds(accept_s=1.0, answer_s=1.0, confirm_s=0.6))
    assert found["outcome"] == rp.UNKNOWN and found["confirmed_after_s"] is None


def test_a_node_that_holds_its_answer_is_no_answer_and_one_never_listening_unreachable() -> None:
    with fake_broker(["silent"]) as port:
        found = rp.probe("127.0.0.1", port, TOPIC, rp.Bounds(accept_s=1.0, answer_s=0.5, confirm_s=0.5))
    assert found["outcome"] == rp.NO_ANSWER and "no answer" in found["error"]
    closed = free_port()
    assert rp.probe("127.0.0.1", closed, TOPIC, rp.Bounds(accept_s=0.3))["outcome"] == rp.UNREACHABLE


def test_the_restart_probe_records_an_op_pair_per_restart() -> None:
    recorder = Recorder()
    answers: list[dict[str, Any]] = [{"outcome": rp.NAMED, "answer_s": 0.1}, {"outcome": rp.NO_ANSWER}]
    outcomes = iter(answers)
    probe = rp.RestartProbe(recorder, TOPIC, run=lambda host, port, topic, bounds, known: next(outcomes))
    probe.restarted(2, "127.0.0.1", 1, {"fault": "kill", "id": 4})
    probe.finish(5)
    probe.restarted(3, "127.0.0.1", 2, {"fault": "bounce", "id": 5})
    probe.finish(5)
    ops = [(op.type, op.value["node"], op.value.get("outcome")) for op in recorder.history.ops]
    assert ops == [("invoke", 2, None), ("ok", 2, rp.NAMED), ("invoke", 3, None), ("fail", 3, rp.NO_ANSWER)]
    assert all(op.process == rp.PROCESS == op.f for op in recorder.history.ops)


# -- where the nemesis and the restart phase call it ---------------------------------------------------


class _Node:
    """A process stand-in: what the nemesis and the restart phase call, with its own address."""

    def __init__(self, node_id: int) -> None:
        self.node_id, self.host, self.port = node_id, "127.0.0.1", 9000 + node_id
        self.calls: list[str] = []
        self.is_running = True

    def __getattr__(self, name: str) -> Any:
        if name in ("kill", "start", "pause", "resume", "stop"):
            return lambda: self.calls.append(name)
        raise AttributeError(name)


class _Target:
    def __init__(self, *ids: int) -> None:
        self.nodes = [_Node(i) for i in ids]

    def node(self, node_id: int) -> _Node:
        return next(n for n in self.nodes if n.node_id == node_id)


def _stub_probe(recorder: Recorder) -> tuple[rp.RestartProbe, list[tuple[str, int]]]:
    asked: list[tuple[str, int]] = []

    def run(host: str, port: int, topic: str, bounds: rp.Bounds, known: str | None) -> dict[str, Any]:
        asked.append((host, port))
        return {"outcome": rp.NAMED}

    return rp.RestartProbe(recorder, TOPIC, topic_id=str(ID), run=run), asked


def test_the_nemesis_probes_a_killed_node_it_starts_again_and_not_a_paused_one() -> None:
    recorder = Recorder()
    target = _Target(1)
    probe, asked = _stub_probe(recorder)
    nemesis = Nemesis(recorder, Topology.direct([1]), target, TOPIC, probe=probe)  # type: ignore[arg-type]
    for plan in (Planned(0, "kill", 0.0, 1.0, 0), Planned(1, "pause", 0.0, 1.0, 0)):
        nemesis.start(plan)
        nemesis.stop(plan)
    nemesis.heal()
    assert target.nodes[0].calls == ["kill", "start", "pause", "resume"]
    assert asked == [("127.0.0.1", 9001)], "the node's own address, once, after its start"
    probes = [op for op in recorder.history.ops if op.process == rp.PROCESS]
    assert [(op.type, op.value["fault"], op.value["id"]) for op in probes] == [
        ("invoke", "kill", 0), ("ok", "kill", 0),
    ]  # fmt: skip


def test_the_restart_phase_probes_every_node_it_starts_again() -> None:
    recorder = Recorder()
    probe, asked = _stub_probe(recorder)
    kill_and_restart(recorder, _Target(1, 2, 3), 7, lambda: None, probe)  # type: ignore[arg-type]
    probe.finish(5)
    assert sorted(asked) == [("127.0.0.1", 9001), ("127.0.0.1", 9002), ("127.0.0.1", 9003)]
    done = [op.value for op in recorder.history.ops if op.process == rp.PROCESS and op.type == "ok"]
    assert sorted(v["node"] for v in done) == [1, 2, 3]
    assert {(v["fault"], v["id"]) for v in done} == {(RESTART_FAULT, 7)}


# -- the checker ---------------------------------------------------------------------------------------


def _probed(b: Builder, node: int, type_: str, **found: Any) -> Builder:
    value = {"node": node, "fault": "kill", "id": node, "topic": TOPIC, "address": "127.0.0.1:1"}
    b._op("invoke", rp.PROCESS, rp.PROCESS, value=value)
    b._op(type_, rp.PROCESS, rp.PROCESS, value={**value, **found})
    return b


def _history() -> Builder:
    return Builder().send(0, "a", 0, 0).poll(1, (0, 0, "a"))


def test_an_existing_topic_answered_unknown_after_a_restart_makes_the_history_invalid() -> None:
    b = _probed(_history(), 1, "ok", outcome=rp.NAMED, code=0, answer_s=6.3)
    b = _probed(b, 3, "ok", outcome=rp.UNKNOWN, code=3, answer_s=0.05, confirmed_after_s=0.3)
    result = check(b.history)
    assert result.valid is False and result.bad == [NAME]
    assert f"{NAME}=1" in result.verdict_line()
    (anomaly,) = result.anomalies[NAME]
    assert anomaly.detail["node"] == 3 and "error 3" in anomaly.description
    assert [b.history.ops[i].type for i in anomaly.ops] == ["invoke", "ok"]
    assert result.stats["restart_probes"] == 2
    assert result.stats["restart_probe_outcomes"] == {"named": 1, "unknown": 1}
    assert result.stats["restart_probe_slowest_answer_s"] == 6.3


@pytest.mark.parametrize(
    ("type_", "found"),
    [
        ("ok", {"outcome": rp.NAMED, "code": 0}),
        ("fail", {"outcome": rp.NO_ANSWER, "error": "WireError: no answer within 20 s"}),
        ("ok", {"outcome": rp.UNKNOWN, "code": 3, "confirmed_after_s": None}),
        ("ok", {"outcome": rp.UNKNOWN, "code": 3, "confirmed_after_s": 0.4, "recreated": True}),
        ("ok", {"outcome": rp.LEADERLESS, "code": 0}),
        ("ok", {"outcome": rp.ERROR, "code": 29}),
        ("fail", {"outcome": rp.UNREACHABLE}),
    ],
)
def test_waiting_naming_or_an_unconfirmed_unknown_is_not_the_anomaly(
    type_: str, found: dict[str, Any]
) -> None:
    result = check(_probed(_history(), 2, type_, **found).history)
    assert result.valid is True and result.counts()[NAME] == 0, result.verdict_line()
    assert result.stats["restart_probes"] == 1


def test_a_history_without_probes_has_no_probe_figures() -> None:
    result = check(_history().history)
    assert result.counts()[NAME] == 0 and "restart_probes" not in result.stats


def test_finish_is_bounded() -> None:
    release = threading.Event()

    def stuck(host: str, port: int, topic: str, bounds: rp.Bounds, known: str | None) -> dict[str, Any]:
        release.wait(10)
        return {"outcome": rp.NAMED}

    probe = rp.RestartProbe(Recorder(), TOPIC, run=stuck)
    probe.restarted(1, "127.0.0.1", 1, {"fault": "kill", "id": 0})
    began = time.monotonic()
    probe.finish(0.2)
    waited = time.monotonic() - began
    assert len(probe.threads) == 1, "the probe still running is kept"
    release.set()
    probe.finish(5)
    assert probe.threads == []
    print(f"finish returned after {waited:.2f} s with a probe still running")
