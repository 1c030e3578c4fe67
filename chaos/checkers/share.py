"""Checker of the share-group workload (:mod:`chaos.workloads.share`, KIP-932, issue 19).

A pure function of a history. Deliveries are the records of ``share-fetch`` completions (each with
the delivery count the broker's AcquiredRecords gave it), acknowledgements the ``share-ack`` ops
(one per ShareAcknowledge of one partition: ``ok`` applied, ``fail`` certainly not applied,
``info`` unknown). Times are the ops' monotonic seconds; a delivery *happened* somewhere between
its fetch's invoke and its completion, an acknowledgement between its invoke and its completion.

Kafka's rules, and where they are (apache/kafka ``core/src/main/java/kafka/server/share/
SharePartition.java``; KIP-932 "Managing durable share-partition state"):

* ``share_lost``: a produced record the broker acknowledged was never finished after the final
  drain: no acknowledgement ACCEPT or REJECT that may have been applied (``ok`` or ``info``), and
  never delivered with its count at the delivery limit (it may then have been archived by a
  release or a lock timeout: ``InFlightState.tryUpdateState`` archives instead of making it
  AVAILABLE once ``deliveryCount >= maxDeliveryCount``), counting as deliveries the fetches of its
  partition that got no answer after its last seen one (they may have acquired it unseen). Counted
  only when the workload ran its drain (``share-end`` op); sends after it (the restart phase's) are
  not the workload's.
* ``redelivered_accepted`` / ``redelivered_rejected``: a record delivered by a fetch sent after an
  ACCEPT (→ ACKNOWLEDGED) or REJECT (→ ARCHIVED) of it was answered without error: both states are
  terminal (``RecordState.validateTransition``), and the answer is sent only once the new state was
  written to the persister (``rollbackOrProcessStateUpdates`` completes the future after
  ``writeShareGroupState``), so no failover undoes it. An acknowledgement that failed or timed out
  leaves the record redeliverable and excuses nothing.
* ``concurrent_acquire``: two consumers held one record at once. Evidence either way: (a) consumer
  B was given the record by a fetch sent after A's fetch returned it and answered before A
  acknowledged it, and A's acknowledgement then succeeded (the broker still counted A as the holder,
  ``SharePartition.acknowledge`` checks the member), with no other delivery to A in between; or (b)
  B's fetch was sent after A's returned it and answered before A's lock could end (A's fetch sent +
  the lock duration), A had not acknowledged it, A's session was not reopened, A recorded no error,
  and no fault was active around either fetch, nor within a session timeout before A's (a killed or
  isolated leader, a closed session, or A removed from the group after its heartbeats failed may
  legitimately release A's records).
* ``delivery_over_limit``: a delivery count above the limit (``share.delivery.attempt.limit``;
  ``group.share.delivery.count.limit`` in the Kafka this was read from), or a delivery after a
  delivery at the limit was RELEASEd without error (then archived, never AVAILABLE again).
* ``delivery_count_regressed``: a delivery whose count is not above that of an earlier delivery of
  the same record released without error before its fetch was sent. The release was persisted
  with its count, and a new leader starts from the persisted state (``SharePartition.maybeInitialize``
  reads it), so the count only grows; KIP-932 notes the one thing a crash may lose, the *acquired*
  state ("an Acquired record with a delivery count of 1 is recorded as Available with a delivery
  count of 0"), so deliveries never released are not held to it.
* ``delivery_count_skipped``: two deliveries of a record whose counts differ by more than one, more
  than the fetches of its partition that went unanswered meanwhile (each of which may have acquired
  it) explain: an acquisition raised the count and reached no consumer, so the record sat locked
  for a lock duration, and at the limit it is archived undelivered. The count rises only on
  acquisition (``InFlightState.tryUpdateState`` with ``incrementDeliveryCount``), and every
  acquisition is answered to the fetch that made it.
* ``unproduced_delivery``: a delivered value no producer ever sent, or whose send certainly failed.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from chaos.history import History, Op, fault_windows

from .queue import Anomaly

NAMES = (
    "share_lost",
    "redelivered_accepted",
    "redelivered_rejected",
    "concurrent_acquire",
    "delivery_over_limit",
    "delivery_count_regressed",
    "delivery_count_skipped",
    "unproduced_delivery",
)
NOT_RETURNED = "ACQUIRED_WITHOUT_RECORD"
"""The workload's mark on a fetch that acquired offsets whose records the answer did not carry."""
UNSEEN_SLACK_S = 0.25
"""A fetch given up on may still be served by the broker a moment later (the request in flight)."""
UNSEEN_SERVE_S = 15.0
"""How long after it was sent a fetch nobody saw answered may still be served: a ShareFetch waits in
the broker up to its MaxWaitMs, and longer while the share-partition loads its persisted state
(Kafka's DelayedShareFetch waits for SharePartition initialisation; the reference up to 10 s past
MaxWaitMs). A broker does not notice that the client gave up: the connection is muted while its
request is in flight, as Kafka's is, so its close is read only once the answer is written. On the
reference a fetch sent during a kill was given up on after 5 s and served later, its acquisition
seen only as a count that rose by two (seed 8, kill + partition-coordinator)."""
FETCH, ACK, OPEN, END = "share-fetch", "share-ack", "share-open", "share-end"
ACCEPT, RELEASE, REJECT = 1, 2, 3
DEFAULT_LIMIT = 5
DEFAULT_LOCK_MS = 30_000
DEFAULT_SESSION_MS = 45_000
LOCK_MARGIN_S = 0.5
"""Slack taken off A's lock in evidence (b): the broker's clock and ours may differ a little."""
FAULT_MARGIN_S = 1.0
"""A fault window this close to a delivery voids evidence (b) (connections take a moment to notice)."""
MAX_REPORTED = 20


