"""Model-based test of the log cleaner: random records in, the survivors a simple model predicts out.

The model knows nothing of segments, batches or offset maps. Below the end
of the cleaned range it keeps, per key, only the last record that may become
visible (plain or committed); aborted transactional data goes; keyless records go;
tombstones and the markers of transactions left without data stay until a
clean after ``delete.retention.ms``. Everything at or above the end stays;
the end is at most the last stable offset, as the broker passes it.
Offsets, order, the log end and the log start never change, and a reopened
log reads the same.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.log.cleaning.cleaner import LogCleaner
from reference_impl.log.config import LogConfig
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import read_bytes
from reference_impl.protocol.record_set import (
    GZIP,
    NONE,
    build_batch,
    build_control_batch,
    control_record_type,
    iter_records,
)
from reference_impl.protocol.records import crc_is_valid, iter_headers

RETENTION_MS = 10_000
T0 = 1_000_000
KEY = ("t", 0)

Record = tuple[int, bytes | None, bytes | None]
"""(offset, key, value); a marker is (offset, b"COMMIT"/b"ABORT", None)."""


@dataclass
class Entry:
    """One appended batch as the model sees it."""

    kind: str  # plain, txn, marker
    pid: int
    records: list[Record] = field(default_factory=list)
    commit: bool = False


records_st = st.lists(
    st.tuples(
        st.one_of(st.sampled_from([b"a", b"b", b"c", b"d", b"e"]), st.just(None).filter(lambda _: True)),
        st.one_of(st.binary(min_size=1, max_size=12), st.none()),
    ).filter(lambda kv: kv[0] is not None or kv[1] is not None),
    min_size=1,
    max_size=6,
)
op_st = st.one_of(
    st.tuples(st.just("plain"), st.sampled_from([-1, 7]), records_st, st.sampled_from([NONE, GZIP])),
    st.tuples(st.just("txn"), st.sampled_from([1, 2]), records_st, st.sampled_from([NONE, GZIP])),
    st.tuples(st.just("marker"), st.sampled_from([1, 2]), st.booleans(), st.just(NONE)),
    st.tuples(st.just("roll"), st.just(0), st.just(0), st.just(NONE)),
)


class Writer:
    """Appends ops to a FileLog and remembers them for the model."""

    def __init__(self, log: FileLog) -> None:
        self.log = log
        self.entries: list[Entry] = []
        self.sequences: dict[int, int] = {}
        self.clock = T0

    def last_stable_offset(self) -> int:
        """The first offset of the oldest transaction without a marker, else the log end."""
        open_first: dict[int, int] = {}
        for entry in self.entries:
            if entry.kind == "txn":
                open_first.setdefault(entry.pid, entry.records[0][0])
            elif entry.kind == "marker":
                open_first.pop(entry.pid, None)
        return min([*open_first.values(), self.log.log_end_offset])

    def apply(self, op: tuple[str, int, object, int]) -> None:
        kind, pid, payload, codec = op
        self.clock += 1
        if kind == "roll":
            self.log.roll(self.clock)
            return
        start = self.log.log_end_offset
        if kind == "marker":
            batch = build_control_batch(commit=bool(payload), producer_id=pid, producer_epoch=0,
                                        coordinator_epoch=0, timestamp=self.clock)
            self.log.append_as_leader(bytearray(batch), 0, self.clock)
            label = b"COMMIT" if payload else b"ABORT"
            self.entries.append(Entry("marker", pid, [(start, label, None)], bool(payload)))
            return
        pairs = list(payload)  # type: ignore[call-overload]
        sequence = self.sequences.get(pid, 0)
        batch = build_batch(pairs, base_timestamp=self.clock, codec=codec, producer_id=pid,
                            producer_epoch=0 if pid >= 0 else -1,
                            base_sequence=sequence if pid >= 0 else -1, transactional=kind == "txn")
        self.sequences[pid] = sequence + len(pairs)
        self.log.append_as_leader(bytearray(batch), 0, self.clock)
        records = [(start + i, k, v) for i, (k, v) in enumerate(pairs)]
        self.entries.append(Entry(kind, pid, records))


def expected(entries: list[Entry], end: int, expired: bool) -> list[Record]:
    """The model: what survives a clean below ``end``; ``expired``: tombstones and empty markers are due."""
    outcome: dict[int, str] = {}  # entry index -> plain, committed, aborted, undecided
    open_txn: dict[int, list[int]] = {}
    marker_txn: dict[int, list[int]] = {}
    for i, entry in enumerate(entries):
        if entry.kind == "plain":
            outcome[i] = "plain"
        elif entry.kind == "txn":
            open_txn.setdefault(entry.pid, []).append(i)
            outcome[i] = "undecided"
        else:
            members = open_txn.pop(entry.pid, [])
            marker_txn[i] = members
            for j in members:
                outcome[j] = "committed" if entry.commit else "aborted"
    latest: dict[bytes, int] = {}
    for i, entry in enumerate(entries):
        if outcome.get(i) in ("plain", "committed"):
            for offset, key, _value in entry.records:
                if key is not None and offset < end:
                    latest[key] = offset
    survivors: dict[int, Record] = {}
    for i, entry in enumerate(entries):
        for offset, key, value in entry.records:
            if offset >= end:
                survivors[offset] = (offset, key, value)
                continue
            if entry.kind == "marker":
                continue
            kind = outcome[i]
            keep = kind == "undecided" or (
                kind != "aborted" and key is not None and latest[key] == offset
                and not (value is None and expired)
            )
            if keep:
                survivors[offset] = (offset, key, value)
    for i, entry in enumerate(entries):
        if entry.kind != "marker":
            continue
        offset = entry.records[0][0]
        has_data = any(r[0] in survivors for j in marker_txn[i] for r in entries[j].records)
        if offset >= end or has_data or not expired:
            survivors[offset] = entry.records[0]
    return [survivors[o] for o in sorted(survivors)]


def actual(log: FileLog) -> list[Record]:
    data = read_bytes(log.read(log.log_start_offset, 1 << 30))
    out: list[Record] = []
    for header in iter_headers(data):
        assert crc_is_valid(data, header)
        for record in iter_records(data, header):
            if header.is_control:
                label = b"COMMIT" if control_record_type(record) == 1 else b"ABORT"
                out.append((record.offset, label, None))
            else:
                out.append((record.offset, record.key, record.value))
    return out


def _data(records: list[Record]) -> list[Record]:
    return [r for r in records if r[1] not in (b"COMMIT", b"ABORT")]


def _last_batches(log: FileLog) -> dict[int, tuple[int, int]]:
    """Producer id → (base, last offset) of its last data batch (the producer state Kafka keeps)."""
    last: dict[int, tuple[int, int]] = {}
    for header in log.batch_headers():
        if header.producer_id >= 0 and not header.is_control:
            last[header.producer_id] = (header.base_offset, header.last_offset)
    return last


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(op_st, min_size=1, max_size=40),
    second=st.lists(op_st, max_size=25),
    tail=st.lists(op_st.filter(lambda op: op[0] != "roll"), max_size=3),
    segment_bytes=st.sampled_from([200, 500, 2000]),
)
def test_cleaning_keeps_exactly_what_the_model_keeps(
    first: list[tuple[str, int, object, int]],
    second: list[tuple[str, int, object, int]],
    tail: list[tuple[str, int, object, int]],
    segment_bytes: int,
) -> None:
    config = LogConfig(segment_bytes=segment_bytes, cleanup_policy=("compact",), index_interval_bytes=100,
                       delete_retention_ms=RETENTION_MS, min_cleanable_dirty_ratio=0.0)
    with tempfile.TemporaryDirectory() as root:
        log = FileLog.open(f"{root}/t-0", config, T0)
        writer = Writer(log)
        cleaner = LogCleaner(root)
        producers_before: dict[int, tuple[int, int]] = {}

        def clean_and_check(now: int, expired: bool, markers_settled: bool = True) -> None:
            start, end_before = log.log_start_offset, log.log_end_offset
            stable = writer.last_stable_offset()
            plan = cleaner.plan(KEY, log, stable, now)
            assert plan is not None and plan.end_offset <= stable
            bases = [seg.base_offset for seg in log.segments]
            assert plan.end_offset in bases and (stable < log.log_end_offset or plan.end_offset == bases[-1])
            before = actual(log)
            cleaner.clean({KEY: log}, {KEY: stable}, now)
            assert (log.log_start_offset, log.log_end_offset) == (start, end_before)
            if plan.cleanable and markers_settled:
                assert actual(log) == expected(writer.entries, plan.end_offset, expired)
            elif plan.cleanable:  # a marker is stamped only once its transaction is empty: one clean later
                assert _data(actual(log)) == _data(expected(writer.entries, plan.end_offset, expired))
            else:  # nothing dirty and no horizon due: the cleaner leaves the log alone
                assert actual(log) == before
            assert _last_batches(log) == producers_before

        for op in first:
            writer.apply(op)
        writer.apply(("roll", 0, 0, NONE))
        producers_before = _last_batches(log)
        clean_and_check(writer.clock + 1, expired=False)
        for op in second:
            writer.apply(op)
        writer.apply(("roll", 0, 0, NONE))
        for op in tail:
            writer.apply(op)
        producers_before = _last_batches(log)
        clean_and_check(writer.clock + 1, expired=False)
        clean_and_check(writer.clock + 2 + 2 * RETENTION_MS, expired=True, markers_settled=False)
        clean_and_check(writer.clock + 3 + 4 * RETENTION_MS, expired=True)
        survivors = actual(log)
        end = log.log_end_offset
        log.close()
        reopened = FileLog.open(f"{root}/t-0", config, T0, recovery_point=end, clean_shutdown=True)
        assert actual(reopened) == survivors and reopened.log_end_offset == end
        reopened.close()
