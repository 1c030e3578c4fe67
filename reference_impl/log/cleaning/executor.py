"""The log cleaner's file work: rewrite a log's cleanable segments through ``.cleaned`` and ``.swap`` files.

One clean of a :class:`~reference_impl.log.partition_log.FileLog`, given a
:class:`~.plan.CleanPlan`:

1. Learn the log's transactions and producers from every batch header
   (:class:`~.rules.LogFacts`), and build the offset map of the dirty part.
2. Group the segments below the plan's end offset so each group fits one
   segment (``segment.bytes``, ``segment.index.bytes``, 4-byte relative
   offsets), as Kafka's ``groupSegmentsBySize`` does, and write each group's
   surviving batches, with fresh indexes, to ``<base>.log.cleaned`` (and
   ``.index.cleaned``, ``.timeindex.cleaned``); fsync them. A group whose
   last segments keep nothing ends at its last segment that keeps something,
   and each emptied segment after it gets an empty file of its own: then the
   offsets each new file covers name every old segment it replaces (see
   :mod:`.recovery`).
3. Rename every ``.cleaned`` file to ``.swap``, highest base offset first
   and each log file after its indexes, then fsync the directory. The last
   of these renames is the commit point: while any ``.cleaned`` file exists
   a restart returns to the old segments; once none does, to the new ones.
4. Rename the old segments' files to ``.deleted``, fsync; rename each
   ``.swap`` file to its final name, lowest base offset first, fsync; delete
   the ``.deleted`` files.

Offsets and order never change (the rules keep base offsets and offset
deltas). ``on_step`` is called after every file operation with its name:
the crash tests stop the clean there by raising a ``BaseException`` that is
not an ``Exception``, which, like a killed process, runs no clean-up, then
reopen the directory. An ordinary error before the commit point removes the
new files and leaves the log as it was.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from reference_impl.protocol.record_set import control_record_type, iter_records
from reference_impl.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, parse_header

from ..files import fsync_dir, pread_exact, pwrite_all, remove_if_exists
from ..index import OffsetIndex, TimeIndex
from ..partition_log import FileLog
from ..segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    MAX_RELATIVE_OFFSET,
    TIME_INDEX_SUFFIX,
    LogSegment,
    file_name,
)
from .plan import CleanPlan, SegmentView
from .recovery import CLEANED_SUFFIX, SWAP_SUFFIX
from .rules import LogFacts, OffsetMap, TxnId, delete_horizon, filter_batch

log = logging.getLogger(__name__)

SEGMENT_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX)
"""A segment's files in the order they are renamed: the log file last."""
_CHUNK = 1 << 20

StepHook = Callable[[str], None]


class CleanerError(RuntimeError):
    """A segment could not be read as whole batches; the log is left as it was."""


@dataclass
class CleanResult:
    """What one clean did, for the log manager (checkpoint, horizon) and for tests."""

    end_offset: int
    """The new cleaner checkpoint: everything below it is clean."""
    segments_before: int = 0
    segments_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_kept: int = 0
    records_removed: int = 0
    earliest_horizon_ms: int | None = None
    """The nearest delete horizon still ahead in the cleaned part (None: nothing left to expire)."""
    map_limited: bool = False
    """The offset map filled up before the plan's end: more dirty data remains."""


@dataclass
class _Output:
    """One new segment being written under ``.cleaned`` names."""

    directory: str
    base_offset: int
    index_interval_bytes: int
    size: int = 0
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1
    _since_entry: int = 0
    paths: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for suffix in SEGMENT_SUFFIXES:
            path = os.path.join(self.directory, file_name(self.base_offset, suffix)) + CLEANED_SUFFIX
            remove_if_exists(path)
            self.paths[suffix] = path
        self._fd = os.open(self.paths[LOG_SUFFIX], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.offset_index = OffsetIndex(self.paths[INDEX_SUFFIX], self.base_offset)
        self.time_index = TimeIndex(self.paths[TIME_INDEX_SUFFIX], self.base_offset)

    def append(self, data: bytes, header: BatchHeader) -> None:
        """Write one batch, indexing it as :meth:`LogSegment.append` would."""
        pwrite_all(self._fd, data, self.size)
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
        if self._since_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, self.size)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._since_entry = 0
        self._since_entry += len(data)
        self.size += len(data)

    def finish(self) -> None:
        """End the time index with the largest timestamp, fsync and close every file."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        os.fsync(self._fd)
        os.close(self._fd)
        for index in (self.offset_index, self.time_index):
            index.flush()
            index.close()

    def discard(self) -> None:
        for index in (self.offset_index, self.time_index):
            index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        for path in self.paths.values():
            remove_if_exists(path)
            remove_if_exists(path[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)


# -- reading -----------------------------------------------------------------------------------------


def iter_batches(path: str, end: int) -> Iterator[tuple[BatchHeader, bytes]]:
    """(header with position 0, bytes) of each batch in the first ``end`` bytes of a segment file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        position, buf, buf_start = 0, b"", 0
        while position < end:
            rel = position - buf_start
            if rel + HEADER_SIZE > len(buf):
                buf, buf_start, rel = pread_exact(fd, min(_CHUNK, end - position), position), position, 0
            try:
                header = parse_header(buf, rel)
            except ValueError as exc:
                raise CleanerError(f"{path}: no batch at byte {position}: {exc}") from None
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + header.size > end:
                raise CleanerError(f"{path}: batch at byte {position} runs past the segment")
            if rel + header.size > len(buf):
                buf, buf_start, rel = pread_exact(fd, max(_CHUNK, header.size), position), position, 0
            yield header._replace(position=0), buf[rel : rel + header.size]
            position += header.size
    finally:
        os.close(fd)


