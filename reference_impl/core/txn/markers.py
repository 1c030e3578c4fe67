"""Transaction markers: written where the partition's leader is, acknowledged once the ISR has them.

Two halves. :func:`append_marker_as_leader` and :class:`MarkerWait` are the
receiving side, shared by the WriteTxnMarkers handler and the coordinator's
own partitions: a marker is appended like an acks=all produce (refused below
``min.insync.replicas``) and its answer waits until the high watermark passes
it, as Kafka's broker appends markers with required acks -1.

:class:`MarkerJob` is the sending side's bookkeeping for one transaction
(Kafka's ``TransactionMarkerChannelManager`` entry): the partitions still
without their marker, those in flight, and the coordinator epoch it was
started under. The coordinator groups the remaining partitions by their
current leader, writes its own directly and sends one WriteTxnMarkers per
other leader; errors are retried after a backoff with the leaders looked up
again, until every marker is written or the coordinator is no longer
current (fenced by a newer coordinator epoch, leadership of the state
partition moved, or the transaction moved on).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..ports import TopicPartition
from ..purgatory import DelayedOperation

if TYPE_CHECKING:
    from ..partition import Partition

WRITE_TXN_MARKERS_VERSION = 2
"""v2 carries the transaction version of each marker (Kafka's WriteTxnMarkersRequest.json), which
the leader needs for KIP-890's strict epoch check."""
MARKER_WRITE_TIMEOUT_MS = 30_000
"""How long a marker waits for the ISR before its answer is REQUEST_TIMED_OUT (Kafka: request.timeout.ms)."""
RETRY_BACKOFF_MS = 100
MAX_RETRY_BACKOFF_MS = 1_000

FENCED = frozenset(
    {ErrorCode.invalid_producer_epoch, ErrorCode.producer_fenced, ErrorCode.transaction_coordinator_fenced}
)
"""A newer epoch or coordinator has been at the partition: this marker is no longer needed there."""

MarkerCodes = dict[TopicPartition, ErrorCode]
MarkerListener = Callable[[tuple[str, int], int, bool, int], None]
"""Called after a marker is written: (partition, producer id, committed, now_ms)."""


class MarkerListeners(Protocol):
    @property
    def marker_listeners(self) -> list[MarkerListener]:
        """Who hears of every marker written (the group coordinator, for transactional offsets)."""


class MarkerHost(Protocol):
    """What appending a marker needs of the broker: to wake what waits on the partition, and the
    transaction coordinator's marker listeners."""

    @property
    def txn_coordinator(self) -> MarkerListeners: ...

    def notify_partition_changed(self, key: TopicPartition, now_ms: int) -> None: ...


def append_marker_as_leader(
    broker: MarkerHost,
    part: Partition,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    now_ms: int,
    transaction_version: int = 0,
) -> int:
    """Append a COMMIT or ABORT marker as leader (acks=all's checks first); returns its offset."""
    if part.is_leader and len(part.isr) < part.min_insync_replicas:
        raise KafkaError(
            ErrorCode.not_enough_replicas,
            f"ISR {list(part.isr)} is smaller than min.insync.replicas {part.min_insync_replicas}",
        )
    part.append_marker(producer_id, producer_epoch, coordinator_epoch, commit, now_ms, transaction_version)
    offset = part.log.log_end_offset - 1
    broker.notify_partition_changed(part.key, now_ms)
    for listener in broker.txn_coordinator.marker_listeners:
        listener(part.key, producer_id, commit, now_ms)
    return offset


class MarkerWait(DelayedOperation):
    """Appended markers waiting until the high watermark passes each (acks=all), or the deadline."""

    def __init__(
        self,
        waiting: list[tuple[Partition, int, int]],
        done: Callable[[MarkerCodes], None],
        deadline_ms: int,
    ) -> None:
        super().__init__(deadline_ms)
        self.waiting = waiting  # (partition, its leader epoch at the append, the marker's offset)
        self.done = done

    @property
    def keys(self) -> tuple[TopicPartition, ...]:
        return tuple(part.key for part, _e, _o in self.waiting)

    def try_complete(self, now_ms: int) -> bool:
        for part, epoch, offset in self.waiting:
            if (
                part.is_leader
                and part.leader_epoch == epoch
                and not part.committed(offset)
                and len(part.effective_isr) >= part.min_insync_replicas
            ):
                return False
        return self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        codes: MarkerCodes = {}
        for part, epoch, offset in self.waiting:
            if not part.is_leader or part.leader_epoch != epoch:
                codes[part.key] = ErrorCode.not_leader_or_follower
            elif part.committed(offset):
                codes[part.key] = ErrorCode.none
            elif len(part.effective_isr) < part.min_insync_replicas:
                codes[part.key] = ErrorCode.not_enough_replicas_after_append
            else:
                codes[part.key] = ErrorCode.request_timed_out
        self.done(codes)


class Timer(DelayedOperation):
    """Run ``fn`` at ``deadline_ms`` (a retry backoff, a re-armed wait) on the broker's timing wheel."""

    def __init__(self, deadline_ms: int, fn: Callable[[int], None]) -> None:
        super().__init__(deadline_ms)
        self.fn = fn

    def try_complete(self, now_ms: int) -> bool:
        return False

    def on_complete(self, now_ms: int) -> None:
        self.fn(now_ms)


@dataclass
class MarkerJob:
    """One transaction's markers still to be written."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    remaining: set[TopicPartition]
    transaction_version: int = 0
    in_flight: set[TopicPartition] = field(default_factory=set)
    attempts: int = 0
    retry_armed: bool = False
    finishing: bool = False
    dropped: bool = False

    def backoff_ms(self) -> int:
        return min(MAX_RETRY_BACKOFF_MS, RETRY_BACKOFF_MS << min(self.attempts, 4))


def marker_request(job: MarkerJob, keys: list[TopicPartition]) -> Any:
    """One WriteTxnMarkers carrying this transaction's marker for ``keys`` (all led by one broker)."""
    topics: dict[str, list[int]] = {}
    for topic, index in sorted(keys):
        topics.setdefault(topic, []).append(index)
    return build(
        request_class(27, WRITE_TXN_MARKERS_VERSION),
        {
            "markers": [
                {
                    "producer_id": job.producer_id,
                    "producer_epoch": job.producer_epoch,
                    "transaction_result": job.commit,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                    "coordinator_epoch": job.coordinator_epoch,
                    "transaction_version": job.transaction_version,
                }
            ]
        },
    )


def marker_response_codes(response: Any, job: MarkerJob, keys: list[TopicPartition]) -> MarkerCodes:
    """Each asked partition's code from a WriteTxnMarkers response (missing: retry)."""
    codes: MarkerCodes = dict.fromkeys(keys, ErrorCode.request_timed_out)
    for marker in response.markers:
        if int(marker.producer_id) != job.producer_id:
            continue
        for topic in marker.topics:
            for p in topic.partitions:
                key = (str(topic.name), int(p.partition_index))
                if key in codes:
                    codes[key] = ErrorCode(int(p.error_code))
    return codes
