"""The follower side of replication: fetch from each leader what this broker follows.

Kafka's replica fetcher threads, as a state machine: one Fetch in flight per
leader broker, for every partition this broker follows from it (in an incremental
fetch session, :mod:`.fetch_session`: only those whose fetch state changed are sent,
and only those whose state changed on the leader come back), with
the follower's log end offset as the fetch offset and the epoch of its last
batch (KIP-320) so the leader can say where their logs diverge. The leader
holds the fetch until data arrives (``replica.fetch.wait.max.ms``), so a
follower is at most one round trip behind. An answer is applied at once and
the next fetch sent; a failure backs off ``replica.fetch.backoff.ms``. A
follower whose log lies wholly below the leader's log start (retention,
DeleteRecords) asks the leader for its earliest offset and starts over there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode

from ..host import PeerMessenger, ReplicaHost
from .fetch_session import SESSION_ERRORS, FollowerFetchRequest, FollowerFetchSession, PartitionRef

if TYPE_CHECKING:
    from ..partition import Partition

log = logging.getLogger("reference_impl.replication")

FETCH_VERSION = 17
LIST_OFFSETS_VERSION = 9
EARLIEST = -2
LATEST = -1


class PartitionFetch(NamedTuple):
    """One partition's fields in a follower's Fetch (what the session compares with the last sent)."""

    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int


class FetcherHost(ReplicaHost, PeerMessenger, Protocol):
    """What the fetcher needs of the broker: the partitions it follows, and Fetch to their leaders."""

    def followed_by_leader(self) -> dict[int, list[Partition]]:
        """The partitions this broker follows, by leader."""
        ...

    @property
    def wall_ms(self) -> int:
        """The wall time as last given (not held back after a backward step): the backoff is wall
        time, as Kafka's ``DelayedItem`` (``core/src/main/scala/kafka/utils/DelayedItem.scala``,
        ``Time.SYSTEM.milliseconds``) that delays a fetcher's partitions."""
        ...


