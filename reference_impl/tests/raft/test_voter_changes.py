"""KIP-853 voter changes in the Raft replica: the voter set as control records, AddRaftVoter /
RemoveRaftVoter / UpdateRaftVoter at the leader with Kafka's errors, and the set taking effect on
every replica (driven in the deterministic simulator; Kafka's sources in
``reference_impl/core/raft/voter_changes.py``)."""

from __future__ import annotations

import random
import uuid

import pytest
from kio.schema.errors import ErrorCode

from reference_impl.core.raft.api import RaftConfig
from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.membership import format_log
from reference_impl.core.raft.messages import Envelope, VoteRequest, VoteResponse
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore, RaftLog
from reference_impl.core.raft.voter_changes import ADD, REMOVE, UPDATE, VoterChange
from reference_impl.core.raft.voter_set import (
    KRAFT_VOTERS_KEY,
    MAX_VOTERS,
    Endpoint,
    Voter,
    VoterHistory,
    VoterSet,
    VoterSetError,
    bootstrap_batch,
    unwrap_snapshot,
    wrap_snapshot,
)
from reference_impl.log.memory import MemoryLog
from reference_impl.protocol.record_set import build_batch
from reference_impl.protocol.records import iter_headers
from reference_impl.sim.engine.simulation import Simulation
from reference_impl.sim.raft.nodes import build_raft_simulation, current_leader
from reference_impl.sim.raft.voter_fuzz import Directories, build

TIMEOUT_MS = 5_000


def _leader(sim: Simulation) -> RaftClient:
    assert sim.run_until_true(lambda: current_leader(sim) is not None, 10_000)
    leader = current_leader(sim)
    assert leader is not None
    raft: RaftClient = sim.node(leader).raft
    assert sim.run_until_true(lambda: raft.high_watermark is not None, 5_000)
    return raft


def _dynamic(seed: int = 1) -> tuple[Simulation, Directories]:
    """Voters 1-3 formatted at kraft.version 1, nodes 4 and 5 formatted empty (observers)."""
    dirs = Directories()
    sim, _disks = build(seed, 3, 2, RaftConfig(), dirs=dirs)
    return sim, dirs


def _answered(sim: Simulation, change: VoterChange, within_ms: int = TIMEOUT_MS + 1_000) -> VoterChange:
    sim.run_until_true(lambda: change.done, within_ms)
    assert change.done
    return change


# -- the voter set and its records --------------------------------------------------------------


def test_voters_record_round_trips_and_refuses_garbage() -> None:
    voters = VoterSet(
        (Voter(2, uuid.UUID(int=7), (Endpoint("CONTROLLER", "127.0.0.1", 9093),)), Voter(1, uuid.UUID(int=5)))
    )
    assert VoterSet.decode(voters.encode()) == voters
    assert voters.ids == (1, 2)
    with pytest.raises(ValueError):
        VoterSet.decode(b"\x00\x00\x05\xff\xff")


def test_voter_set_rules_as_kafka_voter_set() -> None:
    """VoterSet.java: add refuses an id already there, remove refuses an unknown key and the last voter."""
    voters = VoterSet.of_ids((1, 2))
    assert voters.add(Voter(2)) is None
    added = voters.add(Voter(3, uuid.UUID(int=3)))
    assert added is not None and added.ids == (1, 2, 3)
    assert voters.remove(9, uuid.UUID(int=0)) is None
    assert VoterSet.of_ids((1,)).remove(1, uuid.UUID(int=0)) is None
    keyed = VoterSet((Voter(1, uuid.UUID(int=1)), Voter(2, uuid.UUID(int=2))))
    assert keyed.remove(1, uuid.UUID(int=99)) is None, "another directory is another replica"
    updated = keyed.update(Voter(1, uuid.UUID(int=1), (Endpoint("C", "h", 1),)))
    assert updated is not None and updated.voters[0].endpoints == (Endpoint("C", "h", 1),)
    with pytest.raises(VoterSetError):
        VoterSet.of_ids(range(MAX_VOTERS + 1))
    with pytest.raises(VoterSetError):
        VoterSet.of_ids((1, 1))


def test_history_follows_the_log_and_its_truncation() -> None:
    """KRaftControlRecordStateMachine: the latest set in the log counts; truncation restores the earlier."""
    history = VoterHistory(VoterSet.of_ids((1,)))
    assert history.kraft_version == 0 and list(history.latest.ids) == [1]
    batch = bootstrap_batch(VoterSet.of_ids((1, 2, 3)))
    (header,) = iter_headers(batch)
    assert history.read_batch(header, batch)
    assert history.kraft_version == 1 and history.latest_entry is not None
    assert history.latest_entry.offset == 1  # KRaftVersionRecord at 0, VotersRecord at 1
    assert not history.truncate_to(5)
    assert list(history.latest.ids) == [1, 2, 3]
    assert history.truncate_to(1)
    assert history.latest_entry is None and list(history.latest.ids) == [1]
    assert history.kraft_version == 1  # the KRaftVersionRecord at 0 stays
    history.truncate_to(0)
    assert history.kraft_version == 0


