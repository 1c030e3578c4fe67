"""The membership nemesis' voter steps (chaos/nemesis/voters.py) against a fake quorum on the wire:
the seeded pick and the majority rule, RemoveRaftVoter, the wait until the removed voter is caught up
as an observer, AddRaftVoter, and the retries while the leadership moves. The fake answers
DescribeQuorum v2, RemoveRaftVoter and AddRaftVoter as the reference's brokers do (forwarded to the
active controller). One test runs both kinds of window's voter steps on a 3-node reference cluster
(about 20 s); whole campaigns run them in ``kafka-harness chaos --nemesis membership``."""

from __future__ import annotations

import functools
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from chaos.nemesis.voters import MIN_VOTERS_LEFT, VoterKey, VoterSteps, pick_voter
from fixtures.wire import membership as wire_membership
from fixtures.wire import voters as wire_voters


def _dir(node: int) -> uuid.UUID:
    return uuid.UUID(int=node + 100)


@dataclass
class FakeQuorum:
    voters: set[int] = field(default_factory=lambda: {1, 2, 3})
    observers: dict[int, int] = field(default_factory=dict)
    """Observer id -> its log end offset (grows by one per DescribeQuorum: it fetches)."""
    high_watermark: int = 5
    leader: int = 1
    moving: list[str] = field(default_factory=list)
    """Errors to answer the next voter changes with first (a leadership moving)."""
    lost: int = 0
    """Changes to make and then answer REQUEST_TIMED_OUT (the answer lost as the leader resigned)."""
    asked: list[str] = field(default_factory=list)
    describe_errors: list[str] = field(default_factory=list)
    """Errors DescribeQuorum answers first (the leadership moving)."""
    down: set[str] = field(default_factory=set)
    """Addresses that refuse connections."""

    def describe(self) -> Any:
        if self.describe_errors:
            code = getattr(ErrorCode, self.describe_errors.pop(0))
            return SimpleNamespace(error_code=code, topics=[])
        for node in self.observers:
            self.observers[node] = min(self.observers[node] + 1, self.high_watermark)

        def replica(node: int, end: int) -> Any:
            return SimpleNamespace(replica_id=node, replica_directory_id=_dir(node), log_end_offset=end)

        partition = SimpleNamespace(
            error_code=ErrorCode.none,
            leader_id=self.leader,
            leader_epoch=4,
            high_watermark=self.high_watermark,
            current_voters=[replica(v, self.high_watermark) for v in sorted(self.voters)],
            observers=[replica(o, end) for o, end in sorted(self.observers.items())],
        )
        return SimpleNamespace(error_code=ErrorCode.none, topics=[SimpleNamespace(partitions=[partition])])

    def change(self, api: str, fields: dict[str, Any]) -> Any:
        node, directory = int(fields["voter_id"]), fields["voter_directory_id"]
        self.asked.append(f"{api} {node}")
        if self.moving:
            code = getattr(ErrorCode, self.moving.pop(0))
        elif directory != _dir(node):
            code = ErrorCode.voter_not_found
        elif api == "remove_raft_voter":
            if node not in self.voters:
                code = ErrorCode.voter_not_found
            else:
                self.voters.discard(node)
                self.observers[node] = 0
                code = ErrorCode.none
        elif node in self.voters:
            code = ErrorCode.duplicate_voter
        elif self.observers.get(node, -1) < self.high_watermark:
            code = ErrorCode.request_timed_out
        else:
            self.voters.add(node)
            del self.observers[node]
            code = ErrorCode.none
        if code == ErrorCode.none and self.lost:
            self.lost -= 1
            code = ErrorCode.request_timed_out
        return SimpleNamespace(error_code=code, error_message=None)


class FakeWire:
    quorum: FakeQuorum

    def __init__(self, address: str, **_: Any) -> None:
        if address in self.quorum.down:
            raise ConnectionRefusedError(f"{address} is down")

    def __enter__(self) -> FakeWire:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def request(self, api: str, version: int, fields: dict[str, Any] | None = None, **kw: Any) -> Any:
        if api == "describe_quorum":
            return self.quorum.describe()
        assert fields is not None
        return self.quorum.change(api, fields)


