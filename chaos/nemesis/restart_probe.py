"""The restart probe: what a node started again after a kill first says about a topic that exists.

A broker that opens its client listener before its metadata has caught up with the cluster answers
from a stale image: Metadata names an existing topic UNKNOWN_TOPIC_OR_PARTITION (or leaves it out),
Fetch says UNKNOWN_TOPIC_ID, and a client that believes it (librdkafka) stalls until its next
periodic metadata refresh. Kafka's broker enables request processing only after the controller
has acknowledged it caught up with the metadata log and its first image is published
(apache/kafka ``core/src/main/scala/kafka/server/BrokerServer.scala``: ``startup`` waits for the
lifecycle manager's initial catch-up, then ``socketServer.enableRequestProcessing``). The reference
broker had this defect (fixed in be82885, ``Broker._maybe_open_to_clients``); this probe looks for
the class in any target, from outside.

When the nemesis starts a killed (or bounced) node again, the probe, in a thread of its own:

1. connects to the node's own address (not its proxy, which always accepts) as soon as its port
   accepts, polling every :data:`POLL_S` for at most ``accept_s``;
2. sends Metadata for the campaign's topic (the highest version up to 12 the node advertises) and
   classifies the first answer (:func:`classify`): ``named`` (the topic with a leader for every
   partition), ``leaderless`` (named, some partition without a leader), ``unknown`` (error 3
   UNKNOWN_TOPIC_OR_PARTITION, 100 UNKNOWN_TOPIC_ID, or not listed), ``error`` (another code);
   no answer within ``answer_s`` is ``no-answer``: a broker may hold requests until it has caught
   up, which is what Kafka does, so waiting is never held against it;
3. after ``unknown``, asks again every :data:`CONFIRM_EVERY_S` for at most ``confirm_s`` until the
   node names the topic: a node that later names it, under the id the topic had before the kill
   (learnt once at the campaign's start, :func:`topic_id_of`), proves the topic existed all along
   and that its first answer came from metadata that had not caught up (``confirmed_after_s``). A
   node that never names it again, or names it under a new id (``recreated``: a producer's
   auto-creation after the node lost it), lost the topic outright (Tansu's memory storage): the
   lost-write checkers judge that, not this one.

Each probe is a ``restart-probe`` op pair in the history (process ``restart-probe``): the invoke
names the node, the fault and the topic; the completion (``ok`` with an answer, ``fail`` without)
carries the outcome and its figures. :mod:`chaos.checkers.restart_probe` turns confirmed
``unknown`` outcomes into the anomaly ``restart_answered_uncaught_up``.

Bounds: every wait is bounded by the probe's three durations; the answer is read by the wire
client, which bounds frame sizes; traffic goes only to the node's own (loopback) address.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chaos.history import Op, Recorder
from fixtures.wire import WireClient, WireError, build_request

PROCESS = "restart-probe"
"""The history process (and ``f``) of the probe's ops."""
NAMED, LEADERLESS, UNKNOWN, ERROR, NO_ANSWER, UNREACHABLE = (
    "named", "leaderless", "unknown", "error", "no-answer", "unreachable",
)  # fmt: skip
UNKNOWN_CODES = (3, 100)
"""UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID: the topic does not exist, says the node."""
METADATA_MAX = 12
POLL_S = 0.02
"""How often the probe tries the port (Node.start's own wait polls as often)."""
CONFIRM_EVERY_S = 0.25
CLIENT_ID = "kafka-harness-restart-probe"
ZERO_ID = "00000000-0000-0000-0000-000000000000"


def classify(answer: Any, topic: str) -> tuple[str, int | None]:
    """(outcome, the topic's error code) of a Metadata answer asked about ``topic``: ``named`` when
    it lists the topic without error and with a leader for every partition, ``leaderless`` when
    some partition has none (or none is listed), ``unknown`` when it says error 3 or 100 or does not
    list the topic at all, ``error`` for any other code."""
    entries = [t for t in (getattr(answer, "topics", None) or ()) if getattr(t, "name", None) == topic]
    if not entries:
        return UNKNOWN, None
    code = int(entries[0].error_code)
    if code in UNKNOWN_CODES:
        return UNKNOWN, code
    if code != 0:
        return ERROR, code
    partitions = list(entries[0].partitions or ())
    if partitions and all(int(p.leader_id) >= 0 for p in partitions):
        return NAMED, code
    return LEADERLESS, code


@dataclass(frozen=True)
class Bounds:
    accept_s: float = 30.0
    """How long the node's port may take to accept after its start returned."""
    answer_s: float = 20.0
    """How long the first answer may take; unanswered by then is ``no-answer`` (not an anomaly)."""
    confirm_s: float = 15.0
    """After ``unknown``: how long the node may take to name the topic."""


def _accepting(host: str, port: int, bound_s: float) -> bool:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
            return True
        time.sleep(POLL_S)
    return False


def _ask(wire: WireClient, topic: str, version: int, timeout_s: float) -> Any:
    """Metadata for ``topic`` alone, never creating it."""
    entity = build_request(
        "metadata", version, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    )
    return wire.send(entity, timeout_s=timeout_s)


