"""Checkers: pure functions of a history returning validity and named anomalies with their ops.

Validity is ``True``, ``False`` or ``"unknown"`` (Jepsen's convention: false beats unknown beats
true). Which anomalies make a history invalid depends on what the run promised (``meta``):
without idempotence a retried send may be stored twice or out of order, so ``duplicate`` and
``nonmonotonic_send`` are reported but do not count; without acks=all a record the leader alone
acknowledged may be lost on failover, so the lost and unread classes do not count and
``inconsistent_offsets`` compares only what readers saw; ``unseen`` counts only when consumers drained
to the end after the faults (``final_drain``). ``unreadable_after_restart`` (:mod:`.restart`)
judges the durability-after-restart phase when the history has one, and always counts, as does
``restart_answered_uncaught_up`` (:mod:`.restart_probe`: a node started again after a kill said an
existing topic did not exist, answering before its metadata caught up). The
dependency graph (:mod:`.graph`: G0, G1a, G1b, G1c, G-single, G2, the ``int_`` forms,
``precommitted_read``) judges the transactional list-append's histories; the cycles Kafka does not
promise to prevent count only with ``meta.strict_cycles``. The probe workloads' anomalies
(:mod:`.probes`: ``early_read``, ``fenced_write``, ``rewind_skip``, ``rewind_behind``) are looked for
in every history (they need ops only those workloads record) and always count, as do the share-group
workload's (:mod:`.share`: ``share_lost``, ``redelivered_accepted``, ``redelivered_rejected``,
``concurrent_acquire``, ``delivery_over_limit``, ``delivery_count_regressed``, ``unproduced_delivery``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from chaos.history import History

from . import graph, probes, queue, restart, restart_probe, share
from .analysis import analyse
from .availability import Availability, availability
from .queue import Anomaly

Validity = bool | Literal["unknown"]

ORDER = (
    "lost_write",
    "duplicate",
    "inconsistent_offsets",
    "poll_skip",
    "nonmonotonic_poll",
    "nonmonotonic_send",
    "unseen",
    "aborted_read",
    "validate_delivery",
    "unreadable_after_restart",
    restart_probe.NAME,
    *probes.NAMES,
    *share.NAMES,
    *graph.NAMES,
)
GRAPH_WORKLOADS = ("txn-append",)
"""Workloads whose histories the dependency graph (:mod:`.graph`) judges too (or ``meta.graph``)."""
SHORT = {"lost_write": "lost", "inconsistent_offsets": "inconsistent"}


@dataclass
class CheckResult:
    valid: Validity
    anomalies: dict[str, list[Anomaly]]
    bad: list[str]
    """Anomaly names that make this history invalid under its run's promises."""
    availability: Availability
    stats: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {name: len(self.anomalies.get(name, [])) for name in ORDER}

    def verdict_line(self) -> str:
        return verdict_line(self.valid, self.bad, self.counts())

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "bad": self.bad,
            "counts": self.counts(),
            "stats": self.stats,
            "availability": self.availability.summary(),
            "anomalies": {n: [a.to_json() for a in items[:50]] for n, items in self.anomalies.items()},
        }


def verdict_line(valid: Validity, bad: list[str], counts: dict[str, int]) -> str:
    if valid is True:
        return "VERDICT: valid"
    pairs = " ".join(f"{SHORT.get(n, n)}={counts.get(n, 0)}" for n in ORDER if n in bad or counts.get(n))
    if valid == "unknown":
        return f"VERDICT: unknown {pairs}".rstrip()
    return f"VERDICT: invalid {pairs}"


def judge(
    meta: dict[str, Any], counts: dict[str, int], *, acked: int, read_any: bool, wrote_any: bool
) -> tuple[Validity, list[str]]:
    """(validity, the anomaly names that make it so) from anomaly counts and the run's promises
    (``meta``); shared by :func:`check` and the Spark checkers (:mod:`.spark_checks`)."""
    allowed = set(meta.get("allowed_anomalies", []))
    if not meta.get("strict_cycles", False):
        allowed |= graph.CYCLES_ALLOWED_BY_KAFKA
    if not meta.get("idempotence", False):
        allowed |= {"duplicate", "nonmonotonic_send"}
    if str(meta.get("acks", "all")) not in ("all", "-1"):  # the leader alone acknowledged: lost on failover
        allowed |= {"lost_write", "unseen", "validate_delivery", "unreadable_after_restart"}
    if not meta.get("final_drain", False):
        allowed |= {"unseen", "validate_delivery"}
    bad = [name for name in ORDER if counts.get(name) and name not in allowed]
    valid: Validity
    if bad:
        valid = False
    elif acked and not read_any:
        valid = "unknown"  # nothing was read: nothing can be said about what was stored
    elif not wrote_any and meta.get("workload") in ("queue", "transactional", "share", *GRAPH_WORKLOADS):
        valid = "unknown"  # no producer ever sent: a run that tested nothing is not a pass
    else:
        valid = True
    return valid, bad


def check(history: History) -> CheckResult:
    meta = history.meta
    idempotence = bool(meta.get("idempotence", False))
    acks_all = str(meta.get("acks", "all")) in ("all", "-1")
    a = analyse(history)
    lost, unseen = queue.acked_unread(a)
    skips, backwards = queue.poll_order(a)
    anomalies = {
        "lost_write": lost,
        "duplicate": queue.duplicates(a),
        "inconsistent_offsets": queue.inconsistent_offsets(a, acks_all=acks_all),
        "poll_skip": skips,
        "nonmonotonic_poll": backwards,
        "nonmonotonic_send": queue.nonmonotonic_sends(a),
        "unseen": unseen,
        "aborted_read": queue.aborted_reads(a),
        "validate_delivery": queue.validate_delivery(a, idempotence),
    }
    anomalies[restart.NAME], restart_stats = restart.unreadable_after_restart(history, a)
    anomalies[restart_probe.NAME], probe_stats = restart_probe.answered_uncaught_up(history)
    anomalies.update(probes.check_probes(history, a))
    share_found, share_stats = share.check_share(history)
    anomalies.update(share_found)
    graph_stats: dict[str, int] = {}
    if meta.get("workload") in GRAPH_WORKLOADS or meta.get("graph"):
        found, graph_stats = graph.check_graph(history)
        anomalies.update(found)
    acked = sum(1 for w in a.writes.values() if w.status == "ok")
    stats = {
        "ops": len(history),
        "writes": len(a.writes),
        "acked": acked,
        "reads": len(a.reads),
        "distinct_read": len(a.read_values),
        **restart_stats,
        **probe_stats,
        **graph_stats,
        **share_stats,
    }
    counts = {name: len(items) for name, items in anomalies.items()}
    read_any = bool(a.read_values) or bool(share_stats.get("share_deliveries"))
    valid, bad = judge(meta, counts, acked=acked, read_any=read_any, wrote_any=bool(a.writes))
    if valid is True and meta.get("workload") == "share" and not share_stats.get("share_deliveries"):
        valid = "unknown"  # no share consumer was ever given a record: nothing was tested
    return CheckResult(valid, anomalies, bad, availability(history), stats)