@pytest.fixture
def quorum(monkeypatch: pytest.MonkeyPatch) -> FakeQuorum:
    fake = FakeQuorum()
    FakeWire.quorum = fake
    monkeypatch.setattr(wire_membership, "WireClient", FakeWire)  # the brokers asked in turn
    monkeypatch.setattr(wire_voters, "POLL_S", 0.0)
    return fake


def _steps(running: list[int] | None = None) -> VoterSteps:
    return VoterSteps(
        lambda: ["a:1", "b:2"],
        lambda: running if running is not None else [1, 2, 3, 4],
        lambda node: ("127.0.0.1", 9000 + node),
    )


def test_the_pick_is_seeded_and_keeps_two_voters_running() -> None:
    picks = {pick_voter(seed, [1, 2, 3], [1, 2, 3]).voter for seed in range(30)}
    assert picks == {1, 2, 3}  # any voter, the leader included
    assert pick_voter(5, [1, 2, 3], [1, 2, 3]) == pick_voter(5, [1, 2, 3], [1, 2, 3])
    one_down = pick_voter(5, [1, 2, 3], [1, 3, 4])  # a kill has voter 2 down
    assert one_down.voter is None and "fewer than 2" in one_down.reason
    assert pick_voter(5, [1, 2], [1, 2]).voter is None
    five = {pick_voter(s, [1, 2, 3, 4, 5], [1, 2, 4]).voter for s in range(30)}
    assert five == {1, 2, 4} and MIN_VOTERS_LEFT == 2  # only running voters are removed


def test_a_voter_is_removed_then_added_back_once_caught_up(quorum: FakeQuorum) -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    steps = _steps()
    removed = steps.remove(11, lambda step, value: records.append((step, value)))
    assert removed is not None and removed.directory_id == _dir(removed.voter)
    assert removed.voter not in quorum.voters and removed.endpoint == ("127.0.0.1", 9000 + removed.voter)
    assert steps.add(removed, lambda step, value: records.append((step, value)))
    assert quorum.voters == {1, 2, 3} and not quorum.observers
    assert [step for step, _ in records] == ["remove-voter", "add-voter"]
    remove, add = records[0][1], records[1][1]
    assert remove["error"] == "NONE" and remove["voters_before"] == [1, 2, 3]
    assert add["error"] == "NONE" and add["voters_after"] == [1, 2, 3] and add["caught_up_s"] >= 0
    assert quorum.asked == [f"remove_raft_voter {removed.voter}", f"add_raft_voter {removed.voter}"]


def test_changes_are_asked_again_while_the_leadership_moves(quorum: FakeQuorum) -> None:
    """A kill of the active controller: NOT_CONTROLLER, then a broker down; both asked again."""
    quorum.moving = ["not_controller", "request_timed_out"]
    quorum.describe_errors = ["not_leader_or_follower", "not_controller"]  # seed 21's skip before
    quorum.down = {"a:1"}
    records: list[tuple[str, dict[str, Any]]] = []
    removed = _steps().remove(3, lambda step, value: records.append((step, value)))
    assert removed is not None and records[-1][1]["error"] == "NONE"
    assert len(quorum.asked) == 3  # two refusals, then done


def test_a_removal_whose_answer_was_lost_is_seen_in_the_quorum(quorum: FakeQuorum) -> None:
    """The leader removing itself resigns once the change commits: the broker's answer is lost
    (REQUEST_TIMED_OUT), the retry is refused VOTER_NOT_FOUND, and the voter is gone all the same
    (seed 21 of the issue-20 command left voter 1 out for the rest of its campaign before this)."""
    quorum.lost = 1
    records: list[tuple[str, dict[str, Any]]] = []
    steps = _steps()
    removed = steps.remove(3, lambda step, value: records.append((step, value)))
    assert removed is not None and not removed.in_quorum and removed.voter not in quorum.voters
    step, value = records[-1]
    assert (step, value["error"], value["removed"]) == ("remove-voter", "VOTER_NOT_FOUND", True)
    assert steps.add(removed, lambda step, value: records.append((step, value)))
    assert quorum.voters == {1, 2, 3}


def test_no_removal_when_the_majority_rule_forbids_it(quorum: FakeQuorum) -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    assert _steps(running=[1, 3, 4]).remove(3, lambda step, value: records.append((step, value))) is None
    assert records[0][0] == "voter-skip" and quorum.voters == {1, 2, 3} and not quorum.asked


