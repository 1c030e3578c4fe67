"""Which part of a compacted log the cleaner may rewrite now, and whether it is worth it (sans-IO).

Kafka's ``LogCleanerManager`` in one pure function over a description of
the segments, so every rule can be tested without files:

* The log splits at the *first dirty offset* (the cleaner checkpoint: where
  the last clean ended) into a clean part, already compacted, and a dirty part.
* The dirty part ends at the *first uncleanable offset*: the base of the
  first segment that is the active segment (never cleaned: it is still
  being written), or reaches past the stable offset (the last stable offset,
  itself at most the high watermark: nothing uncommitted or undecided is
  compacted), or holds a record younger than ``min.compaction.lag.ms``.
  Plans are made in whole segments.
* A log is worth cleaning when its dirty ratio (dirty bytes over all
  cleanable bytes) is above ``min.cleanable.dirty.ratio``, or when its first
  dirty segment began more than ``max.compaction.lag.ms`` ago (then any
  dirty byte is enough), or when a tombstone or transaction marker the last
  clean stamped has reached its delete horizon (``delete.retention.ms``),
  since only a clean removes it.

``segment.ms`` matters because the active segment is never cleaned: a
quiet topic's records are compacted only once its segment rolls, which on a
compacted topic happens after ``min(segment.ms, max.compaction.lag.ms)``
(:attr:`reference_impl.log.config.LogConfig.max_segment_ms`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..config import LONG_MAX, LogConfig


@dataclass(frozen=True, slots=True)
class SegmentView:
    """What planning needs to know of one segment, oldest first; the last one is the active segment."""

    base_offset: int
    next_offset: int
    """The next segment's base offset (for the active segment: the log end offset)."""
    size: int
    max_timestamp: int
    """Largest record timestamp, -1 when none is known."""
    first_batch_timestamp: int
    """Largest timestamp of the first batch (when the segment's first records arrived), -1 when empty."""


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """One log's cleanable range and why (or whether) to clean it."""

    first_dirty: int
    end_offset: int
    """First uncleanable offset: the clean rewrites segments whose base is below it."""
    clean_bytes: int
    dirty_bytes: int
    must_clean: bool
    """``max.compaction.lag.ms`` has passed for the first dirty segment."""
    horizon_due: bool
    """A delete horizon stamped by an earlier clean has passed."""
    min_ratio: float

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    @property
    def cleanable(self) -> bool:
        if self.dirty_bytes > 0 and (self.must_clean or self.ratio > self.min_ratio):
            return True
        return self.horizon_due

    @property
    def priority(self) -> tuple[bool, float]:
        """Larger first: logs past their compaction lag, then the filthiest (Kafka's choice)."""
        return self.must_clean, self.ratio


def plan_cleaning(
    segments: Sequence[SegmentView],
    *,
    log_start_offset: int,
    checkpoint: int | None,
    stable_offset: int,
    config: LogConfig,
    now_ms: int,
    earliest_horizon_ms: int | None = None,
) -> CleanPlan | None:
    """The plan for one log, or None when its ``cleanup.policy`` does not include ``compact``.

    ``checkpoint`` is where the previous clean ended (None: never cleaned);
    one outside [log start, log end] is ignored, as after a truncation.
    ``stable_offset`` is the partition's last stable offset.
    """
    if not config.compact_enabled or not segments:
        return None
    log_end = segments[-1].next_offset
    first_dirty = log_start_offset
    if checkpoint is not None and log_start_offset <= checkpoint <= log_end:
        first_dirty = checkpoint
    end = segments[-1].base_offset
    lag_limit = now_ms - config.min_compaction_lag_ms
    for segment in segments[:-1]:
        too_recent = (
            config.min_compaction_lag_ms > 0
            and segment.base_offset >= first_dirty
            and segment.max_timestamp > lag_limit
        )
        if segment.next_offset > stable_offset or too_recent:
            end = segment.base_offset
            break
    first_dirty = min(first_dirty, end)
    clean_bytes = sum(s.size for s in segments[:-1] if s.base_offset < first_dirty)
    dirty = [s for s in segments[:-1] if first_dirty <= s.base_offset < end]
    dirty_bytes = sum(s.size for s in dirty)
    must_clean = False
    if config.max_compaction_lag_ms < LONG_MAX and dirty:
        first_ts = next((s.first_batch_timestamp for s in dirty if s.first_batch_timestamp >= 0), -1)
        must_clean = first_ts >= 0 and now_ms - first_ts > config.max_compaction_lag_ms
    horizon_due = (
        earliest_horizon_ms is not None and earliest_horizon_ms <= now_ms and end > segments[0].base_offset
    )
    return CleanPlan(
        first_dirty, end, clean_bytes, dirty_bytes, must_clean, horizon_due, config.min_cleanable_dirty_ratio
    )
