"""Detectors of queue anomalies: each a pure function of the analysis, returning anomaly records.

Definitions follow Jepsen's Kafka workload (``jepsen.tests.kafka``) and kafkatest's
``validate_delivery``, adapted to values recorded as unique strings:

* ``lost_write``: an acknowledged send never read, although a read saw a later offset of its partition.
* ``unseen``: an acknowledged send never read, and nothing later in its partition was read either.
* ``duplicate``: one value at more than one position (a write stored twice).
* ``inconsistent_offsets``: one position holding different values (by writes' acks or reads).
* ``poll_skip``: a consumer went from offset a to b of a partition, passing over offsets known to
  hold records, without a reassignment in between.
* ``nonmonotonic_poll``: a consumer read an offset not above the one it read before, with no
  reassignment in between.
* ``nonmonotonic_send``: a producer's acknowledged sends to one partition got offsets out of the
  order it sent them in.
* ``aborted_read``: a read of a value whose send certainly failed or whose transaction aborted.
* ``validate_delivery``: kafkatest's oracle: every acknowledged value consumed; duplicates count
  only when the producer was idempotent.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .analysis import Analysis, TopicPartition, is_assign


@dataclass
class Anomaly:
    name: str
    description: str
    ops: list[int]
    """History indices of the ops that show it."""
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "ops": self.ops, **self.detail}


def acked_unread(a: Analysis) -> tuple[list[Anomaly], list[Anomaly]]:
    """(lost_write, unseen). With a complete final read of the log, an acknowledged value absent
    from it is lost even if a consumer saw it earlier; otherwise lost needs a later offset read.
    Values acknowledged after the final read began (the restart phase's) are left to
    :mod:`.restart`."""
    lost, unseen = [], []
    for value, w in a.writes.items():
        if w.status != "ok" or w.topic is None or w.partition is None:
            continue
        where = f"{w.topic}-{w.partition}@{w.offset}"
        ops = [w.invoke_index] + ([w.complete_index] if w.complete_index is not None else [])
        detail = {"value": value, "partition": w.partition, "offset": w.offset}
        if a.after_final_read(w):
            continue  # the restart phase's write: chaos.checkers.restart judges it
        if a.final_values is not None:
            if value not in a.final_values:
                earlier = " (read earlier)" if value in a.read_values else ""
                lost.append(
                    Anomaly(
                        "lost_write",
                        f"{value!r} acknowledged at {where} is not in the final read of the log{earlier}",
                        ops + a.read_values.get(value, [])[:3],
                        detail,
                    )
                )
            continue
        if value in a.read_values:
            continue
        high = a.max_read_offset.get((w.topic, w.partition), -1)
        if w.offset is not None and high > w.offset:
            lost.append(
                Anomaly(
                    "lost_write",
                    f"{value!r} acknowledged at {where} but never read, though offset {high} was",
                    ops,
                    detail,
                )
            )
        else:
            unseen.append(Anomaly("unseen", f"{value!r} acknowledged at {where} never read", ops, detail))
    return lost, unseen


def lost_writes(a: Analysis) -> list[Anomaly]:
    return acked_unread(a)[0]


def unseen(a: Analysis) -> list[Anomaly]:
    return acked_unread(a)[1]


def duplicates(a: Analysis) -> list[Anomaly]:
    positions: dict[Any, list[tuple[str, int, int]]] = defaultdict(list)
    ops: dict[Any, list[int]] = defaultdict(list)
    for position, values in a.offsets_by_position.items():
        for value, indices in values.items():
            positions[value].append(position)
            ops[value].extend(indices)
    return [
        Anomaly(
            "duplicate",
            f"{value!r} stored at {len(where)} positions: "
            + ", ".join(f"{t}-{p}@{o}" for t, p, o in sorted(where)),
            sorted(set(ops[value])),
            {"value": value, "positions": sorted(where)},
        )
        for value, where in positions.items()
        if len(where) > 1
    ]


def inconsistent_offsets(a: Analysis, *, acks_all: bool = True) -> list[Anomaly]:
    """Offsets shown holding more than one value. Without acks=all a leader may acknowledge a record
    and lose it on failover, its offset then taken by another (Kafka's producer docs, ``acks=1``:
    "the record will be lost if the leader fails immediately after acknowledging it"), so only
    values *read* at one offset are compared: readers see only what the high watermark covers,
    which every in-sync replica holds, whatever the producer's acks."""
    out = []
    read_ops = {r.op_index for r in a.reads} if not acks_all else set()
    for (topic, partition, offset), found in a.offsets_by_position.items():
        values = found if acks_all else {v: i for v, i in found.items() if read_ops.intersection(i)}
        if len(values) > 1:
            shown = sorted(map(repr, values))
            out.append(
                Anomaly(
                    "inconsistent_offsets",
                    f"{topic}-{partition}@{offset} holds " + " and ".join(shown),
                    sorted({i for indices in values.values() for i in indices}),
                    {"partition": partition, "offset": offset, "values": shown},
                )
            )
    return out


def poll_order(a: Analysis) -> tuple[list[Anomaly], list[Anomaly]]:
    """(poll_skip, nonmonotonic_poll), walking each process's reads in the order it made them."""
    last: dict[int | str, dict[TopicPartition, tuple[int, int]]] = defaultdict(dict)
    skips, backwards = [], []
    for read in a.reads:
        seen = last[read.process]
        if is_assign(read):
            seen.clear()
            continue
        tp = (read.topic, read.partition)
        before = seen.get(tp)
        seen[tp] = (read.offset, read.op_index)
        if before is None:
            continue
        prev_offset, prev_op = before
        if read.offset <= prev_offset:
            backwards.append(
                Anomaly(
                    "nonmonotonic_poll",
                    f"process {read.process} read {read.topic}-"
                    f"{read.partition}@{read.offset} after @{prev_offset}",
                    sorted({prev_op, read.op_index}),
                    {"partition": read.partition, "from": prev_offset, "to": read.offset},
                )
            )
        elif read.offset > prev_offset + 1:
            missed = a.known_between(tp, prev_offset, read.offset)
            if missed:
                skips.append(
                    Anomaly(
                        "poll_skip",
                        f"process {read.process} jumped {read.topic}-"
                        f"{read.partition}@{prev_offset} -> @{read.offset}, skipping "
                        f"{len(missed)} known offsets",
                        sorted({prev_op, read.op_index}),
                        {
                            "partition": read.partition,
                            "from": prev_offset,
                            "to": read.offset,
                            "skipped": missed[:20],
                        },
                    )
                )
    return skips, backwards


def nonmonotonic_sends(a: Analysis) -> list[Anomaly]:
    by_producer: dict[tuple[int | str, str, int], list[tuple[int, int, int | None]]] = defaultdict(list)
    for w in a.writes.values():
        if w.status == "ok" and w.offset is not None and w.topic is not None and w.partition is not None:
            key = (w.process, w.topic, w.partition)
            by_producer[key].append((w.invoke_index, w.offset, w.complete_index))
    out = []
    for (process, topic, partition), sends in by_producer.items():
        sends.sort()
        for (i1, o1, c1), (i2, o2, c2) in itertools.pairwise(sends):
            if o2 <= o1:
                ops = sorted(i for i in (i1, c1, i2, c2) if i is not None)
                out.append(
                    Anomaly(
                        "nonmonotonic_send",
                        f"process {process} sent op {i2} after op {i1} "
                        f"but {topic}-{partition} stored it at @{o2}, not after @{o1}",
                        ops,
                        {"partition": partition, "offsets": [o1, o2]},
                    )
                )
    return out


def aborted_reads(a: Analysis) -> list[Anomaly]:
    out = []
    for value, indices in a.read_values.items():
        w = a.writes.get(value)
        if w is not None and w.status == "fail":
            ops = [w.invoke_index] + ([w.complete_index] if w.complete_index is not None else []) + indices
            out.append(
                Anomaly(
                    "aborted_read",
                    f"{value!r} was read, but its write failed or aborted",
                    sorted(set(ops)),
                    {"value": value},
                )
            )
    return out


def validate_delivery(a: Analysis, idempotence: bool) -> list[Anomaly]:
    """kafkatest's validate_delivery: acked ⊆ consumed; duplicates fatal only with idempotence."""
    acked = {v for v, w in a.writes.items() if w.status == "ok" and not a.after_final_read(w)}
    missing = sorted(acked - a.read_values.keys(), key=repr)
    out = []
    if missing:
        ops = [a.writes[v].invoke_index for v in missing[:100]]
        out.append(
            Anomaly(
                "validate_delivery",
                f"{len(missing)} acked records were not consumed (first: {missing[:5]!r})",
                ops,
                {"missing": len(missing)},
            )
        )
    if idempotence:
        dups = duplicates(a)
        if dups:
            out.append(
                Anomaly(
                    "validate_delivery",
                    f"{len(dups)} values duplicated with an idempotent producer",
                    sorted({i for d in dups[:100] for i in d.ops}),
                    {"duplicated": len(dups)},
                )
            )
    return out
