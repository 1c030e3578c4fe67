"""AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter (82) on the wire
(core/kraft/voter_admin.py): a single broker, its own static quorum, answers Kafka's request checks
then UNSUPPORTED_VERSION; a kraft.version 1 quorum's leader turns the requests into voter changes
(driven on the simulator's replicas)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pytest

from reference_impl.core.handlers.registry import Deferred, Respond
from reference_impl.core.kraft import voter_admin
from reference_impl.core.raft.api import RaftConfig
from reference_impl.protocol.errors import ErrorCode
from reference_impl.sim.raft.nodes import current_leader
from reference_impl.sim.raft.voter_fuzz import Directories, build

from .harness import BrokerHarness, request

if TYPE_CHECKING:
    from reference_impl.core.request_context import RequestContext

LISTENER = "CONTROLLER"
DIR = uuid.UUID(int=77)


def _add(version: int = 0, **over: Any) -> Any:
    fields: dict[str, Any] = {
        "cluster_id": None,
        "timeout": 5000,
        "voter_id": 9,
        "voter_directory_id": DIR,
        "listeners": [{"name": LISTENER, "host": "127.0.0.1", "port": 9999}],
        **over,
    }
    return request(80, version, **fields)


def _remove(**over: Any) -> Any:
    return request(81, 0, **{"cluster_id": None, "voter_id": 9, "voter_directory_id": DIR, **over})


@pytest.mark.parametrize("version", [0, 1])
def test_single_broker_is_a_static_quorum(version: int) -> None:
    """kraft.version 0: every well-formed add or remove is UNSUPPORTED_VERSION (AddVoterHandler)."""
    harness = BrokerHarness()
    answer = harness.call(_add(version))
    assert answer.error_code == ErrorCode.unsupported_version
    assert "kraft.version" in (answer.error_message or "")
    assert harness.call(_remove()).error_code == ErrorCode.unsupported_version


def test_single_broker_checks_the_request_first() -> None:
    harness = BrokerHarness()
    wrong = harness.call(_add(cluster_id="another-cluster"))
    assert wrong.error_code == ErrorCode.inconsistent_cluster_id
    assert harness.call(_add(voter_directory_id=None)).error_code == ErrorCode.invalid_request
    assert harness.call(_remove(voter_directory_id=None)).error_code == ErrorCode.invalid_request
    many = [{"name": f"L{i}", "host": "h", "port": i} for i in range(40)]
    assert harness.call(_add(listeners=many)).error_code == ErrorCode.invalid_request


@dataclass
class _Ctx:
    """What voter_admin reads of a RequestContext, and what it answers."""

    api_version: int = 0
    received_ms: int = 0
    answers: list[Any] = field(default_factory=list)

    def respond(self, body: Any) -> None:
        self.answers.append(body)


def _body(reply: object) -> Any:
    assert isinstance(reply, Respond), f"answered later: {reply}"
    body: Any = reply.body
    return body


def _quorum() -> tuple[Any, Directories]:
    dirs = Directories()
    sim, _ = build(11, 3, 2, RaftConfig(), dirs=dirs)
    assert sim.run_until_true(lambda: current_leader(sim) is not None, 10_000)
    sim.run_until(sim.now_ms + 1_500)  # the leader commits its epoch; the observers catch up
    return sim, dirs


def _serve(raft: Any, api_key: int, body: Any, now_ms: int, version: int = 0) -> tuple[Any, _Ctx]:
    ctx = _Ctx(api_version=version, received_ms=now_ms)
    reply = voter_admin.serve(
        raft,
        "kh",
        LISTENER,
        cast("RequestContext", ctx),
        api_key,
        body,
        (),
        (raft.leader_id, raft.epoch, "h", 1),
    )
    return reply, ctx


def test_dynamic_quorum_add_waits_for_the_commit_and_remove_unknown_is_voter_not_found() -> None:
    sim, dirs = _quorum()
    leader = sim.node(current_leader(sim)).raft
    follower = next(sim.node(n).raft for n in (1, 2, 3) if n != leader.node_id)
    refused, _ = _serve(
        follower, 80, _add(cluster_id="kh", voter_id=4, voter_directory_id=dirs.of(4)), sim.now_ms
    )
    assert _body(refused).error_code == ErrorCode.not_leader_or_follower
    no_listener = _add(
        voter_id=4, voter_directory_id=dirs.of(4), listeners=[{"name": "X", "host": "h", "port": 1}]
    )
    reply, _ = _serve(leader, 80, no_listener, sim.now_ms)
    assert _body(reply).error_code == ErrorCode.invalid_request
    reply, ctx = _serve(leader, 80, _add(voter_id=4, voter_directory_id=dirs.of(4)), sim.now_ms)
    assert isinstance(reply, Deferred), "an add is answered once committed"
    assert sim.run_until_true(lambda: reply.op.try_complete(sim.now_ms), 6_000)
    assert [a.error_code for a in ctx.answers] == [ErrorCode.none]
    assert leader.quorum.voters == (1, 2, 3, 4)
    gone, _ = _serve(leader, 81, _remove(voter_id=5, voter_directory_id=dirs.of(5)), sim.now_ms)
    assert _body(gone).error_code == ErrorCode.voter_not_found


def test_add_v1_without_ack_answers_once_written() -> None:
    """AddRaftVoter v1 AckWhenCommitted=false (KIP-1186): answered when the leader wrote the record."""
    sim, dirs = _quorum()
    leader = sim.node(current_leader(sim)).raft
    body = _add(1, voter_id=5, voter_directory_id=dirs.of(5), ack_when_committed=False)
    reply, _ = _serve(leader, 80, body, sim.now_ms, version=1)
    assert _body(reply).error_code == ErrorCode.none
    assert 5 in leader.quorum.voters


def test_update_checks_the_epoch_and_the_version_range() -> None:
    sim, dirs = _quorum()
    leader = sim.node(current_leader(sim)).raft
    target = next(n for n in (1, 2, 3) if n != leader.node_id)

    def update(epoch: int, low: int = 0, high: int = 1) -> Any:
        return request(
            82,
            0,
            cluster_id=None,
            current_leader_epoch=epoch,
            voter_id=target,
            voter_directory_id=dirs.of(target),
            listeners=[{"name": LISTENER, "host": "127.0.0.1", "port": 19093}],
            k_raft_version_feature={"min_supported_version": low, "max_supported_version": high},
        )

    for epoch, error in (
        (leader.epoch - 1, ErrorCode.fenced_leader_epoch),
        (leader.epoch + 1, ErrorCode.unknown_leader_epoch),
    ):
        reply, _ = _serve(leader, 82, update(epoch), sim.now_ms)
        assert _body(reply).error_code == error
    reply, _ = _serve(leader, 82, update(leader.epoch, 1, 0), sim.now_ms)
    assert _body(reply).error_code == ErrorCode.invalid_request
    reply, _ = _serve(leader, 82, update(leader.epoch), sim.now_ms)
    assert _body(reply).error_code == ErrorCode.none
    assert _body(reply).current_leader.leader_id == leader.node_id
    voter = leader.membership.voters.get(target)
    assert voter is not None and voter.endpoints[0].port == 19093