# -- the leader's answers -------------------------------------------------------------------------


def test_static_quorum_refuses_every_change_unsupported_version() -> None:
    """kraft.version 0 (controller.quorum.voters): AddVoterHandler's UNSUPPORTED_VERSION."""
    sim, _ = build_raft_simulation(3, 3, trace=False)
    raft = _leader(sim)
    for kind in (ADD, REMOVE, UPDATE):
        change = raft.change_voters(kind, Voter(2), sim.now_ms, TIMEOUT_MS)
        assert change.error == ErrorCode.unsupported_version, kind


def test_a_follower_answers_not_leader() -> None:
    sim, _ = _dynamic()
    leader = _leader(sim)
    follower = next(sim.node(n).raft for n in (1, 2, 3) if n != leader.node_id)
    change = follower.change_voters(ADD, Voter(4), sim.now_ms, TIMEOUT_MS)
    assert change.error == ErrorCode.not_leader_or_follower


def test_add_a_caught_up_observer_then_it_votes_everywhere() -> None:
    sim, dirs = _dynamic()
    raft = _leader(sim)
    sim.run_until(sim.now_ms + 1_000)  # the observers fetch and catch up
    change = raft.change_voters(ADD, dirs.voter(4), sim.now_ms, TIMEOUT_MS)
    assert not change.done and change.last_offset is not None
    assert raft.quorum.voters == (1, 2, 3, 4), "the new set takes effect at once, uncommitted"
    second = raft.change_voters(ADD, dirs.voter(5), sim.now_ms, TIMEOUT_MS)
    assert second.error == ErrorCode.request_timed_out, "one change at a time"
    assert _answered(sim, change).error == ErrorCode.none
    assert raft.high_watermark is not None and raft.high_watermark > change.last_offset
    sim.run_until(sim.now_ms + 1_000)
    for n in (1, 2, 3, 4, 5):
        assert sim.node(n).raft.quorum.voters == (1, 2, 3, 4), n
    assert sim.node(4).raft.quorum.is_voter and not sim.node(5).raft.quorum.is_voter
    again = raft.change_voters(ADD, dirs.voter(4), sim.now_ms, TIMEOUT_MS)
    assert again.error == ErrorCode.duplicate_voter


def test_add_refuses_a_replica_that_never_fetched() -> None:
    """isReplicaCaughtUp: an id the leader has not seen fetch is lagging (REQUEST_TIMED_OUT)."""
    sim, _ = _dynamic()
    raft = _leader(sim)
    change = raft.change_voters(ADD, Voter(99, uuid.UUID(int=99)), sim.now_ms, TIMEOUT_MS)
    assert change.error == ErrorCode.request_timed_out
    assert change.message is not None and "lagging" in change.message


def test_remove_unknown_voter_or_key() -> None:
    sim, dirs = _dynamic()
    raft = _leader(sim)
    assert raft.change_voters(REMOVE, Voter(4), sim.now_ms, TIMEOUT_MS).error == ErrorCode.voter_not_found
    stale = Voter(2, uuid.UUID(int=12345))
    assert raft.change_voters(REMOVE, stale, sim.now_ms, TIMEOUT_MS).error == ErrorCode.voter_not_found
    assert raft.change_voters(UPDATE, stale, sim.now_ms, TIMEOUT_MS).error == ErrorCode.voter_not_found
    assert dirs.of(2) != stale.directory_id


def test_the_leader_removes_itself_then_resigns_and_a_successor_leads() -> None:
    """RemoveVoterHandler: the change commits under the new set; the leader it removed resigns."""
    sim, dirs = _dynamic(seed=4)
    raft = _leader(sim)
    old = raft.node_id
    change = raft.change_voters(REMOVE, dirs.voter(old), sim.now_ms, TIMEOUT_MS)
    assert _answered(sim, change).error == ErrorCode.none
    assert sim.run_until_true(lambda: current_leader(sim) not in (None, old), 10_000)
    successor = sim.node(current_leader(sim)).raft  # type: ignore[arg-type]
    assert old not in successor.quorum.voters and len(successor.quorum.voters) == 2
    assert not sim.node(old).raft.quorum.is_voter


def test_update_answers_once_appended() -> None:
    """UpdateVoterHandler: "Reply immediately and don't wait for the change to commit"."""
    sim, dirs = _dynamic()
    raft = _leader(sim)
    target = next(n for n in (1, 2, 3) if n != raft.node_id)
    voter = Voter(target, dirs.of(target), (Endpoint("CONTROLLER", "localhost", 19093),))
    change = raft.change_voters(UPDATE, voter, sim.now_ms, TIMEOUT_MS)
    assert change.error == ErrorCode.none and change.last_offset is not None
    got = raft.membership.voters.get(target)
    assert got is not None and got.endpoints == voter.endpoints


