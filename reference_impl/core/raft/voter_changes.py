"""KIP-853 voter changes at the leader: AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (sans-IO).

Kafka's sources (read, not copied): raft/src/main/java/org/apache/kafka/raft/internals/
AddVoterHandler.java, RemoveVoterHandler.java, UpdateVoterHandler.java and LeaderState.java
(``isOperationPending``, ``isReplicaCaughtUp``, ``appendVotersRecord``). The checks, in Kafka's order:

1. another voter change is pending: REQUEST_TIMED_OUT;
2. the leader has no high watermark yet (it has not committed in its epoch, so an uncommitted
   change of an earlier leader may still be in the log): REQUEST_TIMED_OUT;
3. kraft.version is 0 (static voters): UNSUPPORTED_VERSION;
4. the latest VotersRecord is not committed (its offset is at or past the high watermark):
   REQUEST_TIMED_OUT;
5. add: the id is a voter already, DUPLICATE_VOTER; remove / update: no voter has that key,
   VOTER_NOT_FOUND;
6. add: the new voter must be an observer that has fetched and caught up with the leader
   (``isReplicaCaughtUp``: caught up once, fetched within the hour), else REQUEST_TIMED_OUT.

Then the leader appends the new VotersRecord, and the new set takes effect at once, uncommitted
(on the leader as on every replica that appends it): the high watermark is the new set's majority
from then on, so the record commits under the new set's rules. Add and remove answer when the high
watermark passes the record (REQUEST_TIMED_OUT if it has not by the deadline); update answers as
soon as the record is appended (Kafka: "Reply immediately and don't wait for the change to
commit"). A leader the committed change removed resigns.

Difference from Kafka: Kafka's leader first sends ApiVersions to the new voter to learn its
kraft.version range; this replica has no ApiVersions message, so the caller supplies the range
(the wire layer from the request's listeners, the simulator from the node) and the caught-up check
is made at once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from .states import LeaderState
from .voter_set import Voter, VoterHistory, VoterSet

ADD = "add"
REMOVE = "remove"
UPDATE = "update"

CAUGHT_UP_WINDOW_MS = 3_600_000
"""LeaderState.isReplicaCaughtUp: an observer that fetched within the last hour."""


@dataclass(slots=True)
class VoterChange:
    """One voter change request: pending while ``error`` is None; then its answer."""

    kind: str
    voter_id: int
    deadline_ms: int
    last_offset: int | None = None
    """The VotersRecord's offset once appended."""
    error: ErrorCode | None = None
    message: str | None = None

    @property
    def done(self) -> bool:
        return self.error is not None

    def finish(self, error: ErrorCode, message: str | None = None) -> VoterChange:
        self.error = error
        self.message = message
        return self


def refusal(
    kind: str,
    state: LeaderState,
    history: VoterHistory,
    pending: VoterChange | None,
    voter_id: int,
    directory_id: uuid.UUID,
    now_ms: int,
) -> tuple[ErrorCode, str] | None:
    """Checks 1-6 above for a change of ``voter_id``; None when the change may be appended."""
    if pending is not None and not pending.done:
        return (
            ErrorCode.request_timed_out,
            "Request timed out waiting for leader to handle previous voter change request",
        )
    hw = state.high_watermark
    if hw is None:
        return (
            ErrorCode.request_timed_out,
            "Request timed out waiting for leader to establish HWM and fence previous voter changes",
        )
    if history.kraft_version < 1:
        what = {ADD: "adding", REMOVE: "removing", UPDATE: "updating"}[kind]
        return (
            ErrorCode.unsupported_version,
            f"Cluster doesn't support {what} voter because the kraft.version feature is 0",
        )
    entry = history.latest_entry
    if entry is None or entry.offset >= hw:
        return (
            ErrorCode.request_timed_out,
            f"Request timed out waiting for voters to commit the latest voter change at "
            f"{None if entry is None else entry.offset} with HWM {hw}",
        )
    voters = entry.voters
    if kind == ADD:
        if voter_id in voters.ids:
            return (
                ErrorCode.duplicate_voter,
                f"The voter id for {voter_id} is already part of the set of voters {list(voters.ids)}.",
            )
        observer = state.observers.get(voter_id)
        caught_up = (
            observer is not None
            and observer.last_caught_up_ms >= 0
            and observer.last_fetch_ms > now_ms - CAUGHT_UP_WINDOW_MS
        )
        if not caught_up:
            return (
                ErrorCode.request_timed_out,
                f"Aborted add voter operation for {voter_id} since it is lagging behind",
            )
        return None
    voter = voters.get(voter_id)
    if voter is None or not voter.same_key(voter_id, directory_id):
        verb = "remove" if kind == REMOVE else "update"
        return (
            ErrorCode.voter_not_found,
            f"Cannot {verb} voter {voter_id} from the set of voters {list(voters.ids)}",
        )
    return None


def changed_set(kind: str, voters: VoterSet, voter: Voter) -> VoterSet | None:
    """The voter set after the change (None: it cannot be made, e.g. removing the last voter)."""
    if kind == ADD:
        return voters.add(voter)
    if kind == REMOVE:
        return voters.remove(voter.voter_id, voter.directory_id)
    return voters.update(voter)


def complete(change: VoterChange, high_watermark: int | None, now_ms: int) -> bool:
    """Answer ``change`` if its record committed (NONE) or its time ran out (REQUEST_TIMED_OUT);
    True if it was answered now."""
    if change.done:
        return False
    if change.last_offset is not None and high_watermark is not None and high_watermark > change.last_offset:
        change.finish(ErrorCode.none)
        return True
    if now_ms >= change.deadline_ms:
        change.finish(
            ErrorCode.request_timed_out,
            f"Request timed out waiting for the {change.kind} voter change to commit",
        )
        return True
    return False