class ReplicaFetcher:
    def __init__(self, broker: FetcherHost) -> None:
        self.broker = broker
        self.in_flight: set[int] = set()
        self.backoff_until: dict[int, int] = {}
        self.sessions: dict[int, FollowerFetchSession] = {}
        """The incremental fetch session (KIP-227) with each leader."""
        self.entries: dict[int, dict[Partition, tuple[tuple[object, ...], PartitionRef, PartitionFetch]]] = {}
        """By leader: each followed partition's last fetch entry, under the partition's
        :meth:`~Partition.follower_fetch_stamp` and the ``max_bytes`` it was built with."""

    def followed(self) -> dict[int, list[Partition]]:
        """Partitions this broker follows, by leader (not to be changed: the broker keeps it)."""
        return self.broker.followed_by_leader()

    def next_deadline_ms(self) -> int | None:
        waiting = [t for leader, t in self.backoff_until.items() if leader not in self.in_flight]
        return min(waiting) if waiting else None

    def maybe_fetch(self, now_ms: int) -> None:
        followed = self.followed()
        for leader in [n for n, t in self.backoff_until.items() if t <= now_ms and n not in followed]:
            # Its backoff is over and nothing is fetched from it any more: left in place, its
            # past deadline would have the shell wake this broker again at once, for ever.
            del self.backoff_until[leader]
        if len(self.entries) > len(followed):  # a leader no longer followed: its entries go too
            self.entries = {n: built for n, built in self.entries.items() if n in followed}
        for leader, parts in followed.items():
            if leader in self.in_flight or self.backoff_until.get(leader, 0) > now_ms:
                continue
            self._send_fetch(leader, parts, now_ms)

    def _send_fetch(self, leader: int, parts: list[Partition], now_ms: int) -> None:
        config = self.broker.config
        max_bytes = config.get_int("replica.fetch.max.bytes")
        wanted: dict[PartitionRef, PartitionFetch] = {}
        built = self.entries.setdefault(leader, {})
        if len(built) > len(parts):
            built = self.entries[leader] = {p: built[p] for p in parts if p in built}
        for part in parts:  # every followed partition, each fetch; only the changed ones rebuilt
            stamp = (part.follower_fetch_stamp(), max_bytes)
            known = built.get(part)
            if known is not None and known[0] == stamp:
                wanted[known[1]] = known[2]
                continue
            offset, last_epoch = part.follower_fetch_position()
            ref = (part.topic_id, part.index)
            entry = PartitionFetch(
                part.index, part.leader_epoch, offset, last_epoch, part.log.log_start_offset, max_bytes
            )
            built[part] = (stamp, ref, entry)
            wanted[ref] = entry
        session = self.sessions.setdefault(leader, FollowerFetchSession())
        request = session.build(wanted)
        topics: dict[Any, list[dict[str, Any]]] = {}
        for (topic_id, _index), data in request.partitions.items():
            topics.setdefault(topic_id, []).append(data._asdict())
        forgotten: dict[Any, list[int]] = {}
        for topic_id, index in request.forgotten:
            forgotten.setdefault(topic_id, []).append(index)
        body = build(
            request_class(1, FETCH_VERSION),
            {
                "replica_state": {"replica_id": self.broker.node_id, "replica_epoch": -1},
                "max_wait": config.get_int("replica.fetch.wait.max.ms"),
                "min_bytes": 1,
                "max_bytes": config.get_int("replica.fetch.response.max.bytes"),
                "isolation_level": 0,
                "session_id": request.session_id,
                "session_epoch": request.epoch,
                "forgotten_topics_data": [{"topic_id": t, "partitions": ps} for t, ps in forgotten.items()],
                "rack_id": "",
                "topics": [{"topic_id": tid, "partitions": ps} for tid, ps in topics.items()],
            },
        )
        if self.broker.send_request(
            leader, body, lambda resp, err: self._on_fetch(leader, request, resp, err)
        ):
            self.in_flight.add(leader)
        else:
            session.on_failure()
            self.backoff_until[leader] = now_ms + config.get_int("replica.fetch.backoff.ms")

    def _on_fetch(
        self,
        leader: int,
        request: FollowerFetchRequest,
        response: ResponsePayload | None,
        error: str | None,
    ) -> None:
        self.in_flight.discard(leader)
        now_ms = self.broker.now_ms
        wall_ms = self.broker.wall_ms
        session = self.sessions.setdefault(leader, FollowerFetchSession())
        code = ErrorCode.none if response is None else ErrorCode(int(get(response, "error_code", 0)))
        if response is None:
            session.on_failure()
        elif not session.on_response(request, code, int(get(response, "session_id", 0))) and (
            code in SESSION_ERRORS
        ):
            # the next fetch is full and opens a new session: sent at once (a full fetch never
            # answers a session error, so this does not repeat), as Kafka's fetcher goes on
            log.info("fetch session with leader %d lost (%s); fetching in full", leader, code.name)
            self.maybe_fetch(wall_ms)
            return
        if response is None or code is not ErrorCode.none:
            reason = error or f"error {get(response, 'error_code')}"
            log.info("fetch from leader %d failed: %s; backing off", leader, reason)
            self.backoff_until[leader] = wall_ms + self.broker.config.get_int("replica.fetch.backoff.ms")
            return
        self.backoff_until.pop(leader, None)
        failed = resync = False
        answer: Any = response
        for topic in answer.responses:
            info = self.broker.image.topic_by_id(topic.topic_id)
            for p in topic.partitions:
                part = self.broker.partition(info.name, int(p.partition_index)) if info else None
                if part is None or part.is_leader or part.leader_id != leader:
                    resync = True
                    continue
                code = ErrorCode(int(p.error_code))
                if code is ErrorCode.none:
                    diverging = None
                    if (p.diverging_epoch is not None and int(p.diverging_epoch.epoch) >= 0) or (
                        p.diverging_epoch is not None and int(p.diverging_epoch.end_offset) >= 0
                    ):
                        diverging = (int(p.diverging_epoch.epoch), int(p.diverging_epoch.end_offset))
                        resync = True  # truncates, and takes no high watermark from this answer
                    part.apply_from_leader(
                        bytes(p.records or b""), int(p.high_watermark), int(p.log_start_offset), diverging
                    )
                    self.broker.notify_partition_changed(part.key, now_ms)
                    continue
                # sent again in the next fetch: a leader that did not know the topic yet keeps no
                # session state for the partition (the error is all it answers), so it must be named
                session.resend((topic.topic_id, int(p.partition_index)))
                if code is ErrorCode.offset_out_of_range:
                    self._reset_to_leader_start(leader, part)
                else:
                    failed = True  # not leader, fenced epoch: wait for metadata to catch up
        if resync:
            # a high watermark not taken (the role changed meanwhile, or the answer was a diverging
            # epoch to truncate to) is marked reported in the leader's session all the same, which
            # would not send it again while it stays: start a new session, whose first answer is full
            session.reset(keep_id=True)
        if failed:
            self.backoff_until[leader] = wall_ms + self.broker.config.get_int("replica.fetch.backoff.ms")
        else:
            self.maybe_fetch(wall_ms)

    def _reset_to_leader_start(self, leader: int, part: Partition) -> None:
        """OFFSET_OUT_OF_RANGE: ask the leader for its log end, then its log start, and reposition.

        Ahead of the leader's end (its log was truncated by an unclean election)
        the follower truncates to that end; behind its start (retention,
        DeleteRecords) it empties its log and starts at the leader's start.
        """

        def ask(timestamp: int, then: Callable[[int], None]) -> None:
            body = build(
                request_class(2, LIST_OFFSETS_VERSION),
                {
                    "replica_id": self.broker.node_id,
                    "isolation_level": 0,
                    "timeout": 30_000,
                    "topics": [
                        {
                            "name": part.topic,
                            "partitions": [
                                {
                                    "partition_index": part.index,
                                    "timestamp": timestamp,
                                    "current_leader_epoch": part.leader_epoch,
                                }
                            ],
                        }
                    ],
                },
            )

            def done(response: ResponsePayload | None, _error: str | None) -> None:
                if response is None:
                    return
                answer: Any = response
                entry = answer.topics[0].partitions[0]
                if int(entry.error_code) == ErrorCode.none:
                    then(int(entry.offset))

            self.broker.send_request(leader, body, done)

        def with_end(leader_end: int) -> None:
            if leader_end < part.log.log_end_offset:
                log.info("%s-%d: truncating to the leader's end %d", part.topic, part.index, leader_end)
                part.truncate_to(max(leader_end, part.log.log_start_offset))
            else:
                ask(EARLIEST, with_start)

        def with_start(leader_start: int) -> None:
            if leader_start > part.log.log_end_offset:
                log.info(
                    "%s-%d: our log ends below the leader's start %d; starting over there",
                    part.topic,
                    part.index,
                    leader_start,
                )
                part.reset_to_leader_start(leader_start)

        ask(LATEST, with_end)