def test_an_add_of_a_voter_that_never_catches_up_is_refused_and_recorded(quorum: FakeQuorum) -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    steps = _steps()
    removed = steps.remove(3, lambda step, value: records.append((step, value)))
    assert removed is not None
    quorum.high_watermark = 10**9  # the observer stays behind (its process is paused, say)
    assert not steps.add(removed, lambda step, value: records.append((step, value)), catch_up_s=0.05)
    add = records[-1][1]
    assert add["error"] == "REQUEST_TIMED_OUT" and "did not catch up" in add["not_caught_up"]
    assert removed.voter not in quorum.voters and not removed.in_quorum


def test_a_new_controller_is_added_then_removed(quorum: FakeQuorum) -> None:
    """The other kind of window: a controller started with bootstrap servers (an observer of the
    fake quorum) is added once caught up, then removed at the window's end."""
    quorum.observers[7] = 0  # fetching through the bootstrap servers
    joined = VoterKey(7, _dir(7), ("127.0.0.1", 9007), new=True)
    records: list[tuple[str, dict[str, Any]]] = []
    steps = _steps()
    assert steps.add(joined, lambda step, value: records.append((step, value)))
    assert quorum.voters == {1, 2, 3, 7} and joined.in_quorum
    assert steps.leave(joined, lambda step, value: records.append((step, value)))
    assert quorum.voters == {1, 2, 3}
    assert [(step, value["new"], value["error"]) for step, value in records] == [
        ("add-voter", True, "NONE"),
        ("remove-voter", True, "NONE"),
    ]
    assert records[1][1]["voters_before"] == [1, 2, 3, 7]
    assert steps.leave(joined, lambda step, value: records.append((step, value)))  # no voter: nothing asked
    assert len(records) == 2


def test_a_joined_controller_stays_while_the_rule_forbids_its_removal(quorum: FakeQuorum) -> None:
    """Voters 1, 2, 3 and the joined 7, with 2 and 3 down (kills): removing 7 would leave one
    running voter, so it is not removed (bounded wait) and its process is not stopped."""
    quorum.voters.add(7)
    joined = VoterKey(7, _dir(7), ("127.0.0.1", 9007), new=True, in_quorum=True)
    records: list[tuple[str, dict[str, Any]]] = []
    gone = _steps(running=[1, 4]).leave(joined, lambda step, value: records.append((step, value)), 0.0)
    assert not gone and 7 in quorum.voters and not quorum.asked
    assert records[-1][0] == "voter-skip" and "not removed" in records[-1][1]["reason"]


def test_both_kinds_of_voter_window_on_a_reference_cluster(tmp_path: Path) -> None:
    """Three reference nodes at kraft.version 1: a voter taken out and added back, then a controller
    started with bootstrap servers, added, removed and stopped, as the membership nemesis' windows
    do (their broker steps are the decommission tests'); each step recorded, every answer NONE."""
    from chaos.history import Recorder
    from chaos.nemesis.membership import Membership
    from fixtures.targets import launch

    configs = [
        "reference.kraft.version=1",
        "broker.session.timeout.ms=3000",
        "broker.heartbeat.interval.ms=500",
    ]
    recorder = Recorder()
    started = time.monotonic()
    with launch("reference", workdir=tmp_path, brokers=3, broker_configs=configs) as target:
        membership = Membership(recorder, target, [], voters=True)
        steps = membership._voter_steps()
        record = functools.partial(membership._record, 0)
        removed = steps.remove(5, record)
        assert removed is not None and steps.add(removed, record)
        joined, node = membership._start_controller(1)
        assert steps.add(joined, record)
        assert wire_voters.quorum_of(steps.addresses()).voter_ids == (1, 2, 3, joined.voter)
        membership._leave(1, steps, joined, node)
        assert not node.is_running and membership.stop_controllers() == []
        assert wire_voters.quorum_of(steps.addresses()).voter_ids == (1, 2, 3)
    ops = [op.value for op in recorder.history.ops if op.f == "membership"]
    changes = [(v["step"], v.get("new", False), v.get("error")) for v in ops]
    assert changes == [
        ("remove-voter", False, "NONE"),
        ("add-voter", False, "NONE"),
        ("start-controller", False, None),
        ("add-voter", True, "NONE"),
        ("remove-voter", True, "NONE"),
        ("stop-controller", False, None),
    ], changes
    print(f"two voter windows on a 3-node cluster in {time.monotonic() - started:.1f} s (launch included)")
