"""When the broker asks its store to compact logs, and how far each may be compacted (sans-IO).

Kafka runs its log cleaner on threads that sleep ``log.cleaner.backoff.ms``
when no log needs cleaning and look again at once after cleaning one. Here
the broker's tick asks (:meth:`CleanerSchedule.maybe_clean`) on the same
rhythm, and the storage port does the file work, one log per call. The bound
given for each compacted partition is its last stable offset: nothing above
the high watermark, and nothing of a transaction still open, is compacted.
"""

from __future__ import annotations

from collections.abc import Mapping

from .configs.resolution import BrokerConfig
from .partition import Partition
from .ports import LogStore, TopicPartition

AGAIN_MS = 1
"""After a clean that left more work, ask again on the next tick (other events run in between)."""


def is_compacted(configs: Mapping[str, str]) -> bool:
    return "compact" in configs.get("cleanup.policy", "delete")


class CleanerSchedule:
    """When to clean, on the monotonic clock: Kafka's cleaner threads back off with a timed wait
    (``ShutdownableThread.pause``, a ``Condition.await``, ``System.nanoTime``), which a step of the
    wall clock neither shortens nor stretches."""

    def __init__(self, config: BrokerConfig, mono_ms: int) -> None:
        self.enabled = config.get_bool("log.cleaner.enable")
        self.backoff_ms = config.get_int("log.cleaner.backoff.ms")
        self.next_ms = mono_ms + self.backoff_ms
        """On the monotonic clock."""

    def maybe_clean(
        self,
        partitions: Mapping[TopicPartition, Partition],
        store: LogStore,
        now_ms: int,
        mono_ms: int | None = None,
    ) -> None:
        """Ask the store for one clean (at wall time ``now_ms``) if the cleaner is due by ``mono_ms``
        (default: the wall time)."""
        mono = now_ms if mono_ms is None else mono_ms
        if not self.enabled or mono < self.next_ms:
            return
        bounds = {key: p.last_stable_offset for key, p in partitions.items() if is_compacted(p.configs)}
        more = bool(bounds) and store.clean(now_ms, bounds)
        self.next_ms = mono + (AGAIN_MS if more else self.backoff_ms)

    def next_deadline_ms(self) -> int | None:
        return self.next_ms if self.enabled else None