@dataclass(frozen=True, slots=True)
class Delivery:
    process: int | str
    member: Any
    sent: float
    """The fetch's invoke (monotonic s)."""
    answered: float
    count: int
    index: int
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Ack:
    process: int | str
    kind: int
    status: str
    sent: float
    answered: float
    index: int


@dataclass
class ShareOps:
    deliveries: dict[Any, list[Delivery]]
    acks: dict[Any, list[Ack]]
    reopened: dict[int | str, list[float]]
    troubled: dict[int | str, list[float]]
    """Per process, when a share op of it ended in fail or info."""
    unseen: dict[int, list[tuple[float, float]]]
    """Per partition, (sent, given up) of fetches of it that got no answer (or acquired offsets
    without returning their records): they may have acquired records nobody saw, raising their
    delivery counts."""
    end_index: int | None


def collect(history: History) -> ShareOps:
    """Deliveries and acknowledgements per value, in history order."""
    deliveries: dict[Any, list[Delivery]] = defaultdict(list)
    acks: dict[Any, list[Ack]] = defaultdict(list)
    reopened: dict[int | str, list[float]] = defaultdict(list)
    troubled: dict[int | str, list[float]] = defaultdict(list)
    unseen: dict[int, list[tuple[float, float]]] = defaultdict(list)
    invoked: dict[tuple[int | str, str], Op] = {}
    end_index = None
    for op in history.ops:
        if op.f not in (FETCH, ACK, OPEN, END):
            continue
        if op.type == "invoke":
            invoked[(op.process, op.f)] = op
            continue
        start = invoked.pop((op.process, op.f), op)
        if op.f == END:
            end_index = op.index if end_index is None else end_index
            continue
        if op.f == OPEN:
            reopened[op.process].append(op.mono)
            continue
        if op.type != "ok":
            troubled[op.process].append(op.mono)
        value = op.value if isinstance(op.value, dict) else {}
        if op.f == FETCH and op.type == "info":
            for partition in value.get("partitions") or []:
                unseen[int(partition)].append((start.mono, op.mono))
        if op.f == FETCH and op.type == "ok":
            for partition, error in (value.get("errors") or {}).items():
                if error == NOT_RETURNED:
                    unseen[int(partition)].append((start.mono, op.mono))
        if op.f == FETCH and op.type == "ok":
            counts = value.get("counts") or []
            for i, (_topic, partition, offset, record_value) in enumerate(op.records or []):
                count = int(counts[i]) if i < len(counts) else 0
                deliveries[record_value].append(
                    Delivery(
                        op.process,
                        value.get("member"),
                        start.mono,
                        op.mono,
                        count,
                        op.index,
                        int(partition),
                        int(offset),
                    )
                )
        elif op.f == ACK:
            asked = value.get("acks") or (start.value or {}).get("acks") or []
            for _offset, kind, record_value in asked:
                acks[record_value].append(Ack(op.process, int(kind), op.type, start.mono, op.mono, op.index))
    return ShareOps(deliveries, acks, reopened, troubled, unseen, end_index)


