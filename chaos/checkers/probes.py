"""Checkers of the transactional probe workloads (:mod:`chaos.workloads.probes`, issue 21).

* ``early_read``: a read_committed poll returned a transaction's record before that transaction's
  commit was even requested. Kafka's read_committed consumers read only below the last stable
  offset, which an open transaction holds at its first offset until its marker is written
  (apache/kafka ``storage/src/main/java/org/apache/kafka/storage/internals/log/UnifiedLog.java``,
  ``lastStableOffset``; ``core/src/main/scala/kafka/cluster/Partition.scala`` serves
  ``FetchTxnCommitted`` up to it). A ``txn`` op records when its commit was requested
  (``value.commit_requested``, monotonic seconds); a poll that *completed* before that moment read
  the record while the transaction was still open.
* ``fenced_write``: two producers share one ``transactional.id``; once the second one's
  ``init_transactions`` returned (the coordinator bumped the epoch and aborted what the first had
  open: ``TransactionCoordinator.handleInitProducerId``), nothing the first one asks to commit
  after that moment may commit: such a transaction must not be acknowledged and its records must
  never be read. ``init`` ops carry ``value.transactional_id``; ``txn`` ops of the same process
  carry it too.
* ``rewind_skip`` / ``rewind_behind``: after an aborted transaction the consumer is put back where
  its last committed transaction's reads ended (an ``assign`` op with ``value.seek``:
  ``{partition: offset}``); its next read of each partition must start at that offset, or at the
  next offset that holds a committed record (aborted records and transaction markers are skipped
  by read_committed: ``FetchResponse.abortedTransactions``, the consumer's
  ``CompletedFetch``/``FetchCollector`` drop them). Starting below it is ``rewind_behind``;
  starting above a committed record at or after it is ``rewind_skip``. Aborted transactions'
  records read at all are the existing ``aborted_read``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from chaos.history import History, Op

from .analysis import Analysis
from .queue import Anomaly

NAMES = ("early_read", "fenced_write", "rewind_skip", "rewind_behind")


def _polls(history: History) -> list[Op]:
    return [op for op in history.ops if op.f == "poll" and op.type == "ok" and op.records]


def early_reads(history: History) -> list[Anomaly]:
    """Reads completed before the commit of the transaction that wrote them was requested."""
    requested: dict[Any, tuple[float, int]] = {}  # value -> (commit requested at, txn op index)
    for op in history.ops:
        if op.f != "txn" or op.type == "invoke" or not isinstance(op.value, dict):
            continue
        at = op.value.get("commit_requested")
        for _t, _p, _o, value in op.records or []:
            # never requested (aborted, crashed): any read is an aborted or a precommitted read,
            # judged elsewhere; requested: reads must not come before the request
            if isinstance(at, int | float):
                requested[value] = (float(at), op.index)
    out = []
    for poll in _polls(history):
        for topic, partition, offset, value in poll.records or []:
            found = requested.get(value)
            if found is not None and poll.mono < found[0]:
                out.append(
                    Anomaly(
                        "early_read",
                        f"process {poll.process} read {value!r} at {topic}-{partition}@{offset} "
                        f"{found[0] - poll.mono:.3f} s before its transaction asked to commit",
                        sorted({poll.index, found[1]}),
                        {"value": value, "partition": partition, "offset": offset},
                    )
                )
    return out


def fenced_writes(history: History) -> list[Anomaly]:
    """Transactions whose commit was requested after a newer producer with the same transactional id
    finished ``init_transactions``: acknowledged, or read."""
    inits: dict[str, list[tuple[float, int | str, int]]] = defaultdict(list)
    for op in history.ops:
        if op.f == "init" and op.type == "ok" and isinstance(op.value, dict):
            tid = op.value.get("transactional_id")
            if isinstance(tid, str):
                inits[tid].append((op.mono, op.process, op.index))
    if not inits:
        return []
    read_at: dict[Any, list[int]] = defaultdict(list)
    for poll in _polls(history):
        for record in poll.records or []:
            read_at[record[3]].append(poll.index)
    out = []
    for op in history.ops:
        if op.f != "txn" or op.type == "invoke" or not isinstance(op.value, dict):
            continue
        tid = op.value.get("transactional_id")
        requested = op.value.get("commit_requested")
        if not isinstance(tid, str) or not isinstance(requested, int | float):
            continue
        fence = _fenced_by(inits.get(tid, []), op.process, float(requested))
        if fence is None:
            continue
        fenced_at, fencer, fence_index = fence
        values = [r[3] for r in op.records or []]
        seen = sorted({i for v in values for i in read_at.get(v, [])})
        if op.type == "ok" or seen:
            what = "was acknowledged" if op.type == "ok" else f"was read ({len(seen)} polls)"
            out.append(
                Anomaly(
                    "fenced_write",
                    f"process {op.process}'s transaction under {tid!r} asked to commit "
                    f"{float(requested) - fenced_at:.3f} s after process {fencer} took the id over, "
                    f"and {what}",
                    sorted({fence_index, op.index, *seen[:20]}),
                    {"transactional_id": tid, "values": values[:20]},
                )
            )
    return out


def _fenced_by(
    inits: list[tuple[float, int | str, int]], process: int | str, requested: float
) -> tuple[float, int | str, int] | None:
    """The first init of ``process``'s transactional id by another process that completed after
    ``process``'s own init and before ``requested``, if any."""
    own = [at for at, p, _ in inits if p == process]
    if not own:
        return None
    for at, p, index in sorted(inits, key=lambda i: i[0]):
        if p != process and min(own) < at < requested:
            return at, p, index
    return None