def test_a_restarted_replica_reads_its_voters_from_the_log() -> None:
    sim, dirs = _dynamic(seed=2)
    raft = _leader(sim)
    sim.run_until(sim.now_ms + 1_000)
    change = raft.change_voters(ADD, dirs.voter(5), sim.now_ms, TIMEOUT_MS)
    assert _answered(sim, change).error == ErrorCode.none
    sim.run_until(sim.now_ms + 500)
    sim.crash(5)
    sim.restart(5)
    assert sim.node(5).raft.quorum.voters == (1, 2, 3, 5) and sim.node(5).raft.quorum.is_voter


def test_a_vote_for_another_directory_is_refused_invalid_voter_key() -> None:
    """KafkaRaftClient.isValidVoterKey: a replica formatted again (new directory id) does not vote
    as the voter it was, and does not take the candidate's epoch."""
    log = RaftLog(MemoryLog(), MemorySnapshotStore())
    mine, old = uuid.UUID(int=20), uuid.UUID(int=10)
    format_log(log.log, VoterSet((Voter(1, uuid.UUID(int=1)), Voter(2, old), Voter(3, uuid.UUID(int=3)))))
    store = MemoryQuorumStateStore()
    client = RaftClient(2, (1, 2, 3), log, store, random.Random(1), 0, RaftConfig(), 1, mine)
    assert not client.quorum.is_voter, "its key in the set is another replica's"
    vote = VoteRequest(
        correlation_id=1,
        candidate_epoch=5,
        candidate_id=1,
        last_offset_epoch=0,
        last_offset=2,
        voter_directory_id=old,
    )
    step = client.step(Envelope(source_id=1, destination_id=2, body=vote), 10)
    (answer,) = [e.body for e in step.outbound if isinstance(e.body, VoteResponse)]
    assert answer.error_code == ErrorCode.invalid_voter_key and not answer.vote_granted
    assert client.epoch == 0


def test_a_snapshot_carries_the_voter_set_in_force_at_its_end() -> None:
    """KIP-853 snapshots hold the voter set (Kafka: their first control records); the state
    machine is handed its own bytes only, and a kraft.version 0 snapshot is unchanged."""
    voters = VoterSet((Voter(1, uuid.UUID(int=1)), Voter(4, uuid.UUID(int=4))))
    raw = wrap_snapshot(b"state", voters, 1)
    assert unwrap_snapshot(raw) == (voters, 1, b"state")
    assert unwrap_snapshot(b"state") == (None, 0, b"state")
    with pytest.raises(VoterSetError):
        unwrap_snapshot(raw[:14])
    with pytest.raises(ValueError):
        unwrap_snapshot(raw[:20] + b"\xff" * 4)


def test_a_replica_restarted_from_a_snapshot_keeps_the_changed_voters() -> None:
    """The log's VotersRecord is gone below the snapshot; the snapshot says the set."""
    dirs = Directories()
    sim, disks = build(6, 3, 2, RaftConfig(), dirs=dirs, snapshot_every=5)
    raft = _leader(sim)
    sim.run_until(sim.now_ms + 1_000)
    change = raft.change_voters(ADD, dirs.voter(4), sim.now_ms, TIMEOUT_MS)
    assert _answered(sim, change).error == ErrorCode.none
    for i in range(4):  # enough records for every replica to snapshot past the VotersRecord
        leader = current_leader(sim)
        assert leader is not None
        sim.node(leader).raft.append([b"x%d" % i] * 3, sim.now_ms)
        sim.run_until(sim.now_ms + 300)
    assert disks[5].log.log_start_offset > (change.last_offset or 0)
    sim.crash(5)
    sim.restart(5)
    assert sim.node(5).raft.quorum.voters == (1, 2, 3, 4)
    assert sim.node(5).loaded_snapshot is not None


def test_hostile_voter_records_are_refused_before_allocation() -> None:
    """A VotersRecord read from a fetch claiming 2**31 voters, or endpoints past its end, is a
    ValueError from the shape check (protocol/bounds.py), never an allocation of that size; the
    history skips it and keeps the set it had."""
    good = VoterSet.of_ids((1, 2, 3)).encode()
    huge_count = good[:2] + b"\x80\x80\x80\x80\x08" + good[3:]  # compact array length 2**31
    for bad in (huge_count, good[:-3], b"", good + b"\xff" * 5000):
        try:
            VoterSet.decode(bad)
        except ValueError:
            continue
        assert bad.startswith(good), "only trailing bytes may be ignored, as Kafka's readers do"
    history = VoterHistory(VoterSet.of_ids((1,)), 1)
    batch = build_batch([(KRAFT_VOTERS_KEY, huge_count)], control=True)
    (header,) = iter_headers(batch)
    assert not history.read_batch(header, batch)
    assert list(history.latest.ids) == [1]