def _sends(history: History, before: int | None) -> tuple[dict[Any, str], dict[Any, int]]:
    """(value -> send outcome, value -> index of the op showing it) of sends invoked before ``before``."""
    outcome: dict[Any, str] = {}
    where: dict[Any, int] = {}
    for op in history.ops:
        if op.f != "send" or (before is not None and op.index > before):
            continue
        if op.type == "invoke":
            outcome.setdefault(op.value, "open")
            where.setdefault(op.value, op.index)
        elif outcome.get(op.value) != "ok":
            outcome[op.value] = op.type
            where[op.value] = op.index
    return outcome, where


def lost(history: History, s: ShareOps, limit: int) -> list[Anomaly]:
    if s.end_index is None:
        return []
    outcome, where = _sends(history, s.end_index)
    out = []
    for value, status in outcome.items():
        if status != "ok":
            continue
        acks = s.acks.get(value, [])
        finished = any(a.kind in (ACCEPT, REJECT) and a.status in ("ok", "info") for a in acks)
        got = s.deliveries.get(value, [])
        if finished or _may_be_archived(s, got, limit):
            continue
        out.append(
            Anomaly(
                "share_lost",
                f"{value!r} was acknowledged to its producer but never accepted or rejected "
                f"({len(got)} deliveries, the last count {got[-1].count if got else 0} of {limit})",
                sorted({where[value], *(d.index for d in got[-MAX_REPORTED:])}),
                {"value": value, "deliveries": len(got)},
            )
        )
    return out


def _may_be_archived(s: ShareOps, got: list[Delivery], limit: int) -> bool:
    """Delivered at the limit, or close enough that fetches of its partition that got no answer
    (sent after its last seen delivery) may have taken it there: archived, never delivered again."""
    if not got:
        return False
    last = max(got, key=lambda d: d.answered)
    top = max(d.count for d in got)
    return top + _unseen(s, last.partition, last.sent, float("inf")) >= limit


def _unseen(s: ShareOps, partition: int, low: float, high: float) -> int:
    """Fetches of ``partition`` without an answer that the broker may have served between ``low``
    and ``high``: sent before ``high``, and given up on after ``low`` or sent within
    :data:`UNSEEN_SERVE_S` of it (the broker may serve a fetch after its client gave up)."""
    return sum(
        1
        for sent, gone in s.unseen.get(partition, [])
        if sent < high and max(gone + UNSEEN_SLACK_S, sent + UNSEEN_SERVE_S) > low
    )


def skipped(s: ShareOps) -> list[Anomaly]:
    """Counts missing between two seen deliveries (in count order), beyond what fetches without an
    answer could have taken: an acquisition handed to no one."""
    out = []
    for value, deliveries in s.deliveries.items():
        # by count, not by time: two members' fetches may be served in the other order than sent
        ordered = sorted(deliveries, key=lambda d: (d.count, d.sent))
        for first, then in itertools.pairwise(ordered):
            if then.count <= first.count + 1:
                continue
            missing = then.count - first.count - 1
            if missing > _unseen(s, then.partition, first.sent, then.answered):
                out.append(
                    Anomaly(
                        "delivery_count_skipped",
                        f"{value!r} was delivered with count {first.count} (fetch answered at "
                        f"{first.answered:.3f} s), then with count {then.count} (fetch sent at "
                        f"{then.sent:.3f} s): {missing} acquisition(s) in between reached no consumer, "
                        "and no fetch of its partition went unanswered then",
                        sorted({first.index, then.index}),
                        {"value": value, "counts": [first.count, then.count]},
                    )
                )
                break
    return out


