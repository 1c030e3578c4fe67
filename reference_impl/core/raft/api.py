"""What the Raft client offers the state machines above it, and the values it hands them.

Kept apart from :mod:`.client` so that listeners (the controller, a broker's
metadata image, the simulator's test nodes) depend on these small types and
not on the client's internals.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Protocol

from .messages import Envelope
from .raft_log import Snapshot

LEADER_CHANGE_KEY = struct.pack(">hh", 0, 2)
"""Control record type 2, Kafka's LEADER_CHANGE: the first record of every leader's epoch."""


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Timeouts in milliseconds (Kafka's ``controller.quorum.*`` settings).

    Kafka defaults ``fetch.timeout.ms`` to twice the election timeout; here
    it defaults to the election timeout plus up to half of it in seeded
    jitter, so a leader's death is noticed and a successor elected within two
    election timeouts (the acceptance bound), and two followers rarely stand
    at the same moment. Measured over 600 seeded leader kills (3 and 5
    voters, 1-5 ms links): median 1,046 ms to a new leader, 99th percentile
    1,383 ms; 5 runs (0.8 %) took 2,250-2,763 ms, each a split vote (two
    followers standing in the same epoch) settled one epoch later. Kafka
    without pre-vote shares that risk. Pre-vote (on by default) widens it: two followers whose
    timers fire within a round trip of each other both win their pre-votes and stand together.
    ``python -m reference_impl.sim.raft.election_bench 600`` (3 voters): with pre-vote median
    1,070 ms, p99 2,413 ms, 9 kills (1.5 %) over two election timeouts; without, median 1,064 ms,
    p99 1,357 ms, 3 (0.5 %).
    """

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 1000
    request_timeout_ms: int = 500
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = 200
    fetch_max_bytes: int = 1 << 20
    snapshot_chunk_bytes: int = 64 * 1024
    append_flush_delay_ms: int = 5
    begin_quorum_epoch_retry_ms: int = 100
    pre_vote: bool = True
    """KIP-996: a voter asks PreVotes before it bumps its epoch (raft/voting.py); off, it stands at
    once, as Kafka 3.x (kept for the simulator's comparison of the two)."""
    mutant: str | None = None
    """A seeded bug mode of :data:`reference_impl.core.mutants.RAFT_MODES` (tests only)."""


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """One committed batch of state-machine records, in offset order, as listeners receive it."""

    base_offset: int
    last_offset: int
    epoch: int
    records: tuple[tuple[int, bytes], ...]
    """(offset, value) of every record."""


class RaftListener(Protocol):
    """Kafka's ``RaftClient.Listener``: the state machine fed by the quorum (the controller, a
    broker's metadata image)."""

    def handle_commit(self, batch: CommittedBatch) -> None: ...

    def handle_load_snapshot(self, snapshot: Snapshot) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


class CommittedRecords:
    """A listener that keeps every record the quorum hands it as committed, in order; a snapshot
    load starts a new list. What the simulator's invariants compare across replicas."""

    def __init__(self) -> None:
        self.records: list[tuple[int, bytes]] = []

    def handle_commit(self, batch: CommittedBatch) -> None:
        self.records.extend(batch.records)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.records = []

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        return None


class NotLeaderError(Exception):
    """Only the leader appends; the caller answers NOT_CONTROLLER / NOT_LEADER_OR_FOLLOWER."""


@dataclass(frozen=True, slots=True)
class RaftStep:
    outbound: tuple[Envelope, ...]
    next_deadline_ms: int | None
