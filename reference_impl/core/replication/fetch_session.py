"""A follower's incremental fetch session with one leader (KIP-227), as Kafka's replica fetcher.

Kafka's ``ReplicaFetcherThread`` builds every fetch through a ``FetchSessionHandler``
(``clients/src/main/java/org/apache/kafka/clients/FetchSessionHandler.java``): the first fetch
to a leader is full (session id 0, epoch 0: every partition) and the leader opens a session
(``core/src/main/scala/kafka/server/FetchSession.scala``, ``FetchSessionCache``); each later
fetch carries only the partitions added or whose fetch state changed (fetch offset, log start
offset, leader epoch, last fetched epoch, max bytes), names the removed ones in
``forgotten_topics_data``, and the leader answers only the partitions whose state changed. A
follower of many idle partitions (``__consumer_offsets``' fifty) then sends and reads one or two
per round trip instead of all of them.

The session restarts full (epoch 0 under the same id, which the leader replaces) after a failed
fetch or a session error (``FETCH_SESSION_ID_NOT_FOUND``, ``INVALID_FETCH_SESSION_EPOCH``) and
when the leader answered without one (id 0: its cache was full, it keeps no session): the handler
then sends every partition, as Kafka's ``nextCloseExistingAttemptNew`` / ``INITIAL``. Sans-IO: the
fetcher asks what to send and tells what came back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.errors import ErrorCode

from ..fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, NO_SESSION, next_epoch

SESSION_ERRORS = frozenset({ErrorCode.fetch_session_id_not_found, ErrorCode.invalid_fetch_session_epoch})

PartitionRef = tuple[Any, int]
"""(topic id, partition index): how a follower fetch (v13+) names a partition."""


@dataclass(frozen=True, slots=True)
class FollowerFetchRequest:
    """One fetch to build: its session fields, the partitions to carry, those to forget."""

    session_id: int
    epoch: int
    partitions: dict[PartitionRef, Any]
    """Each partition's request fields (any value that compares equal when unchanged)."""
    forgotten: list[PartitionRef]

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH or self.epoch == FINAL_EPOCH


@dataclass
class FollowerFetchSession:
    """What the leader's session holds for this follower, as last sent (``sessionPartitions``)."""

    session_id: int = NO_SESSION
    next_epoch: int = INITIAL_EPOCH
    sent: dict[PartitionRef, Any] = field(default_factory=dict)

    def build(self, wanted: dict[PartitionRef, Any]) -> FollowerFetchRequest:
        """The next fetch for ``wanted`` (each partition's request fields); remembered as sent."""
        if self.session_id == NO_SESSION or self.next_epoch == INITIAL_EPOCH:
            request = FollowerFetchRequest(self.session_id, INITIAL_EPOCH, dict(wanted), [])
        else:
            changed = {ref: data for ref, data in wanted.items() if self.sent.get(ref) != data}
            forgotten = [ref for ref in self.sent if ref not in wanted]
            request = FollowerFetchRequest(self.session_id, self.next_epoch, changed, forgotten)
        self.sent = dict(wanted)
        return request

    def on_response(self, request: FollowerFetchRequest, error: ErrorCode, session_id: int) -> bool:
        """The leader's answer to ``request``: True when its partitions may be applied. A session
        error or an answer without a session makes the next fetch full."""
        if error in SESSION_ERRORS:
            self.reset(keep_id=error is not ErrorCode.fetch_session_id_not_found)
            return False
        if error is not ErrorCode.none:
            self.reset(keep_id=True)
            return False
        if session_id == NO_SESSION:
            self.reset(keep_id=False)  # the leader keeps no session: every fetch is full
        elif request.full:
            self.session_id, self.next_epoch = session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.next_epoch = next_epoch(self.next_epoch)
        return True

    def resend(self, ref: PartitionRef) -> None:
        """Name ``ref`` in the next fetch even if its state did not change (the leader answered it
        with an error, and may hold nothing for it: an unknown topic id is kept in no session)."""
        self.sent.pop(ref, None)

    def on_failure(self) -> None:
        """No answer (a broken connection, a timeout): start a new session on the next fetch."""
        self.reset(keep_id=True)

    def reset(self, *, keep_id: bool) -> None:
        if not keep_id:
            self.session_id = NO_SESSION
        self.next_epoch = INITIAL_EPOCH
        self.sent = {}
