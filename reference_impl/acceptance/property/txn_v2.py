"""The transactions v2 property check (issue 20): no late marker applies to a later transaction, and each
transaction is fenced on its own (KIP-890: the epoch bumped at every end): a write at the epoch of
an ended transaction is INVALID_PRODUCER_EPOCH.

Random runs of one transactional producer speaking transaction version 2 (Produce v12 adding the
partition, EndTxn v5 bumping the epoch) while the network delivers copies of markers already sent
(WriteTxnMarkers v2, as a coordinator's retry that arrives late). After every step what a
read_committed consumer delivers must be exactly the records of the transactions that committed, in
order: a late marker that ended the open transaction would show records nobody committed (a COMMIT)
or hide records that did commit (an ABORT). Runs are seeded and replayable; the seeded bug mode
``late-marker-applies`` (:mod:`reference_impl.core.mutants`, :data:`TXN_MODES`) must be caught.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from reference_impl.protocol.errors import ErrorCode
from reference_impl.tests.core.harness import BrokerHarness
from reference_impl.tests.core.txn_v2_driver import (
    committed_view,
    create_topic,
    end_v,
    marker,
    produce_v,
    start,
)

from .mutation import Outcome

RUNS = 25
STEPS = 12


class Violation(AssertionError):
    """The property failed: what a read_committed consumer delivers is not what committed."""


@dataclass
class Model:
    pid: int
    epoch: int
    seq: int = 0
    open_values: list[bytes] = field(default_factory=list)
    committed: list[bytes] = field(default_factory=list)
    sent: list[tuple[int, int, bool]] = field(default_factory=list)
    """Markers the coordinator sent: (producer id, epoch, commit)."""


def run(seed: int, mutant: str | None) -> list[str]:
    """One random run; returns its timeline, raises :class:`Violation` when the property fails."""
    rng = random.Random(seed)
    h = BrokerHarness()
    pid, epoch = start(h, "tx")
    create_topic(h, "t", mutant)
    m = Model(pid, epoch)
    timeline: list[str] = []
    for step in range(STEPS):
        choice = rng.random()
        if choice < 0.45:
            value = f"v{step}".encode()
            code = produce_v(h, "tx", m.pid, m.epoch, m.seq, "t", [value], 12).error_code
            assert code == ErrorCode.none, (seed, timeline, code)
            m.seq += 1
            m.open_values.append(value)
            timeline.append(f"write {value!r} at epoch {m.epoch}")
        elif choice < 0.75 and m.open_values:
            commit = rng.random() < 0.6
            r = end_v(h, "tx", m.pid, m.epoch, commit)
            assert r.error_code == ErrorCode.none, (seed, timeline, r)
            m.sent.append((m.pid, m.epoch + 1, commit))  # the markers carry the bumped epoch
            if commit:
                m.committed += m.open_values
            m.open_values, m.pid, m.epoch, m.seq = [], int(r.producer_id), int(r.producer_epoch), 0
            timeline.append(f"{'commit' if commit else 'abort'} -> epoch {m.epoch}")
        elif choice < 0.85 and m.sent:
            pid, ended, _commit = rng.choice(m.sent)  # a zombie of an ended transaction writes again
            code = produce_v(h, "tx", pid, ended - 1, 99, "t", [b"zombie"], 12).error_code
            timeline.append(f"zombie write at epoch {ended - 1}: {ErrorCode(code).name}")
            if code != ErrorCode.invalid_producer_epoch:
                raise Violation(
                    f"seed {seed}: a write of an ended transaction got {code.name}\n" + "\n".join(timeline)
                )
        elif m.sent:
            pid, epoch, commit = rng.choice(m.sent)
            code = marker(h, pid, epoch, commit, "t")
            timeline.append(
                f"late {'COMMIT' if commit else 'ABORT'} marker at epoch {epoch}: {ErrorCode(code).name}"
            )
        visible, _lso = committed_view(h, "t")
        if visible != m.committed:
            raise Violation(
                f"seed {seed}: read_committed delivers {visible}, committed {m.committed}\n"
                + "\n".join(timeline)
            )
    return timeline


def search(mutant: str | None) -> Violation | None:
    """The first violation over the seeded runs (None: the property held in all of them)."""
    for seed in range(RUNS):
        try:
            run(seed, mutant)
        except Violation as exc:
            return exc
    return None


INVARIANT = "read_committed delivers exactly what committed"


def outcome(mode: str | None) -> Outcome:
    """The check as ``kafka-harness mutants`` reports it: caught (with the timeline) or not."""
    for seed in range(RUNS):
        try:
            run(seed, mode)
        except Violation as exc:
            return Outcome(mode, True, INVARIANT, seed + 1, str(exc))
    return Outcome(mode, False, None, RUNS, "")