def redelivered(s: ShareOps, kind: int, name: str) -> list[Anomaly]:
    what = "accepted" if kind == ACCEPT else "rejected"
    out = []
    for value, acks in s.acks.items():
        done = [a for a in acks if a.kind == kind and a.status == "ok"]
        if not done:
            continue
        first = min(done, key=lambda a: a.answered)
        later = [d for d in s.deliveries.get(value, []) if d.sent > first.answered]
        if later:
            d = later[0]
            out.append(
                Anomaly(
                    name,
                    f"{value!r} was {what} by process {first.process} (answered at {first.answered:.3f} s) "
                    f"and delivered again to process {d.process} by a fetch sent at {d.sent:.3f} s "
                    f"(delivery count {d.count}; {len(later)} deliveries after it)",
                    sorted({first.index, *(x.index for x in later[:MAX_REPORTED])}),
                    {"value": value, "after": len(later), "count": d.count},
                )
            )
    return out


def concurrent(history: History, s: ShareOps, lock_ms: int, session_ms: int) -> list[Anomaly]:
    windows = [(start, end if end is not None else float("inf")) for _f, start, end in fault_windows(history)]
    out = []
    for value, deliveries in s.deliveries.items():
        acks = s.acks.get(value, [])
        for a in deliveries:
            mine_after = [d.sent for d in deliveries if d.process == a.process and d.sent > a.answered]
            next_mine = min(mine_after, default=float("inf"))
            own_acks = [k for k in acks if k.process == a.process and a.answered < k.sent < next_mine]
            released = min((k.sent for k in own_acks), default=float("inf"))
            for b in deliveries:
                if b.process == a.process or b.sent <= a.answered or b.answered >= min(released, next_mine):
                    continue
                evidence = _held_by_ack(own_acks, b) or _held_by_lock(
                    s, windows, a, b, (lock_ms, session_ms), released
                )
                if evidence:
                    out.append(
                        Anomaly(
                            "concurrent_acquire",
                            f"{value!r} was held by process {a.process} (fetched "
                            f"{a.sent:.3f}-{a.answered:.3f} s) when process {b.process}'s fetch "
                            f"({b.sent:.3f}-{b.answered:.3f} s) acquired it: "
                            f"{evidence}",
                            sorted({a.index, b.index}),
                            {"value": value, "first": a.process, "second": b.process},
                        )
                    )
                    break
    return out


def _held_by_ack(own_acks: list[Ack], b: Delivery) -> str:
    for k in own_acks:
        if k.status == "ok" and k.sent > b.answered:
            return f"the first holder's acknowledgement sent at {k.sent:.3f} s was applied afterwards"
    return ""


def _held_by_lock(
    s: ShareOps,
    windows: list[tuple[float, float]],
    a: Delivery,
    b: Delivery,
    timeouts_ms: tuple[int, int],
    released: float,
) -> str:
    lock_ms, session_ms = timeouts_ms
    lock_end = a.sent + lock_ms / 1000 - LOCK_MARGIN_S
    if b.answered >= lock_end or released < b.answered:
        return ""
    # a fault up to a session timeout earlier may still remove A from the group (its heartbeats
    # failed meanwhile), which releases what it holds
    span = (a.sent - session_ms / 1000 - FAULT_MARGIN_S, b.answered + FAULT_MARGIN_S)
    if any(start < span[1] and end > span[0] for start, end in windows):
        return ""
    if any(a.sent <= t <= b.answered for t in s.reopened.get(a.process, [])):
        return ""
    if any(a.sent <= t <= b.answered for t in s.troubled.get(a.process, [])):
        return ""
    return f"the first holder's lock ran until at least {lock_end:.3f} s, unacknowledged, with no fault"


