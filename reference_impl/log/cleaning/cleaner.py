"""The data directory's log cleaner: pick the filthiest compacted log, clean it, remember how far.

Kafka's ``LogCleaner`` and ``LogCleanerManager`` without the threads: the
broker's maintenance asks (:meth:`LogCleaner.clean`) with each partition's
last stable offset, and one log is cleaned per call, so the broker's loop
is never held for long. Where the last clean of each log ended is kept in
``cleaner-offset-checkpoint`` (Kafka's file and format), so a restart does
not treat a clean log as dirty. A log whose files cannot be read as batches
is marked uncleanable until the next start, as Kafka does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from ..checkpoints import TopicPartition, read_offsets, write_offsets
from ..partition_log import FileLog
from .executor import CleanResult, clean_log, earliest_horizon, segment_views
from .plan import CleanPlan, plan_cleaning

log = logging.getLogger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
DEFAULT_MAP_CAPACITY = 128 * 1024 * 1024 * 9 // 10 // 24
"""Kafka's default ``log.cleaner.dedupe.buffer.size`` (128 MiB) in 24-byte entries at load factor 0.9."""


class LogCleaner:
    def __init__(self, data_dir: str, map_capacity: int = DEFAULT_MAP_CAPACITY) -> None:
        self.path = os.path.join(data_dir, CLEANER_CHECKPOINT)
        self.map_capacity = map_capacity
        self.checkpoints: dict[TopicPartition, int] = read_offsets(self.path)
        """Raises :class:`CheckpointError` for an unreadable file, which the log manager refuses."""
        self._horizons: dict[TopicPartition, int | None] = {}
        self.uncleanable: set[TopicPartition] = set()
        self.last_result: dict[TopicPartition, CleanResult] = {}

    def plan(self, key: TopicPartition, opened: FileLog, stable_offset: int, now_ms: int) -> CleanPlan | None:
        """The plan for one open log (None: not compacted, or uncleanable)."""
        if key in self.uncleanable or not opened.config.compact_enabled:
            return None
        if key not in self._horizons:
            self._horizons[key] = earliest_horizon(opened)
        return plan_cleaning(
            segment_views(opened),
            log_start_offset=opened.log_start_offset,
            checkpoint=self.checkpoints.get(key),
            stable_offset=min(stable_offset, opened.log_end_offset),
            config=opened.config,
            now_ms=now_ms,
            earliest_horizon_ms=self._horizons[key],
        )

    def clean(self, logs: Mapping[TopicPartition, FileLog], stable_offsets: Mapping[TopicPartition, int],
              now_ms: int) -> bool:
        """Clean the log that needs it most; True when another clean is already due."""
        due: list[tuple[tuple[bool, float], TopicPartition, CleanPlan]] = []
        for key, stable in stable_offsets.items():
            opened = logs.get(key)
            plan = self.plan(key, opened, stable, now_ms) if opened is not None else None
            if plan is not None and plan.cleanable:
                due.append((plan.priority, key, plan))
        if not due:
            return False
        due.sort(key=lambda item: item[0], reverse=True)
        _priority, key, plan = due[0]
        opened = logs[key]
        try:
            result = clean_log(opened, plan, now_ms, map_capacity=self.map_capacity)
        except Exception as exc:  # a damaged segment: leave this log alone, keep cleaning the others
            log.error("%s-%d: cleaning failed, marked uncleanable: %s", key[0], key[1], exc)
            self.uncleanable.add(key)
            return len(due) > 1
        self.checkpoints[key] = result.end_offset
        self._horizons[key] = result.earliest_horizon_ms
        self.last_result[key] = result
        self.write_checkpoint()
        log.info("%s-%d: cleaned below offset %d: %d→%d segments, %d→%d bytes, %d records removed",
                 key[0], key[1], result.end_offset, result.segments_before, result.segments_after,
                 result.bytes_before, result.bytes_after, result.records_removed)
        return len(due) > 1 or result.map_limited

    def forget(self, key: TopicPartition) -> None:
        """The log was deleted."""
        self.checkpoints.pop(key, None)
        self._horizons.pop(key, None)
        self.uncleanable.discard(key)
        if os.path.exists(self.path):
            self.write_checkpoint()

    def write_checkpoint(self) -> None:
        write_offsets(self.path, self.checkpoints)
