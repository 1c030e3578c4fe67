"""The quorum's voter set and kraft.version as KIP-853 keeps them: control records in the log.

Kafka's sources (read, not copied): raft/src/main/java/org/apache/kafka/raft/internals/VoterSet.java
(a voter is a replica key, id and directory id, with its endpoints and supported kraft.version
range; ``addVoter`` fails on an id already present, ``removeVoter`` on a key not present or on the
last voter), raft/.../internals/KRaftControlRecordStateMachine.java (the voter set and kraft.version
are the latest ones in the log, uncommitted included, and a truncation brings back the ones before),
clients/src/main/resources/common/message/VotersRecord.json and KRaftVersionRecord.json (the record
values, version 0) and ControlRecordType.java (KRAFT_VERSION = 5, KRAFT_VOTERS = 6).

:class:`VoterHistory` is that state machine: (offset, value) entries read from the log's control
batches, with the bootstrap set (``controller.quorum.voters`` or the formatted initial controllers)
below them. A node formatted with kraft.version 1 starts its log with a control batch at offset 0,
epoch 0 holding a KRaftVersionRecord and the VotersRecord of the initial controllers (what Kafka's
``kafka-storage format --standalone`` / ``--initial-controllers`` writes as the bootstrap checkpoint
``00000000000000000000-0000000000.checkpoint``); every initial controller writes the same bytes, so
their logs agree from the start, and a controller added later is formatted empty and fetches it.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord
from kio.schema.voters_record.v0 import data as vr
from kio.static.primitive import i16, i32, u16

from reference_impl.protocol.codec import decode_data, encode_body
from reference_impl.protocol.record_set import build_batch, iter_records
from reference_impl.protocol.records import BatchHeader, InvalidBatchError

KRAFT_VERSION_KEY = struct.pack(">hh", 0, 5)
"""Control record type 5, Kafka's KRAFT_VERSION."""
KRAFT_VOTERS_KEY = struct.pack(">hh", 0, 6)
"""Control record type 6, Kafka's KRAFT_VOTERS."""

MAX_VOTERS = 256
"""Voters a VotersRecord may name here (Kafka sets no limit; a quorum of more is not a quorum anyone
runs): a record or request naming more is refused, so no count from the wire sizes a table."""
MAX_ENDPOINTS = 16
"""Endpoints (listeners) one voter may carry."""

NO_DIRECTORY = uuid.UUID(int=0)
"""Kafka's ``ReplicaKey.NO_DIRECTORY_ID`` (Uuid.ZERO_UUID): a static voter's key has none."""


class VoterSetError(ValueError):
    """A voter set or record that cannot be one (too many voters, a repeated id, none at all)."""


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter: its replica key (id, directory id), endpoints and supported kraft.version range."""

    voter_id: int
    directory_id: uuid.UUID = NO_DIRECTORY
    endpoints: tuple[Endpoint, ...] = ()
    min_kraft_version: int = 0
    max_kraft_version: int = 1

    def same_key(self, voter_id: int, directory_id: uuid.UUID) -> bool:
        """Kafka's ReplicaKey match: the id, and the directory id when the stored one has one."""
        return self.voter_id == voter_id and (
            self.directory_id == NO_DIRECTORY or self.directory_id == directory_id
        )


