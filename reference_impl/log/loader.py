"""Opening a partition directory: find the segments, check the indexes, recover after a crash.

Kafka's ``LogLoader``, in three steps:

1. Finish or undo a clean a crash interrupted (``.cleaned`` and ``.swap``
   files, :mod:`reference_impl.log.cleaning.recovery`), then clean the
   directory: remove files left by an interrupted deletion or write
   (``.deleted``, ``.tmp``) and index files whose ``.log`` is gone.
2. Open every segment. An index that is missing, not a whole number of
   entries, or pointing outside its segment is rebuilt from the ``.log``.
3. After an unclean stop (no clean-shutdown marker), recover every segment
   from the one holding the recovery point onwards: check each batch's
   length and CRC32C, cut the first segment with a bad byte there, and
   delete the segments after it. As a segment is flushed before the next one
   takes data, only the active segment can lose bytes in a crash, so what
   survives is a prefix of what was written.

After a clean stop nothing is scanned but the active segment's batches after
its last index entry.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from .cleaning.recovery import finish_interrupted_clean
from .config import LogConfig
from .index import IndexCorruptError
from .segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    MAX_RELATIVE_OFFSET,
    TIME_INDEX_SUFFIX,
    LogSegment,
    base_offset_of,
)
from .segments import LogSegments

log = logging.getLogger(__name__)

_STRAY_SUFFIXES = (DELETED_SUFFIX, ".cleaned", ".swap", ".tmp")


@dataclass
class LoadReport:
    """What opening a directory did, for the broker's log and for tests."""

    recovered_segments: list[int] = field(default_factory=list)
    rebuilt_indexes: list[int] = field(default_factory=list)
    truncated_bytes: int = 0
    deleted_segments: list[int] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)


def _clean_directory(directory: str, report: LoadReport) -> list[int]:
    """Remove leftovers; return the base offsets of the ``.log`` files, sorted."""
    names = os.listdir(directory)
    logs = {base for name in names if name.endswith(LOG_SUFFIX)
            if (base := base_offset_of(name)) is not None}
    for name in names:
        base = base_offset_of(name)
        stray = name.endswith(_STRAY_SUFFIXES) and (base is not None or name.endswith(".tmp"))
        orphan = name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX)) and base is not None and base not in logs
        if stray or orphan:
            os.remove(os.path.join(directory, name))
            report.removed_files.append(name)
    return sorted(logs)


def _indexes_usable(segment: LogSegment, next_base: int | None) -> bool:
    """Load both indexes; False if either is missing or cannot be right (then it is rebuilt)."""
    bound = next_base if next_base is not None else segment.base_offset + MAX_RELATIVE_OFFSET + 1
    try:
        segment.offset_index.load(segment.size)
        segment.time_index.load(bound)
    except IndexCorruptError as exc:
        log.warning("%s", exc)
        return False
    return True


def load_segments(directory: str, config: LogConfig, *, recovery_point: int, clean_shutdown: bool,
                  start_offset: int, now_ms: int) -> tuple[LogSegments, int, LoadReport]:
    """The directory's segments, ready to use, and the recovery point to keep.

    ``start_offset`` is where an empty directory's first segment starts (the
    checkpointed log start offset). The recovery point returned is the log
    end offset after a clean stop, else the given one capped at the log end:
    recovered bytes may still be only in the page cache.
    """
    report = LoadReport()
    os.makedirs(directory, exist_ok=True)
    report.removed_files.extend(finish_interrupted_clean(directory))
    bases = _clean_directory(directory, report)
    segments = LogSegments()
    needs_rebuild: set[int] = set()
    for i, base in enumerate(bases):
        had_indexes = all(os.path.exists(os.path.join(directory, f"{base:020d}{suffix}"))
                          for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX))
        segment = LogSegment(directory, base, now_ms)
        segments.add(segment)
        next_base = bases[i + 1] if i + 1 < len(bases) else None
        if not _indexes_usable(segment, next_base) or not had_indexes:
            needs_rebuild.add(base)
    if not len(segments):
        segments.add(LogSegment(directory, start_offset, now_ms))
        return segments, start_offset, report

    unflushed = set() if clean_shutdown else {s.base_offset for s in segments.from_offset(recovery_point)}
    ordered = list(segments)
    for i, segment in enumerate(ordered):
        is_unflushed = segment.base_offset in unflushed
        if not is_unflushed and segment.base_offset not in needs_rebuild:
            continue
        result = segment.recover(config.index_interval_bytes)
        report.recovered_segments.append(segment.base_offset)
        if segment.base_offset in needs_rebuild:
            report.rebuilt_indexes.append(segment.base_offset)
        if result.truncated_bytes:
            report.truncated_bytes += result.truncated_bytes
            log.warning("%s: cut %d bytes from segment %d (%s)", directory, result.truncated_bytes,
                        segment.base_offset, result.reason)
            if is_unflushed:
                _delete(segments, ordered[i + 1:], report)
                break

    active = segments.active
    if active.base_offset not in report.recovered_segments:
        active.load_tail()
    for segment in segments:
        if segment is not active and segment.base_offset not in report.recovered_segments:
            segment.max_timestamp, segment.offset_of_max_timestamp = segment.time_index.last_entry
            segment.next_offset = segments.upper_bound_of(segment)
    end = active.next_offset
    return segments, end if clean_shutdown else min(recovery_point, end), report


def _delete(segments: LogSegments, doomed: list[LogSegment], report: LoadReport) -> None:
    for segment in doomed:
        segments.remove(segment.base_offset)
        segment.delete()
        report.deleted_segments.append(segment.base_offset)
