"""The membership nemesis' voter steps (KIP-853): a metadata-quorum voter leaves and comes back.

Per ``membership`` window (:mod:`.membership`), on a reference cluster started at kraft.version 1
(``reference.kraft.version=1``: the runner sets it when ``membership`` is among the faults):

1. ``remove-voter``: a seeded voter (any, the active controller included: a leader removed resigns
   once the change commits, Kafka's ``RemoveVoterHandler``) is removed with RemoveRaftVoter through
   a broker, which forwards it to the active controller; its directory id comes from
   DescribeQuorum v2. The process keeps running: once it reads the new voter set it is an observer
   of the metadata log (``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java``: a replica
   not in the voter set fetches as an observer).
2. ``add-voter``: once DescribeQuorum shows it caught up as an observer (its log end at the high
   watermark), AddRaftVoter adds it back with its controller endpoint and directory id, as
   ``kafka-metadata-quorum add-controller`` does (Kafka's ``internals/AddVoterHandler.java`` refuses
   a replica that has not fetched: REQUEST_TIMED_OUT, asked again, bounded).

Every second window is the other kind (``join``/``leave``): a new controller-only process starts
with ``controller.quorum.bootstrap.servers`` naming the voters' controller listeners instead of
``controller.quorum.voters`` (``start-controller``; KIP-853, Kafka's ``kafka-storage format
--no-initial-controllers``), observes the metadata log, and once caught up is added with AddRaftVoter
(``add-voter`` with ``new``); at the window's end it is removed again (``remove-voter`` with ``new``)
and its process stopped (``stop-controller``). Its directory id is the one the reference derives
(``fixtures.targets.membership.reference_directory_id``; Kafka's tool reads it from the new
controller's ``meta.properties``).

The majority rule: a voter is removed only when at least :data:`MIN_VOTERS_LEFT` other voters are
running (the kill nemesis may have one down): with fewer, one more kill would leave the quorum
without a majority for the add that brings it back. A window that cannot remove records
``voter-skip`` with its reason. Every request is asked again while the leadership moves (a kill of
the active controller), bounded in attempts and time (:mod:`fixtures.wire.voters`). A voter that
could not be added back in its window is tried again at the window's end (``add-voter`` again).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fixtures.wire import voters as wire_voters
from fixtures.wire.voters import QuorumView, VoterChangeError

MIN_VOTERS_LEFT = 2
"""Voters that must still be running after a removal (the brief's rule with the kill nemesis)."""
CATCH_UP_TIMEOUT_S = 30.0
CHANGE_TIMEOUT_S = 45.0
RULE_WAIT_S = 30.0
"""How long the removal of a joined controller waits for the majority rule (a killed voter back)."""
POLL_S = 0.5
MAX_RULE_POLLS = 1_000

Record = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class VoterPick:
    """The voter a window removes and adds back, or why none is."""

    voter: int | None
    reason: str = ""


def pick_voter(pick: int, voters: Sequence[int], running: Sequence[int]) -> VoterPick:
    """The seeded voter to remove, among the running ones, so that :data:`MIN_VOTERS_LEFT` other
    voters stay running; None with the reason when no removal keeps that. Pure."""
    alive = sorted(v for v in voters if v in set(running))
    if len(voters) < MIN_VOTERS_LEFT + 1:
        return VoterPick(None, f"{len(voters)} voters: removing one would leave fewer than {MIN_VOTERS_LEFT}")
    candidates = [v for v in alive if len(alive) - 1 >= MIN_VOTERS_LEFT]
    if not candidates:
        return VoterPick(
            None,
            f"voters {sorted(voters)}, running {alive}: a removal would leave fewer than {MIN_VOTERS_LEFT}",
        )
    return VoterPick(random.Random(pick).choice(candidates))


@dataclass
class VoterKey:
    """A voter a window changes: one it took out to bring back, or (``new``) a controller it
    started to add and remove again."""

    voter: int
    directory_id: uuid.UUID
    endpoint: tuple[str, int]
    new: bool = False
    in_quorum: bool = False
    """A voter (again) after the window's add."""


class VoterSteps:
    """The voter steps of one cluster: ``addresses()`` gives the running brokers' addresses,
    ``running()`` the running node ids, ``endpoint(id)`` a voter's controller listener."""

    def __init__(
        self,
        addresses: Callable[[], list[str]],
        running: Callable[[], list[int]],
        endpoint: Callable[[int], tuple[str, int] | None],
    ) -> None:
        self.addresses = addresses
        self.running = running
        self.endpoint = endpoint

    def remove(self, pick: int, record: Record) -> VoterKey | None:
        """Step 1: remove a seeded voter (recorded); None when none was removed."""
        try:
            quorum: QuorumView = wire_voters.quorum_of(self.addresses())
        except VoterChangeError as exc:
            record("voter-skip", {"reason": f"no quorum description: {exc}"})
            return None
        chosen = pick_voter(pick, quorum.voter_ids, self.running())
        if chosen.voter is None:
            record("voter-skip", {"reason": chosen.reason, "voters": list(quorum.voter_ids)})
            return None
        voter = next(v for v in quorum.voters if v.replica_id == chosen.voter)
        endpoint = self.endpoint(chosen.voter)
        if voter.directory_id is None or endpoint is None:
            record(
                "voter-skip", {"reason": f"voter {chosen.voter} has no directory id or controller endpoint"}
            )
            return None
        key = VoterKey(chosen.voter, voter.directory_id, endpoint, in_quorum=True)
        if not self._remove(key, quorum, record):
            return None
        return key

    def _remove(self, key: VoterKey, quorum: QuorumView, record: Record) -> bool:
        """RemoveRaftVoter of ``key`` (``remove-voter``, with the quorum as it was); True when it
        is no voter afterwards. An answer lost while the leadership moved (the leader removing
        itself resigns once the change commits) is asked again, and the retry may be refused with
        VOTER_NOT_FOUND although the first one committed: the quorum is described again to tell."""
        answer = wire_voters.remove_voter(
            self.addresses(), key.voter, key.directory_id, timeout_s=CHANGE_TIMEOUT_S
        )
        value: dict[str, Any] = {
            "nodes": [key.voter],
            **({"new": True} if key.new else {}),
            "voters_before": list(quorum.voter_ids),
            "leader": quorum.leader,
            "epoch": quorum.epoch,
            "error": answer.error,
        }
        if answer.message:
            value["message"] = answer.message
        key.in_quorum = answer.error != "NONE"
        if key.in_quorum:
            try:
                after = wire_voters.quorum_of(self.addresses()).voter_ids
                value["voters_after"] = list(after)
                key.in_quorum = key.voter in after
            except VoterChangeError as exc:
                value["voters_after"] = f"unknown: {exc}"
            value["removed"] = not key.in_quorum
        record("remove-voter", value)
        return not key.in_quorum

    def add(self, key: VoterKey, record: Record, catch_up_s: float = CATCH_UP_TIMEOUT_S) -> bool:
        """Once ``key``'s replica observes the quorum caught up, AddRaftVoter (``add-voter``; the
        voter taken out comes back, or the started controller joins, ``new``); True when it is a
        voter."""
        value: dict[str, Any] = {"nodes": [key.voter], **({"new": True} if key.new else {})}
        try:
            value["caught_up_s"] = round(
                wire_voters.wait_caught_up(self.addresses(), key.voter, catch_up_s), 3
            )
        except VoterChangeError as exc:
            value["not_caught_up"] = str(exc)  # AddRaftVoter is still asked: the leader decides
        answer = wire_voters.add_voter(
            self.addresses(), key.voter, key.directory_id, key.endpoint, timeout_s=CHANGE_TIMEOUT_S
        )
        value["error"] = answer.error
        if answer.message:
            value["message"] = answer.message
        key.in_quorum = answer.error in ("NONE", "DUPLICATE_VOTER")
        try:
            value["voters_after"] = list(wire_voters.quorum_of(self.addresses()).voter_ids)
        except VoterChangeError as exc:
            value["voters_after"] = f"unknown: {exc}"
        record("add-voter", value)
        return key.in_quorum

    def leave(self, joined: VoterKey, record: Record, rule_wait_s: float = RULE_WAIT_S) -> bool:
        """Step 2: the joined controller is removed again (``remove-voter``, ``new``), once the
        majority rule holds (waited for, bounded: a kill may have an original voter down); True when
        it is no voter (so its process may stop)."""
        deadline = time.monotonic() + rule_wait_s
        reason = "never described"
        for _ in range(MAX_RULE_POLLS):
            try:
                quorum = wire_voters.quorum_of(self.addresses())
            except VoterChangeError as exc:
                reason = f"no quorum description: {exc}"
            else:
                if joined.voter not in quorum.voter_ids:
                    return True
                running = set(self.running()) | {joined.voter}
                others = [v for v in quorum.voter_ids if v != joined.voter and v in running]
                if len(others) >= MIN_VOTERS_LEFT:
                    return self._remove(joined, quorum, record)
                reason = f"voters {list(quorum.voter_ids)}, running {sorted(others)}"
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        record("voter-skip", {"nodes": [joined.voter], "reason": f"not removed: {reason}"})
        return False
