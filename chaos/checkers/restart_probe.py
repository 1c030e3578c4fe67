"""``restart_answered_uncaught_up``: a node started again after a kill answered that a topic that
exists does not (:mod:`chaos.nemesis.restart_probe` records what each restarted node first said).

A probe op counts when its first Metadata answer was ``unknown`` (error 3 UNKNOWN_TOPIC_OR_PARTITION,
100 UNKNOWN_TOPIC_ID, or the topic left out) and the same node named the topic later
(``confirmed_after_s``): the topic existed all along and the node answered from metadata that had
not caught up with the cluster's. Kafka's broker enables request processing only once it has caught
up (apache/kafka ``core/src/main/scala/kafka/server/BrokerServer.scala``), so a client of it never
hears this. Waiting until caught up (``no-answer`` within the probe's bound), naming the topic,
naming it without a leader and other error codes are not this anomaly; neither is ``unknown`` never
confirmed, or confirmed under a new topic id (``recreated``): the node lost the topic, which the
lost-write checkers judge.

Its figures go to the result's stats: how many restarts were probed, what their first answers were,
and how long the slowest first answer took.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chaos.history import History

from .queue import Anomaly

NAME = "restart_answered_uncaught_up"
PROCESS = "restart-probe"
"""The probe's process in the history (:data:`chaos.nemesis.restart_probe.PROCESS`)."""


def answered_uncaught_up(history: History) -> tuple[list[Anomaly], dict[str, Any]]:
    """(anomalies, stats) of the restart probes; ([], {}) when the history has none."""
    invokes: dict[tuple[Any, Any], int] = {}  # (node, fault id) -> the probe's invoke
    anomalies: list[Anomaly] = []
    outcomes: Counter[str] = Counter()
    answers: list[float] = []
    for op in history.ops:
        if op.process != PROCESS or op.f != PROCESS or not isinstance(op.value, dict):
            continue
        value = op.value
        key = (value.get("node"), value.get("id"))
        if op.type == "invoke":
            invokes[key] = op.index
            continue
        invoked = invokes.pop(key, None)
        outcomes[str(value.get("outcome"))] += 1
        if isinstance(value.get("answer_s"), int | float):
            answers.append(float(value["answer_s"]))
        confirmed = value.get("confirmed_after_s")
        if (
            value.get("outcome") == "unknown"
            and isinstance(confirmed, int | float)
            and not value.get("recreated")
        ):
            said = f"error {value['code']}" if value.get("code") is not None else "no such topic"
            anomalies.append(
                Anomaly(
                    NAME,
                    f"node {value.get('node')} started again after {value.get('fault')} answered Metadata "
                    f"for the existing topic {value.get('topic')!r} with {said} "
                    f"{value.get('answer_s')} s after its port opened; it named the topic "
                    f"{confirmed} s after the port opened",
                    [op.index] if invoked is None else [invoked, op.index],
                    {"node": value.get("node"), "code": value.get("code"), "confirmed_after_s": confirmed},
                )
            )
    if not outcomes:
        return [], {}
    stats: dict[str, Any] = {
        "restart_probes": sum(outcomes.values()),
        "restart_probe_outcomes": dict(sorted(outcomes.items())),
        "restart_probe_slowest_answer_s": max(answers) if answers else None,
    }
    return anomalies, stats
