"""Share sessions (KIP-932): the sans-IO cache behind ShareFetch and ShareAcknowledge.

Kafka's model (``server/src/main/java/org/apache/kafka/server/share/session/ShareSessionCache.java``,
``ShareSession.java``, ``clients/.../requests/ShareRequestMetadata.java``):

* a share session is keyed by (group id, member id) and holds the partitions the member fetches;
* epoch 0 opens a session (a new one replaces the member's old one), -1 (FINAL) closes it; any
  other epoch must be the session's next epoch, else INVALID_SHARE_SESSION_EPOCH; a non-zero epoch
  with no session is SHARE_SESSION_NOT_FOUND; epochs go up by one and wrap to 1;
* a ShareFetch adds partitions to the session and its ForgottenTopicsData removes them;
* the cache holds a bounded number of sessions; a new one past the bound is
  SHARE_SESSION_LIMIT_REACHED.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from reference_impl.protocol.errors import ErrorCode, KafkaError

TP = tuple[uuid.UUID, int]
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1
DEFAULT_MAX_SESSIONS = 2_000


def next_epoch(epoch: int) -> int:
    """``ShareRequestMetadata.nextEpoch``: 0 → 1, then +1, wrapping to 1; FINAL stays FINAL."""
    if epoch == FINAL_EPOCH:
        return FINAL_EPOCH
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int  # the epoch the member's next request must carry
    partitions: set[TP] = field(default_factory=set)


@dataclass
class ShareSessionCache:
    max_sessions: int = DEFAULT_MAX_SESSIONS
    _sessions: dict[tuple[str, str], ShareSession] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def request(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        *,
        added: Iterable[TP] = (),
        forgotten: Iterable[TP] = (),
    ) -> ShareSession | None:
        """Check and apply one request's session metadata. Returns the session (its ``epoch``
        already the one the next request must carry), or None when the request closed it."""
        key = (group_id, member_id)
        session = self._sessions.get(key)
        if epoch == INITIAL_EPOCH:
            if session is None and len(self._sessions) >= self.max_sessions:
                raise KafkaError(ErrorCode.share_session_limit_reached)
            session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH))
            self._sessions[key] = session
        elif session is None:
            raise KafkaError(ErrorCode.share_session_not_found)
        elif epoch == FINAL_EPOCH:
            del self._sessions[key]
            return None
        elif epoch != session.epoch:
            raise KafkaError(ErrorCode.invalid_share_session_epoch)
        else:
            session.epoch = next_epoch(session.epoch)
        session.partitions.update(added)
        session.partitions.difference_update(forgotten)
        return session

    def remove_member(self, group_id: str, member_id: str) -> None:
        """The member left the group: its session goes (``ShareSessionCache.remove``)."""
        self._sessions.pop((group_id, member_id), None)
