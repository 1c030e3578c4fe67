"""A replica's voter set as its log says (KIP-853), and the leader's voter changes.

:class:`Membership` is owned by the :class:`RaftClient`: it reads the control batches the log gains
(the leader's own VotersRecords, those a follower fetches), forgets them on truncation, and keeps
the replica's :class:`QuorumState` and, at the leader, the :class:`LeaderState` on the latest set,
uncommitted included, as Kafka's ``KRaftControlRecordStateMachine`` does. The leader's side of
AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter is :meth:`request` (checks in
:mod:`.voter_changes`).

kraft.version 0 is the static quorum (``controller.quorum.voters``): no control record, and every
change is UNSUPPORTED_VERSION. kraft.version 1 is given at format time (a process: the broker config
``reference.kraft.version=1``, read at its first start, ``kraft/voter_admin.format_initial``):
each initial controller writes the same bootstrap batch (:func:`.voter_set.bootstrap_batch`) on its
empty log; a controller added later is formatted with an empty log and the initial set only to find the
quorum (Kafka's ``--no-initial-controllers`` with ``controller.quorum.bootstrap.servers``).

What differs from Kafka, and why. The reference has no pre-vote (KIP-996); its voters refuse a Vote
while they hear a live leader, without taking its epoch. A removed voter that has not learnt its
removal keeps standing in ever higher epochs, and answers Fetch with them; an observer taking those
epochs (Kafka's ``maybeHandleCommonResponse`` takes any higher epoch) would be left ahead of the
leader's and fenced from it for good. So here an observer of a kraft.version 1 quorum takes a higher
epoch from an answer only with the leader it names. The simulator's operator stops (and formats
again) a removed controller, as Kafka's documentation tells operators to.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from reference_impl.core import mutants
from reference_impl.log.api import PartitionLog
from reference_impl.protocol.records import iter_headers

from . import voter_changes as vc
from .raft_log import RaftLog, Snapshot
from .states import LeaderState
from .voter_set import (
    KRAFT_VOTERS_KEY,
    NO_DIRECTORY,
    Voter,
    VoterHistory,
    VoterSet,
    bootstrap_batch,
    unwrap_snapshot,
    wrap_snapshot,
)

if TYPE_CHECKING:
    from .client import RaftClient


class Membership:
    def __init__(
        self,
        log: RaftLog,
        bootstrap: VoterSet,
        kraft_version: int,
        local_id: int,
        directory_id: uuid.UUID = NO_DIRECTORY,
    ) -> None:
        self.history = VoterHistory(bootstrap, kraft_version)
        self.local_id = local_id
        self.directory_id = directory_id
        """This replica's log directory id (Kafka's meta.properties ``directory.id``): a replica
        formatted again has a new one, so the voter its old key names is not it."""
        self.pending: list[vc.VoterChange] = []
        """The change in flight: one at most (a list, so a seeded bug mode could pile up more)."""
        snapshot = log.latest_snapshot()
        if snapshot is not None and log.start_offset > 0:
            self.installed(snapshot)
        self.scan(log, log.start_offset)

    @property
    def voters(self) -> VoterSet:
        return self.history.latest

    @property
    def voter_ids(self) -> tuple[int, ...]:
        """The voters this replica counts. A kraft.version 1 replica whose log holds no VotersRecord
        yet (formatted without initial controllers) is an observer: the bootstrap set only says
        whom to fetch from (Kafka's ``controller.quorum.bootstrap.servers``)."""
        latest = self.history.latest
        ids = latest.ids
        me = latest.get(self.local_id)
        if self.dynamic and (
            self.history.latest_entry is None
            or (me is not None and not me.same_key(self.local_id, self.directory_id))
        ):
            return tuple(i for i in ids if i != self.local_id) or ids
        return ids

    def directory_of(self, voter_id: int) -> uuid.UUID | None:
        """The directory id the latest set gives ``voter_id`` (None: none known, kraft.version 0)."""
        voter = self.history.latest.get(voter_id)
        if not self.dynamic or voter is None or voter.directory_id == NO_DIRECTORY:
            return None
        return voter.directory_id

    def own_directory_id(self) -> uuid.UUID | None:
        """This replica's directory id as its requests carry it (None: none, kraft.version 0)."""
        return None if self.directory_id == NO_DIRECTORY else self.directory_id

    def wrong_key(self, directory_id: uuid.UUID | None) -> bool:
        """A Vote meant for another incarnation of this replica id (Kafka's isValidVoterKey)."""
        return directory_id is not None and directory_id not in (NO_DIRECTORY, self.directory_id)

    @property
    def dynamic(self) -> bool:
        return self.history.bootstrap_kraft_version >= 1

    def scan(self, log: RaftLog, start: int) -> bool:
        """Read the control batches from ``start`` to the log's end; True if the set changed. A
        kraft.version 0 replica reads none: its voters are controller.quorum.voters, and the
        reference writes no voter records there (so a start does not read the whole log twice)."""
        changed = False
        if not self.dynamic:
            return False
        for header, data in log.batches(max(start, self.history.read_to), log.end_offset):
            changed |= self.history.read_batch(header, data)
        return changed

    def read_fetched(self, records: bytes, log_end: int) -> bool:
        """A follower appended fetched ``records``: read their control batches in hand."""
        changed = False
        if not self.dynamic:
            return False
        for header in iter_headers(records):
            if header.next_offset <= log_end:
                changed |= self.history.read_batch(header, records)
        return changed

    def truncated(self, log_end: int) -> bool:
        return self.history.truncate_to(log_end)

    def installed(self, snapshot: Snapshot) -> bool:
        """The log starts at ``snapshot``'s end: its voter set (if it carries one) is in force."""
        before = self.history.latest
        try:
            voters, kraft_version, _data = unwrap_snapshot(snapshot.data)
        except ValueError:
            return False  # a header this replica cannot read: the log's own records decide
        if voters is not None:
            self.history.load_snapshot(snapshot.snapshot_id.offset, voters, kraft_version)
        return self.history.latest != before

    def wrap(self, end_offset: int, data: bytes) -> bytes:
        """A snapshot's bytes: with the voter set in force at ``end_offset`` in front (kraft.version 1)."""
        if not self.dynamic:
            return data
        voters, kraft_version = self.history.in_force_at(end_offset)
        return wrap_snapshot(data, voters, kraft_version)

    # -- the leader ------------------------------------------------------------------------------

    def request(
        self, client: RaftClient, kind: str, voter: Voter, now_ms: int, timeout_ms: int
    ) -> vc.VoterChange:
        """Start (or refuse) a voter change at the leader; the answer is in the returned change."""
        change = vc.VoterChange(kind, voter.voter_id, now_ms + timeout_ms)
        state = client.state
        if not isinstance(state, LeaderState):
            return change.finish(ErrorCode.not_leader_or_follower)
        in_flight = self.pending[-1] if self.pending else None
        refused = vc.refusal(kind, state, self.history, in_flight, voter.voter_id, voter.directory_id, now_ms)
        if refused is not None:
            return change.finish(*refused)
        old = self.history.latest
        new = vc.changed_set(kind, old, voter)
        if new is None:
            return change.finish(
                ErrorCode.voter_not_found, f"cannot {kind} voter {voter.voter_id} in {list(old.ids)}"
            )
        change.last_offset = client.append_control(KRAFT_VOTERS_KEY, new.encode(), now_ms)
        if client.config.mutant == mutants.VOTERS_OLD_MAJORITY:
            state.hw_voters = old.ids
        if kind == vc.UPDATE:
            return change.finish(ErrorCode.none)  # Kafka answers an update once appended
        self.pending.append(change)
        return change

    def poll_leader(self, client: RaftClient, state: LeaderState, now_ms: int) -> None:
        """Answer the pending change once it committed (or timed out); a leader the committed set
        no longer holds resigns (RemoveVoterHandler.highWatermarkUpdated)."""
        hw = state.high_watermark
        if state.hw_voters is not None and hw is not None:
            entry = self.history.latest_entry
            if entry is None or hw > entry.offset:
                state.hw_voters = None
        answered = [c for c in self.pending if vc.complete(c, hw, now_ms)]
        if not answered:
            return
        self.pending = [c for c in self.pending if not c.done]
        committed = any(c.error == ErrorCode.none for c in answered)
        if committed and not self.pending and client.node_id not in self.history.latest.ids:
            client.resign(now_ms)

    def leadership_lost(self) -> None:
        for change in self.pending:
            change.finish(ErrorCode.not_leader_or_follower)
        self.pending = []

    def next_deadline_ms(self) -> int | None:
        return min((c.deadline_ms for c in self.pending), default=None)


def format_log(log: PartitionLog, voters: VoterSet, now_ms: int = 0) -> bool:
    """``kafka-storage format --initial-controllers`` (or ``--standalone``, one voter): an empty
    metadata log starts with the kraft.version 1 bootstrap batch; True if it was written."""
    if log.log_end_offset != 0 or log.log_start_offset != 0:
        return False
    log.append_as_leader(bytearray(bootstrap_batch(voters, now_ms)), 0, now_ms)
    log.flush()
    return True


def voter_of(node_id: int, directory_id: uuid.UUID | None = None) -> Voter:
    """A voter with only an id (and a directory id): what the simulator and tests add."""
    return Voter(node_id, directory_id or uuid.UUID(int=node_id + 1))