@dataclass(frozen=True, slots=True)
class VoterSet:
    voters: tuple[Voter, ...]

    def __post_init__(self) -> None:
        ids = [v.voter_id for v in self.voters]
        if not ids or len(ids) > MAX_VOTERS or len(set(ids)) != len(ids):
            raise VoterSetError(f"not a voter set: {ids[: MAX_VOTERS + 1]}")
        if any(len(v.endpoints) > MAX_ENDPOINTS for v in self.voters):
            raise VoterSetError(f"a voter has more than {MAX_ENDPOINTS} endpoints")
        object.__setattr__(self, "voters", tuple(sorted(self.voters, key=lambda v: v.voter_id)))

    @classmethod
    def of_ids(cls, ids: Iterable[int]) -> VoterSet:
        """The static set ``controller.quorum.voters`` names: ids only, no directory ids."""
        return cls(tuple(Voter(i) for i in ids))

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(v.voter_id for v in self.voters)

    def get(self, voter_id: int) -> Voter | None:
        return next((v for v in self.voters if v.voter_id == voter_id), None)

    def add(self, voter: Voter) -> VoterSet | None:
        """VoterSet.addVoter: None when the id is a voter already (DUPLICATE_VOTER)."""
        if self.get(voter.voter_id) is not None or len(self.voters) >= MAX_VOTERS:
            return None
        return VoterSet((*self.voters, voter))

    def remove(self, voter_id: int, directory_id: uuid.UUID) -> VoterSet | None:
        """VoterSet.removeVoter: None when no voter has that key, or it is the last one."""
        rest = tuple(v for v in self.voters if not v.same_key(voter_id, directory_id))
        if len(rest) == len(self.voters) or not rest:
            return None
        return VoterSet(rest)

    def update(self, voter: Voter) -> VoterSet | None:
        """VoterSet.updateVoter: the voter with that key gets new endpoints and version range."""
        old = self.get(voter.voter_id)
        if old is None or not old.same_key(voter.voter_id, voter.directory_id):
            return None
        new = replace(
            voter, directory_id=old.directory_id if voter.directory_id == NO_DIRECTORY else voter.directory_id
        )
        return VoterSet(tuple(new if v.voter_id == voter.voter_id else v for v in self.voters))

    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    # -- the records ---------------------------------------------------------------------------

    def encode(self) -> bytes:
        """The VotersRecord (version 0) value."""
        return encode_body(
            vr.VotersRecord(
                version=i16(0),
                voters=tuple(
                    vr.Voter(
                        voter_id=i32(v.voter_id),  # type: ignore[arg-type]
                        voter_directory_id=v.directory_id,
                        endpoints=tuple(
                            vr.Endpoint(name=e.name, host=e.host, port=u16(e.port)) for e in v.endpoints
                        ),
                        k_raft_version_feature=vr.KRaftVersionFeature(
                            min_supported_version=i16(v.min_kraft_version),
                            max_supported_version=i16(v.max_kraft_version),
                        ),
                    )
                    for v in self.voters
                ),
            )
        )

    @classmethod
    def decode(cls, value: bytes) -> VoterSet:
        record = decode_data(vr.VotersRecord, value)
        if len(record.voters) > MAX_VOTERS:
            raise VoterSetError(f"a VotersRecord with {len(record.voters)} voters")
        return cls(
            tuple(
                Voter(
                    int(v.voter_id),
                    v.voter_directory_id or NO_DIRECTORY,
                    tuple(Endpoint(e.name, e.host, int(e.port)) for e in v.endpoints[: MAX_ENDPOINTS + 1]),
                    int(v.k_raft_version_feature.min_supported_version),
                    int(v.k_raft_version_feature.max_supported_version),
                )
                for v in record.voters
            )
        )


def encode_kraft_version(level: int) -> bytes:
    return encode_body(KRaftVersionRecord(version=i16(0), k_raft_version=i16(level)))


def decode_kraft_version(value: bytes) -> int:
    return int(decode_data(KRaftVersionRecord, value).k_raft_version)


def bootstrap_batch(voters: VoterSet, timestamp_ms: int = 0) -> bytes:
    """The control batch a kraft.version 1 node is formatted with (offset 0, epoch 0). With the same
    timestamp (the simulator's 0) every initial controller writes the same bytes; a process stamps
    its format time, or the metadata log's time retention would delete a batch from 1970."""
    return build_batch(
        [(KRAFT_VERSION_KEY, encode_kraft_version(1)), (KRAFT_VOTERS_KEY, voters.encode())],
        base_timestamp=timestamp_ms,
        control=True,
    )


SNAPSHOT_MAGIC = b"KH-KIP853\x00"
"""The start of a kraft.version 1 snapshot here: the voter set and kraft.version in force at its end
offset, then the state machine's bytes. Kafka writes them as the snapshot's first control records
(SnapshotHeader, KRaftVersionRecord, VotersRecord: raft/.../internals/RecordsIterator.java); the
reference's snapshots hold its state machine's own encoding, so they go in front of it. A
kraft.version 0 snapshot is the state machine's bytes alone, as before."""
_LEN = struct.Struct(">Ih")


