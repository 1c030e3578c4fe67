"""Incremental fetch sessions (KIP-227).

A consumer fetching from hundreds of partitions need not list them all on
every request: the broker remembers the set (a session) and the client sends
only changes; the broker answers only partitions whose state changed (new
records, a moved high watermark, last stable offset or log start offset, an
error). Session id 0 with epoch -1 is a sessionless full fetch; epoch 0
opens a session; epoch -1 with an id closes it; otherwise the epoch must be
the next one expected (INVALID_FETCH_SESSION_EPOCH) of a session that
exists (FETCH_SESSION_ID_NOT_FOUND).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reference_impl.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from .replication.isr import FollowerState

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0
EVICTION_IDLE_MS = 120_000

PartitionKey = tuple[str, int]


@dataclass
class SessionPartition:
    """What the client asked for, and what it was last told (to answer incrementally)."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    last_high_watermark: int = -2
    last_stable_offset: int = -2
    last_log_start_offset: int = -2
    quiet: tuple[tuple[object, ...], FollowerState] | None = None
    """A follower's partition found idle and left out of an incremental answer: the partition's
    :meth:`~reference_impl.core.partition.Partition.quiet_stamp` then, and the leader's record of
    that follower. While the follower does not name the partition again and the stamp holds, its
    next fetch of it is idle too, told to that record without the checks (issue 22)."""


@dataclass
class FetchSession:
    session_id: int
    next_epoch: int
    partitions: dict[PartitionKey, SessionPartition] = field(default_factory=dict)
    last_used_ms: int = 0


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """How to answer one fetch: the partitions to read, and whether to answer all of them."""

    session_id: int
    partitions: dict[PartitionKey, SessionPartition]
    incremental: bool
    error: ErrorCode = ErrorCode.none
    session: FetchSession | None = None

    def should_report(
        self,
        key: PartitionKey,
        high_watermark: int,
        last_stable: int,
        log_start: int,
        has_records: bool,
        has_error: bool,
        *,
        update: bool = True,
    ) -> bool:
        """Full fetches report every partition; incremental ones only what changed. ``update``: the
        session remembers what was reported (not for an answer that may yet be dropped)."""
        part = self.partitions[key]
        changed = (part.last_high_watermark, part.last_stable_offset, part.last_log_start_offset) != (
            high_watermark,
            last_stable,
            log_start,
        )
        if update:
            part.last_high_watermark = high_watermark
            part.last_stable_offset = last_stable
            part.last_log_start_offset = log_start
        return not self.incremental or has_records or has_error or changed


class FetchSessionCache:
    def __init__(self, max_slots: int, rng: random.Random) -> None:
        self.max_slots = max_slots
        self.rng = rng
        self.sessions: dict[int, FetchSession] = {}

    def plan(
        self,
        session_id: int,
        epoch: int,
        requested: Iterable[tuple[PartitionKey, SessionPartition]],
        forgotten: Iterable[PartitionKey],
        now_ms: int,
        *,
        allow_new: bool = True,
    ) -> FetchPlan:
        wanted = dict(requested)
        if session_id == NO_SESSION:
            if epoch == FINAL_EPOCH:
                return FetchPlan(NO_SESSION, wanted, incremental=False)
            if epoch != INITIAL_EPOCH:
                return FetchPlan(NO_SESSION, {}, False, ErrorCode.invalid_fetch_session_epoch)
            return self._open(wanted, now_ms, allow_new)
        if epoch == FINAL_EPOCH:
            self.sessions.pop(session_id, None)
            return FetchPlan(NO_SESSION, wanted, incremental=False)
        if epoch == INITIAL_EPOCH:
            self.sessions.pop(session_id, None)
            return self._open(wanted, now_ms, allow_new)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchPlan(NO_SESSION, {}, False, ErrorCode.fetch_session_id_not_found)
        if session.next_epoch != epoch:
            return FetchPlan(NO_SESSION, {}, False, ErrorCode.invalid_fetch_session_epoch)
        for key in forgotten:
            session.partitions.pop(key, None)
        for key, part in wanted.items():
            old = session.partitions.get(key)
            if old is not None:
                part.last_high_watermark = old.last_high_watermark
                part.last_stable_offset = old.last_stable_offset
                part.last_log_start_offset = old.last_log_start_offset
            session.partitions[key] = part
        session.next_epoch = next_epoch(epoch)
        session.last_used_ms = now_ms
        return FetchPlan(session_id, session.partitions, incremental=True, session=session)

    def remove(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def _open(self, wanted: dict[PartitionKey, SessionPartition], now_ms: int, allow_new: bool) -> FetchPlan:
        if not allow_new or self.max_slots <= 0 or not self._make_room(now_ms):
            return FetchPlan(NO_SESSION, wanted, incremental=False)
        session_id = NO_SESSION
        while session_id == NO_SESSION or session_id in self.sessions:
            session_id = self.rng.randrange(1, 2**31)
        session = FetchSession(session_id, next_epoch(INITIAL_EPOCH), wanted, now_ms)
        self.sessions[session_id] = session
        return FetchPlan(session_id, wanted, incremental=False, session=session)

    def _make_room(self, now_ms: int) -> bool:
        if len(self.sessions) < self.max_slots:
            return True
        oldest = min(self.sessions.values(), key=lambda s: s.last_used_ms)
        if now_ms - oldest.last_used_ms >= EVICTION_IDLE_MS:
            del self.sessions[oldest.session_id]
            return True
        return False


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1