def over_limit(s: ShareOps, limit: int) -> list[Anomaly]:
    out = []
    for value, deliveries in s.deliveries.items():
        high = [d for d in deliveries if d.count > limit]
        releases = [a for a in s.acks.get(value, []) if a.kind == RELEASE and a.status == "ok"]
        archived_at = None
        for d in deliveries:
            if d.count < limit:
                continue
            after = [a.answered for a in releases if a.process == d.process and a.sent > d.answered]
            if after:
                archived_at = min(archived_at or float("inf"), min(after))
        late = [d for d in deliveries if archived_at is not None and d.sent > archived_at]
        if high or late:
            shown = (high or late)[:MAX_REPORTED]
            why = (
                f"delivered with count {high[0].count} above the limit {limit}"
                if high
                else f"delivered again (count {late[0].count}) after its release at the limit {limit} "
                f"was answered at {archived_at:.3f} s"
            )
            out.append(
                Anomaly(
                    "delivery_over_limit",
                    f"{value!r} {why}",
                    sorted(d.index for d in shown),
                    {"value": value, "counts": [d.count for d in deliveries][:MAX_REPORTED]},
                )
            )
    return out


def regressed(s: ShareOps) -> list[Anomaly]:
    out = []
    for value, deliveries in s.deliveries.items():
        releases = [a for a in s.acks.get(value, []) if a.kind == RELEASE and a.status == "ok"]
        if not releases:
            continue
        for d in deliveries:
            floor = None
            for r in releases:
                if r.answered >= d.sent:
                    continue
                held = [e for e in deliveries if e.process == r.process and e.answered < r.sent]
                if held:
                    released = max(held, key=lambda e: e.answered)
                    if floor is None or released.count > floor.count:
                        floor = released
            if floor is not None and d.count <= floor.count:
                out.append(
                    Anomaly(
                        "delivery_count_regressed",
                        f"{value!r} was delivered with count {d.count} by a fetch sent at {d.sent:.3f} s, "
                        f"after its delivery with count {floor.count} was released without error",
                        sorted({floor.index, d.index}),
                        {"value": value, "released_count": floor.count, "count": d.count},
                    )
                )
                break
    return out


def unproduced(history: History, s: ShareOps) -> list[Anomaly]:
    outcome, where = _sends(history, None)
    out = []
    for value, deliveries in s.deliveries.items():
        status = outcome.get(value)
        if status is None or status == "fail":
            why = "no producer sent it" if status is None else "its send certainly failed"
            out.append(
                Anomaly(
                    "unproduced_delivery",
                    f"{value!r} was delivered ({len(deliveries)} times) but {why}",
                    sorted({*(d.index for d in deliveries[:MAX_REPORTED]), *_index(where, value)}),
                    {"value": value},
                )
            )
    return out


def _index(where: dict[Any, int], value: Any) -> list[int]:
    return [where[value]] if value in where else []


def check_share(history: History) -> tuple[dict[str, list[Anomaly]], dict[str, Any]]:
    """(anomalies by name, figures) of a share-group history; empty for other histories."""
    s = collect(history)
    if not s.deliveries and not s.acks and s.end_index is None:
        return {name: [] for name in NAMES}, {}
    raw = history.meta.get("share")
    settings: dict[str, Any] = raw if isinstance(raw, dict) else {}
    limit = int(settings.get("delivery_limit", DEFAULT_LIMIT))
    lock_ms = int(settings.get("lock_ms", DEFAULT_LOCK_MS))
    session_ms = int(settings.get("session_timeout_ms") or DEFAULT_SESSION_MS)
    found = {
        "share_lost": lost(history, s, limit),
        "redelivered_accepted": redelivered(s, ACCEPT, "redelivered_accepted"),
        "redelivered_rejected": redelivered(s, REJECT, "redelivered_rejected"),
        "concurrent_acquire": concurrent(history, s, lock_ms, session_ms),
        "delivery_over_limit": over_limit(s, limit),
        "delivery_count_regressed": regressed(s),
        "delivery_count_skipped": skipped(s),
        "unproduced_delivery": unproduced(history, s),
    }
    kinds: dict[str, int] = defaultdict(int)
    names = {ACCEPT: "accept", RELEASE: "release", REJECT: "reject"}
    for acks in s.acks.values():
        for a in acks:
            kinds[f"share_ack_{names.get(a.kind, a.kind)}_{a.status}"] += 1
    stats = {
        "share_deliveries": sum(len(d) for d in s.deliveries.values()),
        "share_values_delivered": len(s.deliveries),
        "share_redeliveries": sum(max(0, len(d) - 1) for d in s.deliveries.values()),
        **dict(sorted(kinds.items())),
    }
    return found, stats
