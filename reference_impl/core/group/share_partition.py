"""Share groups (KIP-932): the sans-IO state machine of one share-partition.

Kafka's model (``core/src/main/java/kafka/server/share/SharePartition.java``, its
``InFlightState``/``RecordState`` in ``server/share/fetch``, configs in
``ShareGroupConfig.java`` and ``GroupConfig.java``):

* the **share-partition start offset** (SPSO) is the lowest offset not yet finished with
  (acknowledged or archived); the **end offset** (SPEO) is the last offset ever acquired;
  records in ``[SPSO, SPEO]`` are *in flight*, each in one of the states AVAILABLE, ACQUIRED,
  ACKNOWLEDGED, ARCHIVED (Kafka's wire ids 0, 1, 2, 4);
* acquiring a record gives one member a lock for ``share.record.lock.duration.ms`` and adds one
  to the record's delivery count; redeliveries (AVAILABLE records below SPEO) go out before new
  records; the number of in-flight records is bounded by
  ``group.share.partition.max.record.locks``;
* a member acknowledges what it holds with ACCEPT (1, → ACKNOWLEDGED), RELEASE (2, → AVAILABLE
  again) or REJECT (3, → ARCHIVED); GAP (0) archives an offset with no record; acknowledging
  a record the member does not hold is INVALID_RECORD_STATE and changes nothing;
* a released record, or one whose lock expires, whose delivery count has reached
  ``share.delivery.attempt.limit`` is ARCHIVED instead of becoming AVAILABLE;
* an acknowledgement is an in-flight *transition* until its state is written: the records take
  their new state at once, keep the one they had (``InFlightState.startStateTransition``'s rollback
  state), and :meth:`SharePartition.complete_transitions` commits them once the write succeeded or
  rolls them back (ACQUIRED by the member again, under its lock) when it failed
  (``SharePartition.rollbackOrProcessStateUpdates``); the SPSO does not pass a record in
  transition. A record RELEASEd and still being written may be acquired (a ShareFetch's
  piggybacked RELEASE redelivers at once, as the conformance suite and apache/kafka 1eb76443's
  ``acquire`` have it): its new holder ends the transition, nothing of it is rolled back. Later Kafka
  skips such records (``InFlightState.hasOngoingStateTransition``) until the write is done;
* the SPSO moves past the leading run of ACKNOWLEDGED/ARCHIVED records;
* a new share-partition starts at the log end (``share.auto.offset.reset=latest``, the default)
  or the log start (``earliest``).

Nothing here reads a clock: ``mono_ms`` is an input of :meth:`SharePartition.acquire` and
:meth:`SharePartition.expire_locks`, and :meth:`SharePartition.next_lock_deadline` tells the
caller when to call the latter. It is the broker's monotonic clock: Kafka's acquisition lock is an
``AcquisitionLockTimerTask`` on a ``SystemTimer``, due at ``time.hiResClockMs() + delayMs``
(``SharePartition.scheduleAcquisitionLockTimeout``, ``core/src/main/java/kafka/server/share/
SharePartition.java``, apache/kafka 1eb76443), so a step of the wall clock neither ends a lock early
nor holds it past its duration. Sizes are bounded by the config, never by the wire.

Defaults follow ``server/src/main/java/org/apache/kafka/server/config/ShareGroupConfigs.java``
(apache/kafka commit 6a122586, the version read for this module): broker-level
``group.share.record.lock.duration.ms`` 30000, ``group.share.delivery.count.limit`` 5 (range 2..10;
the group-level override is ``share.delivery.attempt.limit`` in later releases),
``group.share.partition.max.record.locks`` 200 (range 100..10000; later releases raised it).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reference_impl.protocol.errors import ErrorCode, KafkaError

DEFAULT_LOCK_DURATION_MS = 30_000
DEFAULT_DELIVERY_ATTEMPT_LIMIT = 5
DEFAULT_MAX_RECORD_LOCKS = 200
# Cap on one acknowledgement batch's span, so a hostile [0, 2**63) range is refused before a loop.
MAX_ACK_SPAN = 1 << 20


class RecordState(enum.IntEnum):
    """``RecordState.java``: the ids written in ShareSnapshot/ShareUpdate state batches."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """``clients/.../consumer/AcknowledgeType.java`` plus the wire-only GAP (0)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