def segment_views(log_: FileLog) -> list[SegmentView]:
    """The log's segments as planning sees them."""
    segments = log_.segments
    views = []
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else log_.log_end_offset
        first = segment.rolling_based_timestamp() if segment.size else None
        views.append(SegmentView(segment.base_offset, upper, segment.size, segment.max_timestamp,
                                 first if first is not None else -1))
    return views


def learn_facts(log_: FileLog) -> LogFacts:
    """Transactions and producers from every batch of the log (headers, plus each marker's record)."""
    facts = LogFacts()
    for segment in log_.segments:
        for position, header in segment.scan(0):
            control_type = None
            if header.is_control:
                batch = _read(segment.log_path, position, header.size)
                records = list(iter_records(batch, header._replace(position=0)))
                control_type = control_record_type(records[0]) if records else None
            facts.observe(header, control_type)
    return facts


def earliest_horizon(log_: FileLog) -> int | None:
    """The nearest delete horizon stamped on a batch that still holds records (a restart forgets it)."""
    found: int | None = None
    for segment in log_.segments[:-1]:
        for _, header in segment.scan(0):
            horizon = delete_horizon(header)
            if horizon is not None and header.records_count and (found is None or horizon < found):
                found = horizon
    return found


def _read(path: str, position: int, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return pread_exact(fd, size, position)
    finally:
        os.close(fd)


def build_offset_map(log_: FileLog, first_dirty: int, end: int, facts: LogFacts,
                     capacity: int) -> tuple[OffsetMap, int]:
    """The latest offset of each key in [``first_dirty``, ``end``), whole segments at a time.

    Stops at a segment boundary once the map holds ``capacity`` keys (after
    at least one segment); returns the map and the offset it covers up to.
    """
    offset_map = OffsetMap(capacity)
    for segment in log_.segments:
        if segment.base_offset < first_dirty:
            continue
        if segment.base_offset >= end:
            break
        if offset_map.full():
            return offset_map, segment.base_offset
        for header, batch in iter_batches(segment.log_path, segment.size):
            if header.is_control or facts.outcome(header) in ("aborted", "undecided"):
                continue
            offset_map.add(list(iter_records(batch, header)))
    return offset_map, end


def group_segments(segments: list[LogSegment], log_: FileLog) -> list[list[LogSegment]]:
    """Consecutive segments whose total size, index size and offset span fit one segment."""
    config = log_.config
    groups: list[list[LogSegment]] = []
    for segment in segments:
        if groups:
            group = groups[-1]
            upper = log_.local.segments.upper_bound_of(segment)
            if (sum(s.size for s in group) + segment.size <= config.segment_bytes
                    and sum(len(s.offset_index) for s in group) + len(segment.offset_index)
                    < config.max_offset_index_entries
                    and upper - 1 - group[0].base_offset <= MAX_RELATIVE_OFFSET):
                group.append(segment)
                continue
        groups.append([segment])
    return groups


# -- cleaning ----------------------------------------------------------------------------------------


def clean_log(log_: FileLog, plan: CleanPlan, now_ms: int, *, map_capacity: int,
              on_step: StepHook | None = None) -> CleanResult:
    """Compact the segments below ``plan.end_offset``; the log's segment list follows on success."""
    step = on_step or (lambda _name: None)
    facts = learn_facts(log_)
    offset_map, end = build_offset_map(log_, plan.first_dirty, plan.end_offset, facts, map_capacity)
    old = [s for s in log_.segments if s.base_offset < end]
    result = CleanResult(end, segments_before=len(old), bytes_before=sum(s.size for s in old),
                         map_limited=end < plan.end_offset)
    if not old:
        return result
    outputs: list[_Output] = []
    try:
        txn_has_data: dict[TxnId, bool] = {}
        for group in group_segments(old, log_):
            outputs.extend(_write_group(log_, group, facts, offset_map, txn_has_data, now_ms, result))
            step(f"wrote group {group[0].base_offset}")
        for output in outputs:
            output.finish()
        step("cleaned")
    except Exception:
        for output in outputs:
            output.discard()
        raise
    _swap_in(log_, old, outputs, step)
    _replace_in_memory(log_, old, outputs, now_ms)
    result.segments_after = len(outputs)
    result.bytes_after = sum(o.size for o in outputs)
    return result


def _write_group(log_: FileLog, group: list[LogSegment], facts: LogFacts, offset_map: OffsetMap,
                 txn_has_data: dict[TxnId, bool], now_ms: int, result: CleanResult) -> list[_Output]:
    """The group's new segment, plus an empty one per trailing segment that kept nothing."""
    directory = log_.directory
    interval = log_.config.index_interval_bytes
    main = _Output(directory, group[0].base_offset, interval)
    outputs = [main]
    kept_by_member = []
    try:
        for segment in group:
            kept_here = 0
            for header, batch in iter_batches(segment.log_path, segment.size):
                filtered = filter_batch(batch, header, facts=facts, offset_map=offset_map,
                                        txn_has_data=txn_has_data, now_ms=now_ms,
                                        delete_retention_ms=log_.config.delete_retention_ms)
                result.records_kept += filtered.kept_records
                result.records_removed += header.records_count - filtered.kept_records
                if filtered.data is None:
                    continue
                main.append(filtered.data, parse_header(filtered.data))
                kept_here += 1
                horizon = filtered.horizon_ms
                if horizon is not None and filtered.kept_records and horizon > now_ms:
                    known = result.earliest_horizon_ms
                    result.earliest_horizon_ms = horizon if known is None else min(known, horizon)
            kept_by_member.append(kept_here)
        last_kept = max((i for i, kept in enumerate(kept_by_member) if kept), default=0)
        for segment in group[last_kept + 1 :]:
            outputs.append(_Output(directory, segment.base_offset, interval))
    except Exception:
        for output in outputs:
            output.discard()
        raise
    return outputs


def _rename(path: str, suffix_from: str, suffix_to: str) -> None:
    if os.path.exists(path + suffix_from):
        os.rename(path + suffix_from, path + suffix_to)


def _swap_in(log_: FileLog, old: list[LogSegment], outputs: list[_Output], step: StepHook) -> None:
    directory = log_.directory
    finals = {o.base_offset: [os.path.join(directory, file_name(o.base_offset, s)) for s in SEGMENT_SUFFIXES]
              for o in outputs}
    try:
        for base in sorted(finals, reverse=True):
            for path in finals[base]:
                _rename(path, CLEANED_SUFFIX, SWAP_SUFFIX)
                step(f"swap {os.path.basename(path)}")
        fsync_dir(directory)
    except Exception:
        if any(name.endswith(CLEANED_SUFFIX) for name in os.listdir(directory)):
            for output in outputs:
                output.discard()  # not committed: back to the old segments
        raise
    step("committed")
    for segment in old:
        for path in (segment.offset_index.path, segment.time_index.path, segment.log_path):
            _rename(path, "", DELETED_SUFFIX)
            step(f"delete {os.path.basename(path)}")
    fsync_dir(directory)
    for base in sorted(finals):
        for path in finals[base]:
            _rename(path, SWAP_SUFFIX, "")
            step(f"replace {os.path.basename(path)}")
    fsync_dir(directory)
    for segment in old:
        segment.close_without_flush()
        for path in (segment.offset_index.path, segment.time_index.path, segment.log_path):
            remove_if_exists(path + DELETED_SUFFIX)
    step("done")


def _replace_in_memory(log_: FileLog, old: list[LogSegment], outputs: list[_Output], now_ms: int) -> None:
    segments = log_.local.segments
    for segment in old:
        segments.remove(segment.base_offset)
    for output in outputs:
        segments.add(LogSegment(log_.directory, output.base_offset, now_ms))
    for output in outputs:
        found = segments.floor(output.base_offset)
        assert found is not None and found.base_offset == output.base_offset
        segment = found
        segment.offset_index.load(segment.size)
        upper = segments.upper_bound_of(segment)
        segment.time_index.load(upper)
        segment.max_timestamp = output.max_timestamp
        segment.offset_of_max_timestamp = (
            output.offset_of_max_timestamp if output.max_timestamp >= 0 else segment.base_offset
        )
        segment.next_offset = upper