def rewinds(history: History, a: Analysis) -> tuple[list[Anomaly], list[Anomaly]]:
    """(rewind_skip, rewind_behind): each process's first read of a partition after a seek."""
    skips: list[Anomaly] = []
    behind: list[Anomaly] = []
    expected: dict[int | str, dict[int, tuple[int, int]]] = defaultdict(dict)
    committed = _committed_offsets(a)
    for op in history.ops:
        if op.type != "ok":
            continue
        if op.f == "assign" and isinstance(op.value, dict) and isinstance(op.value.get("seek"), dict):
            expected[op.process] = {int(p): (int(o), op.index) for p, o in op.value["seek"].items()}
            continue
        if op.f != "poll" or not op.records or op.process not in expected:
            continue
        waiting = expected[op.process]
        for topic, partition, offset, _value in op.records:
            if partition not in waiting:
                continue
            start, seek_index = waiting.pop(partition)
            if offset < start:
                behind.append(
                    Anomaly(
                        "rewind_behind",
                        f"process {op.process} was put back to {topic}-{partition}@{start} "
                        f"but read @{offset}",
                        [seek_index, op.index],
                        {"partition": partition, "seek": start, "read": offset},
                    )
                )
                continue
            missed = [o for o in committed.get((topic, partition), []) if start <= o < offset]
            if missed:
                skips.append(
                    Anomaly(
                        "rewind_skip",
                        f"process {op.process} was put back to {topic}-{partition}@{start} but its "
                        f"next read was @{offset}, past {len(missed)} committed records",
                        [seek_index, op.index],
                        {"partition": partition, "seek": start, "read": offset, "skipped": missed[:20]},
                    )
                )
    return skips, behind


def _committed_offsets(a: Analysis) -> dict[tuple[str, int], list[int]]:
    """Offsets known to hold a record whose write did not fail (aborted records excluded)."""
    out: dict[tuple[str, int], list[int]] = defaultdict(list)
    for (topic, partition, offset), values in a.offsets_by_position.items():
        if any(a.writes.get(v) is None or a.writes[v].status != "fail" for v in values):
            out[(topic, partition)].append(offset)
    return {tp: sorted(offsets) for tp, offsets in out.items()}


def check_probes(history: History, a: Analysis) -> dict[str, list[Anomaly]]:
    skips, behind = rewinds(history, a)
    return {
        "early_read": early_reads(history),
        "fenced_write": fenced_writes(history),
        "rewind_skip": skips,
        "rewind_behind": behind,
    }