class AutoOffsetReset(enum.Enum):
    LATEST = "latest"
    EARLIEST = "earliest"


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS
    delivery_attempt_limit: int = DEFAULT_DELIVERY_ATTEMPT_LIMIT
    max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS
    auto_offset_reset: AutoOffsetReset = AutoOffsetReset.LATEST

    def __post_init__(self) -> None:
        if self.lock_duration_ms <= 0 or self.delivery_attempt_limit <= 0 or self.max_record_locks <= 0:
            raise ValueError("share-partition limits must be positive")


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: int | None = None  # on the monotonic clock
    rollback: InFlight | None = None
    """The state before an acknowledgement whose write is not done yet (Kafka's rollback state)."""
    transition: int = 0
    """That acknowledgement's change number: the writes covering it decide it."""


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """One AcquiredRecords entry of a ShareFetch answer."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class SharePartition:
    """In-flight records of one topic-partition for one share group."""

    def __init__(self, config: SharePartitionConfig, *, log_start: int, log_end: int) -> None:
        if not 0 <= log_start <= log_end:
            raise ValueError("log offsets out of order")
        self.config = config
        start = log_end if config.auto_offset_reset is AutoOffsetReset.LATEST else log_start
        self._spso = start
        self._next = start  # SPEO + 1: the next offset never acquired yet
        self._records: dict[int, InFlight] = {}
        self.changes = 0
        """Counts the changes the persisted state must follow (acknowledgements, releases, expired
        locks, a moved log start); the persister writes when it differs from what it wrote."""

    @property
    def start_offset(self) -> int:
        return self._spso

    @property
    def end_offset(self) -> int:
        """SPEO: the last offset in flight (``start_offset - 1`` when nothing is)."""
        return self._next - 1

    def state_of(self, offset: int) -> InFlight | None:
        return self._records.get(offset)

    def in_flight(self) -> int:
        return len(self._records)

    # -- acquisition -----------------------------------------------------------------------

    def acquire(self, member_id: str, *, mono_ms: int, log_end: int, max_records: int) -> list[AcquiredRange]:
        """Lock up to ``max_records`` records for ``member_id``: redeliveries first, then new ones,
        all below ``log_end`` (the end of the batches the caller read), never taking the in-flight
        count past ``max_record_locks``."""
        budget = max(0, max_records)
        taken: list[int] = []
        for offset in sorted(self._records):
            if budget == 0 or offset >= log_end:
                break
            record = self._records[offset]
            if record.state is RecordState.AVAILABLE:
                self._lock(record, member_id, mono_ms)
                taken.append(offset)
                budget -= 1
        room = self.config.max_record_locks - len(self._records)
        fresh = max(0, min(budget, room, log_end - self._next))
        for offset in range(self._next, self._next + fresh):
            record = InFlight(RecordState.AVAILABLE)
            self._lock(record, member_id, mono_ms)
            self._records[offset] = record
            taken.append(offset)
        self._next += fresh
        return _ranges(taken, self._records)

    def next_candidate(self) -> int:
        """The lowest offset :meth:`acquire` would hand out: the first AVAILABLE in-flight record, or
        the first never-acquired offset (a ShareFetch reads the log from here)."""
        available = [o for o, r in self._records.items() if r.state is RecordState.AVAILABLE]
        return min(available) if available else self._next

    def _lock(self, record: InFlight, member_id: str, mono_ms: int) -> None:
        record.rollback, record.transition = None, 0  # a pending RELEASE is superseded, not undone
        record.state = RecordState.ACQUIRED
        record.delivery_count += 1
        record.member_id = member_id
        record.lock_deadline_ms = mono_ms + self.config.lock_duration_ms

    # -- acknowledgement ---------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch]) -> int:
        """Apply every batch or none, as a transition the write of change number returned (0: none
        made) decides; raise KafkaError (INVALID_REQUEST for a malformed batch, INVALID_RECORD_STATE
        for a record ``member_id`` does not hold)."""
        plan: list[tuple[int, AcknowledgeType]] = []
        for batch in batches:
            plan.extend(self._check(member_id, batch))
        if not plan:
            return 0
        self.changes += 1
        for offset, kind in plan:
            record = self._records[offset]
            record.rollback = InFlight(
                record.state, record.delivery_count, record.member_id, record.lock_deadline_ms
            )
            record.transition = self.changes
            if kind is AcknowledgeType.ACCEPT:
                self._finish(record, RecordState.ACKNOWLEDGED)
            elif kind is AcknowledgeType.RELEASE:
                self._release(record)
            else:
                self._finish(record, RecordState.ARCHIVED)
        return self.changes

    def complete_transitions(self, upto: int, *, commit: bool) -> None:
        """The write of the state with ``upto`` changes is done (``commit``) or failed: the
        acknowledgements it covered keep their new state, or take back the one they had
        (``InFlightState.completeStateTransition``); a record whose restored lock ran out meanwhile
        is released by the next :meth:`expire_locks`."""
        for record in self._records.values():
            before = record.rollback
            if before is None or record.transition > upto:
                continue
            if not commit:
                record.state, record.delivery_count = before.state, before.delivery_count
                record.member_id, record.lock_deadline_ms = before.member_id, before.lock_deadline_ms
            record.rollback, record.transition = None, 0
        self._advance()

    def _check(self, member_id: str, batch: AckBatch) -> list[tuple[int, AcknowledgeType]]:
        span = batch.last_offset - batch.first_offset + 1
        if span <= 0 or span > MAX_ACK_SPAN or len(batch.types) not in (1, span):
            raise KafkaError(ErrorCode.invalid_request, "malformed acknowledgement batch")
        try:
            kinds = [AcknowledgeType(t) for t in batch.types]
        except ValueError:
            raise KafkaError(ErrorCode.invalid_request, "unknown acknowledge type") from None
        out: list[tuple[int, AcknowledgeType]] = []
        for i in range(span):
            offset = batch.first_offset + i
            record = self._records.get(offset)
            if record is None or record.state is not RecordState.ACQUIRED or record.member_id != member_id:
                raise KafkaError(
                    ErrorCode.invalid_record_state, f"offset {offset} is not acquired by the member"
                )
            out.append((offset, kinds[0] if len(kinds) == 1 else kinds[i]))
        return out

    def _finish(self, record: InFlight, state: RecordState) -> None:
        record.state = state
        record.member_id = None
        record.lock_deadline_ms = None

    def _release(self, record: InFlight) -> None:
        limit_reached = record.delivery_count >= self.config.delivery_attempt_limit
        self._finish(record, RecordState.ARCHIVED if limit_reached else RecordState.AVAILABLE)

    def _advance(self) -> None:
        while self._spso < self._next:
            record = self._records.get(self._spso)
            if (
                record is None
                or record.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
                or record.rollback is not None  # not written yet: it may come back
            ):
                break
            del self._records[self._spso]
            self._spso += 1

    # -- timers and membership -----------------------------------------------------------------

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self._records.values() if r.lock_deadline_ms is not None]
        return min(deadlines) if deadlines else None

    def expire_locks(self, mono_ms: int) -> list[int]:
        """Release every record whose lock ran out by ``mono_ms`` (monotonic); the offsets released."""
        expired = [
            offset
            for offset, r in sorted(self._records.items())
            if r.lock_deadline_ms is not None and r.lock_deadline_ms <= mono_ms
        ]
        for offset in expired:
            self._release(self._records[offset])
        self.changes += 1 if expired else 0
        self._advance()
        return expired

    def release_member(self, member_id: str) -> list[int]:
        """A member left the group: what it held goes back (``SharePartition.releaseAcquiredRecords``)."""
        held = [o for o, r in sorted(self._records.items()) if r.member_id == member_id]
        for offset in held:
            self._release(self._records[offset])
        self.changes += 1 if held else 0
        self._advance()
        return held

    def log_start_moved(self, log_start: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) are done with: archive them."""
        if log_start <= self._spso:
            return
        for offset in [o for o in self._records if o < log_start]:
            del self._records[offset]
        self._spso = log_start
        self._next = max(self._next, log_start)
        self.changes += 1
        self._advance()

    # -- persisted state (share_persister.py) ---------------------------------------------------

    def written_start(self) -> int:
        """The start offset a write carries: past the leading ACKNOWLEDGED/ARCHIVED records, those in
        transition included (the write persists them; a failed one is rewritten with the start
        rolled back). Kafka's ``writeShareGroupState`` sends the start from before the transitions
        and moves it after the write; the conformance suite (test_k83's
        ``test_acknowledgements_reach_the_share_coordinator``) reads the new one once answered."""
        offset = self._spso
        while offset < self._next:
            record = self._records.get(offset)
            if record is None or record.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            offset += 1
        return offset

    def state_batches(self) -> list[tuple[int, int, int, int]]:
        """The in-flight records as state batches (first, last, delivery state, delivery count),
        contiguous runs of one state and count merged. An ACQUIRED record is written AVAILABLE with
        its delivery count: a new leader has no lock to keep, so the record goes out again."""
        out: list[tuple[int, int, int, int]] = []
        for offset in sorted(self._records):
            r = self._records[offset]
            state = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
            if out and out[-1][1] + 1 == offset and out[-1][2:] == (state, r.delivery_count):
                out[-1] = (out[-1][0], offset, state, r.delivery_count)
            else:
                out.append((offset, offset, int(state), r.delivery_count))
        return out

    def restore(self, start_offset: int, batches: Iterable[tuple[int, int, int, int]]) -> None:
        """Take persisted state (ReadShareGroupState): the start offset and the batches' records, at
        most ``max_record_locks`` offsets from the start (past them, records are new again). Offsets
        between the start and a batch that no batch names were never delivered (Kafka's gaps)."""
        limit = start_offset + self.config.max_record_locks
        self._spso = start_offset
        self._records = {}
        end = start_offset
        budget = 2 * self.config.max_record_locks  # bounds the loop over overlapping batches
        for first, last, state, count in sorted(batches):
            lo, hi = max(first, start_offset), min(last, limit - 1)
            if lo > hi or state not in (0, 2, 4) or budget <= 0:
                continue
            for offset in range(lo, min(hi, lo + budget - 1) + 1):
                self._records[offset] = InFlight(RecordState(state), max(0, count))
                budget -= 1
            end = max(end, hi + 1)
        for offset in range(start_offset, end):
            self._records.setdefault(offset, InFlight(RecordState.AVAILABLE))
        self._next = end
        self._advance()


def _ranges(offsets: Iterable[int], records: dict[int, InFlight]) -> list[AcquiredRange]:
    """Contiguous offsets with the same delivery count, as AcquiredRecords entries."""
    out: list[AcquiredRange] = []
    for offset in sorted(offsets):
        count = records[offset].delivery_count
        last = out[-1] if out else None
        if last is not None and last.last_offset + 1 == offset and last.delivery_count == count:
            out[-1] = AcquiredRange(last.first_offset, offset, count)
        else:
            out.append(AcquiredRange(offset, offset, count))
    return out