def wrap_snapshot(data: bytes, voters: VoterSet, kraft_version: int) -> bytes:
    encoded = voters.encode()
    return SNAPSHOT_MAGIC + _LEN.pack(len(encoded), kraft_version) + encoded + data


def unwrap_snapshot(raw: bytes) -> tuple[VoterSet | None, int, bytes]:
    """(voter set, kraft.version, the state machine's bytes) of a snapshot; (None, 0, raw) for one
    without the voter set. A header that does not fit is VoterSetError."""
    if not raw.startswith(SNAPSHOT_MAGIC):
        return None, 0, raw
    start = len(SNAPSHOT_MAGIC) + _LEN.size
    if len(raw) < start:
        raise VoterSetError("a snapshot's voter header is cut short")
    length, kraft_version = _LEN.unpack_from(raw, len(SNAPSHOT_MAGIC))
    if start + length > len(raw):
        raise VoterSetError(f"a snapshot's voter header claims {length} bytes")
    return VoterSet.decode(raw[start : start + length]), kraft_version, raw[start + length :]


@dataclass(frozen=True, slots=True)
class VotersEntry:
    offset: int
    voters: VoterSet


class VoterHistory:
    """KRaftControlRecordStateMachine: the kraft.version and voter sets the log holds, by offset.

    ``bootstrap`` is the set in force below every entry (the static voters at kraft.version 0);
    ``read_batch`` takes each control batch as the log gains it; ``truncate_to`` forgets entries at
    or past an offset. Entries kept are bounded: the newest :data:`MAX_HISTORY`."""

    MAX_HISTORY = 64

    def __init__(self, bootstrap: VoterSet, kraft_version: int = 0) -> None:
        self.bootstrap = bootstrap
        self.bootstrap_kraft_version = kraft_version
        self.entries: list[VotersEntry] = []
        self.versions: list[tuple[int, int]] = []
        self.read_to = 0
        """Every batch below this offset has been read."""

    @property
    def latest(self) -> VoterSet:
        return self.entries[-1].voters if self.entries else self.bootstrap

    @property
    def latest_entry(self) -> VotersEntry | None:
        return self.entries[-1] if self.entries else None

    @property
    def kraft_version(self) -> int:
        return self.versions[-1][1] if self.versions else self.bootstrap_kraft_version

    def in_force_at(self, offset: int) -> tuple[VoterSet, int]:
        """The voter set and kraft.version of the log below ``offset`` (a snapshot's end)."""
        voters = next((e.voters for e in reversed(self.entries) if e.offset < offset), self.bootstrap)
        version = next((v for o, v in reversed(self.versions) if o < offset), self.bootstrap_kraft_version)
        return voters, version

    def load_snapshot(self, end_offset: int, voters: VoterSet, kraft_version: int) -> None:
        """The log now starts at a snapshot's end: what it says replaces everything read before."""
        self.entries = [VotersEntry(end_offset - 1, voters)]
        self.versions = [(end_offset - 1, kraft_version)]
        self.read_to = end_offset

    def read_batch(self, header: BatchHeader, data: bytes) -> bool:
        """Take one batch at or past ``read_to``; True if the voter set changed."""
        if header.base_offset < self.read_to:
            return False
        self.read_to = header.next_offset
        if not header.is_control:
            return False
        changed = False
        try:
            records = list(iter_records(data, header))
        except InvalidBatchError:
            return False
        for record in records:
            key, value = record.key, record.value or b""
            try:
                if key == KRAFT_VOTERS_KEY:
                    self.entries.append(VotersEntry(record.offset, VoterSet.decode(value)))
                    del self.entries[: -self.MAX_HISTORY]
                    changed = True
                elif key == KRAFT_VERSION_KEY:
                    self.versions.append((record.offset, decode_kraft_version(value)))
                    del self.versions[: -self.MAX_HISTORY]
            except ValueError:
                continue  # a record this node cannot read changes nothing
        return changed

    def truncate_to(self, offset: int) -> bool:
        """The log now ends at ``offset``: entries at or past it are gone; True if the set changed."""
        before = self.latest
        self.entries = [e for e in self.entries if e.offset < offset]
        self.versions = [v for v in self.versions if v[0] < offset]
        self.read_to = min(self.read_to, offset)
        return self.latest != before