def topic_id(answer: Any, topic: str) -> str | None:
    """The topic's id in a Metadata answer (v10+), None when absent or all zeros."""
    for entry in getattr(answer, "topics", None) or ():
        if getattr(entry, "name", None) == topic:
            found = getattr(entry, "topic_id", None)
            return str(found) if found is not None and str(found) != ZERO_ID else None
    return None


def topic_id_of(address: str, topic: str, timeout_s: float = 10.0) -> str | None:
    """The topic's id as ``address`` names it (Metadata v10+); None when it cannot say."""
    try:
        with WireClient(address, timeout_s=timeout_s, client_id=CLIENT_ID) as wire:
            top = wire.api_versions().get(3, (0, METADATA_MAX))[1]
            return (
                topic_id(_ask(wire, topic, min(METADATA_MAX, top), timeout_s), topic) if top >= 10 else None
            )
    except (OSError, WireError):
        return None


def probe(
    host: str, port: int, topic: str, bounds: Bounds = Bounds(), known_id: str | None = None
) -> dict[str, Any]:
    """Probe one restarted node; returns the outcome and its figures (seconds). ``known_id``: the
    topic's id before the kill; a node that names the topic later under another id recreated it
    (``recreated``: it had lost it), which is not a node answering before it caught up."""
    began = time.monotonic()
    if not _accepting(host, port, bounds.accept_s):
        return {"outcome": UNREACHABLE, "accept_s": None}
    accepted = time.monotonic()
    out: dict[str, Any] = {"accept_s": round(accepted - began, 3)}
    try:
        with WireClient(f"{host}:{port}", timeout_s=bounds.answer_s, client_id=CLIENT_ID) as wire:
            top = wire.api_versions().get(3, (0, METADATA_MAX))[1]
            version = max(1, min(METADATA_MAX, top))
            answer = _ask(wire, topic, version, max(0.1, bounds.answer_s - (time.monotonic() - accepted)))
            outcome, code = classify(answer, topic)
            out.update(
                outcome=outcome, code=code, version=version, answer_s=round(time.monotonic() - accepted, 3)
            )
            if outcome == UNKNOWN:
                out["confirmed_after_s"], named_id = _confirm(
                    wire, topic, version, bounds.confirm_s, accepted
                )
                if known_id is not None and named_id is not None and named_id != known_id:
                    out.update(recreated=True, named_id=named_id, known_id=known_id)
    except (OSError, WireError) as exc:
        if "outcome" not in out:
            out.update(outcome=NO_ANSWER, error=f"{type(exc).__name__}: {exc}"[:300])
        else:
            out["confirm_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return out


def _confirm(
    wire: WireClient, topic: str, version: int, bound_s: float, accepted: float
) -> tuple[float | None, str | None]:
    """(seconds after the port accepted when the node named the topic, the id it named it with);
    (None, None) if it did not within ``bound_s``."""
    deadline = time.monotonic() + bound_s
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(CONFIRM_EVERY_S, left))
        answer = _ask(wire, topic, version, max(0.1, deadline - time.monotonic()))
        if classify(answer, topic)[0] in (NAMED, LEADERLESS):
            return round(time.monotonic() - accepted, 3), topic_id(answer, topic)
    return None, None


@dataclass
class RestartProbe:
    """Probes each restarted node in a thread; :meth:`finish` waits for them (bounded)."""

    recorder: Recorder
    topic: str
    bounds: Bounds = field(default_factory=Bounds)
    topic_id: str | None = None
    """The topic's id before any kill (:func:`topic_id_of`), to tell a recreated topic apart."""
    run: Callable[[str, int, str, Bounds, str | None], dict[str, Any]] = probe
    threads: list[threading.Thread] = field(default_factory=list)

    def restarted(self, node_id: int, host: str, port: int, fault: dict[str, Any]) -> threading.Thread:
        """Start probing ``node_id`` (whose start just returned) at ``host:port``."""
        invoked = self.recorder.invoke(
            PROCESS, PROCESS,
            value={"node": node_id, "address": f"{host}:{port}", "fault": fault.get("fault"),
                   "id": fault.get("id"), "topic": self.topic},
        )  # fmt: skip
        thread = threading.Thread(
            target=self._probe, args=(invoked, host, port), name=f"restart-probe-{node_id}", daemon=True
        )
        self.threads.append(thread)
        thread.start()
        return thread

    def _probe(self, invoked: Op, host: str, port: int) -> None:
        try:
            found = self.run(host, port, self.topic, self.bounds, self.topic_id)
        except Exception as exc:  # recorded, never fatal
            found = {"outcome": NO_ANSWER, "error": f"{type(exc).__name__}: {exc}"[:300]}
        answered = found.get("outcome") in (NAMED, LEADERLESS, UNKNOWN, ERROR)
        self.recorder.complete(invoked, "ok" if answered else "fail", value={**invoked.value, **found})

    def finish(self, bound_s: float | None = None) -> None:
        """Wait for every probe still running, at most ``bound_s`` in all (default: one probe's bounds)."""
        b = self.bounds
        deadline = time.monotonic() + (
            bound_s if bound_s is not None else b.accept_s + b.answer_s + b.confirm_s
        )
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.threads = [t for t in self.threads if t.is_alive()]
