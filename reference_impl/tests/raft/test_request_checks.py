"""Issue 17, item 8: every quorum message is checked before it may change a replica's state, and
nothing out of range is ever persisted.

Kafka's rules come from ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java``
(``handleVoteRequest``, ``validateVoterOnlyRequest``, ``handleFetchRequest``): INVALID_REQUEST
for a negative last offset or epoch, a last epoch not below the candidate's, a negative replica id
and an invalid fetch position; FENCED_LEADER_EPOCH for an older epoch; INCONSISTENT_VOTER_SET
(Kafka 3.x, static voters) for a candidate, a leader or a receiver that is no voter. Two rules are
this broker's own, since nothing authenticates its quorum peers yet (issue 18): an epoch of 2^31-1
leaves no room for another election and is refused, and a replica that hears from a live leader
refuses a Vote for a later epoch without adopting it (Raft's disruptive-server rule; Kafka 4's
``FollowerState.canGrantVote`` for pre-votes, KIP-996). Each test fails with the seeded defect
``quorum-on-client-listener`` (no validation) switched on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from reference_impl import defects
from reference_impl.core.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    VoteRequest,
    VoteResponse,
)
from reference_impl.core.raft.quorum_state import (
    MAX_EPOCH,
    MemoryQuorumStateStore,
    QuorumStateError,
    QuorumStateFormatError,
    encode_quorum_state,
)
from reference_impl.core.raft.states import ElectionState, FollowerState, LeaderState, UnattachedState
from reference_impl.server.raft_files import FileQuorumStateStore

from . import test_client
from .test_client import VOTERS, Context, fetch

WINDOW_MS = 500
"""Half the fetch timeout of the test client's config (1,000 ms)."""


def vote(epoch: int, candidate: int = 2, last_epoch: int = 0, last_offset: int = 0) -> VoteRequest:
    return test_client.TestVoteRequests().request(epoch, candidate, last_epoch, last_offset)


def answer_to(ctx: Context, source: int, body: Any) -> VoteResponse:
    ctx.deliver(source, body)
    [answer] = ctx.sent_of(VoteResponse)
    assert isinstance(answer, VoteResponse)
    return answer


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (vote(MAX_EPOCH, last_epoch=0, last_offset=10**12), ErrorCode.invalid_request),  # no later epoch
        (vote(3, last_epoch=-1), ErrorCode.invalid_request),
        (vote(3, last_offset=-5), ErrorCode.invalid_request),
        (vote(3, last_epoch=3), ErrorCode.invalid_request),  # a candidate's last epoch is below its own
        (vote(3, candidate=-1), ErrorCode.invalid_request),
        (vote(3, candidate=1), ErrorCode.invalid_request),  # names the receiver itself
        (vote(3, candidate=99), ErrorCode.inconsistent_voter_set),
    ],
    ids=[
        "epoch-2^31-1",
        "negative-last-epoch",
        "negative-last-offset",
        "last-epoch-not-below",
        "id-1",
        "self",
        "non-voter",
    ],
)
def test_a_vote_no_voter_could_send_is_refused_and_nothing_stored(
    request_: VoteRequest, error: ErrorCode
) -> None:
    ctx = Context(stored=ElectionState(2, None, None, VOTERS))
    writes = ctx.store.writes
    answer = answer_to(ctx, 2, request_)
    assert (answer.error_code, answer.vote_granted) == (error, False)
    assert ctx.client.epoch == 2 and ctx.store.writes == writes, "a refused vote changed the stored state"


def test_an_observer_takes_no_vote() -> None:
    ctx = Context(local_id=7)
    answer = answer_to(ctx, 2, vote(3))
    assert answer.error_code == ErrorCode.inconsistent_voter_set and ctx.client.epoch == 0


def _follower_of_2(epoch: int = 4) -> Context:
    """Node 1 follows node 2 in ``epoch`` and has just fetched from it."""
    ctx = Context()
    ctx.deliver(2, BeginQuorumEpochRequest(correlation_id=3, leader_id=2, leader_epoch=epoch))
    [request] = ctx.sent_of(FetchRequest)
    ctx.now_ms = 10
    ctx.deliver(
        2,
        FetchResponse(
            correlation_id=request.correlation_id,
            error_code=ErrorCode.none,
            leader_id=2,
            leader_epoch=epoch,
            high_watermark=0,
            log_start_offset=0,
            diverging_epoch=None,
            snapshot_id=None,
            records=b"",
        ),
    )
    assert isinstance(ctx.client.state, FollowerState) and ctx.client.state.last_fetched_ms == 10
    return ctx


def test_a_follower_of_a_live_leader_refuses_a_later_epoch_without_adopting_it() -> None:
    ctx = _follower_of_2()
    writes = ctx.store.writes
    answer = answer_to(ctx, 3, vote(5, candidate=3, last_epoch=4, last_offset=10**9))
    assert (answer.error_code, answer.vote_granted, answer.leader_id) == (ErrorCode.none, False, 2)
    assert isinstance(ctx.client.state, FollowerState) and ctx.client.epoch == 4
    assert ctx.store.writes == writes
    # The same vote once the leader has been silent for the window is a real election: granted.
    ctx.now_ms = 10 + WINDOW_MS
    answer = answer_to(ctx, 3, vote(5, candidate=3, last_epoch=4, last_offset=10**9))
    assert answer.vote_granted and ctx.client.epoch == 5


def test_a_resigning_leader_ends_its_followers_loyalty() -> None:
    ctx = _follower_of_2()
    ctx.deliver(
        2, EndQuorumEpochRequest(correlation_id=4, leader_id=2, leader_epoch=4, preferred_successors=(3, 1))
    )
    answer = answer_to(ctx, 3, vote(5, candidate=3, last_epoch=4, last_offset=1))
    assert answer.vote_granted and ctx.client.epoch == 5


def test_a_leader_refuses_a_vote_naming_a_voter_that_is_fetching_from_it() -> None:
    ctx = Context()
    ctx.elect()
    ctx.now_ms += 100
    ctx.deliver(2, fetch(0, 0, 1))
    answer = answer_to(ctx, 2, vote(2, candidate=2, last_epoch=1, last_offset=10**9))
    assert (answer.vote_granted, answer.leader_id) == (False, 1)
    assert isinstance(ctx.client.state, LeaderState) and ctx.client.epoch == 1
    # Voter 3 never fetched: it may really be a candidate, and the leader steps down for it.
    answer = answer_to(ctx, 3, vote(2, candidate=3, last_epoch=1, last_offset=10**9))
    assert answer.vote_granted and ctx.client.epoch == 2 and not ctx.client.is_leader


@pytest.mark.parametrize(
    ("leader", "epoch", "error"),
    [
        (3, MAX_EPOCH, ErrorCode.invalid_request),
        (-1, 5, ErrorCode.invalid_request),
        (99, 5, ErrorCode.inconsistent_voter_set),
    ],
    ids=["epoch-2^31-1", "id-1", "non-voter"],
)
def test_a_leader_announcement_no_voter_could_send_is_refused(
    leader: int, epoch: int, error: ErrorCode
) -> None:
    ctx = Context(stored=ElectionState(2, None, None, VOTERS))
    writes = ctx.store.writes
    ctx.deliver(3, BeginQuorumEpochRequest(correlation_id=3, leader_id=leader, leader_epoch=epoch))
    [answer] = ctx.sent_of(BeginQuorumEpochResponse)
    assert answer.error_code == error
    ctx.deliver(
        3,
        EndQuorumEpochRequest(
            correlation_id=4, leader_id=leader, leader_epoch=epoch, preferred_successors=()
        ),
    )
    assert ctx.client.epoch == 2 and isinstance(ctx.client.state, UnattachedState)
    assert ctx.store.writes == writes


@pytest.mark.parametrize(
    "request_",
    [fetch(-1, 0, 1), fetch(0, -1, 1), fetch(0, 2, 1), fetch(0, 0, 1, wait=-5)],
    ids=["offset", "last-epoch", "last-epoch-past-leader-epoch", "max-wait"],
)
def test_a_fetch_no_replica_could_send_is_invalid(request_: FetchRequest) -> None:
    ctx = Context()
    ctx.elect()
    ctx.deliver(2, request_)
    [answer] = ctx.sent_of(FetchResponse)
    assert answer.error_code == ErrorCode.invalid_request and answer.records == b""


def test_no_replica_stands_for_the_last_epoch() -> None:
    """A replica in epoch 2^31-2 whose timer fires stays where it is: a candidate of 2^31-1 could win
    and then no election could ever follow."""
    ctx = Context(stored=ElectionState(MAX_EPOCH - 1, None, None, VOTERS))
    ctx.tick(ctx.client.next_deadline_ms())
    assert ctx.client.epoch == MAX_EPOCH - 1 and not ctx.sent_of(VoteRequest)
    deadline = ctx.client.next_deadline_ms()
    assert deadline is not None and deadline > ctx.now_ms


def test_the_stores_refuse_an_epoch_past_int32(tmp_path: Path) -> None:
    memory, files = MemoryQuorumStateStore(), FileQuorumStateStore(str(tmp_path), "c")
    for store in (memory, files):
        store.write(ElectionState(MAX_EPOCH, None, None, VOTERS))  # the last int32 epoch is storable
        with pytest.raises(QuorumStateError, match="epoch 2147483648"):
            store.write(ElectionState(MAX_EPOCH + 1, 2, None, VOTERS))
        with pytest.raises(QuorumStateError, match="voted id -3"):
            store.write(ElectionState(3, -3, None, VOTERS))
    assert files.read() == ElectionState(MAX_EPOCH, None, None, VOTERS)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"leaderEpoch": 2**31}, "epoch 2147483648"),
        ({"leaderEpoch": -4}, "epoch -4"),
        ({"votedId": -9}, "voted id -9"),
        ({"leaderId": "x"}, "invalid literal"),
    ],
)
def test_an_unusable_quorum_state_file_is_named_never_reset(
    tmp_path: Path, body: dict[str, Any], says: str
) -> None:
    raw = json.loads(encode_quorum_state(ElectionState(3, None, None, VOTERS), "c"))
    (tmp_path / "quorum-state").write_text(json.dumps({**raw, **body}))
    with pytest.raises(QuorumStateFormatError) as refused:
        FileQuorumStateStore(str(tmp_path), "c").read()
    assert says in str(refused.value) and str(tmp_path / "quorum-state") in str(refused.value)


def test_stored_state_that_does_not_fit_the_voters_stops_the_replica() -> None:
    with pytest.raises(QuorumStateError, match=r"configured voters \[1, 2, 3\] differ"):
        Context(stored=ElectionState(3, None, None, (1, 2, 4)))
    with pytest.raises(QuorumStateError, match="leader 9, which is not a voter"):
        Context(stored=ElectionState(3, None, 9, VOTERS))


def test_the_seeded_defect_brings_the_poisoned_epoch_back() -> None:
    """The seeded defect is the old behaviour: the 2^31-1 Vote is taken and stored, and the next
    election writes an epoch past int32 (what left the issue's cluster unable to start)."""
    with defects.seeded(defects.QUORUM_ON_CLIENT_LISTENER):
        ctx = Context(stored=ElectionState(2, None, None, VOTERS))
        answer = answer_to(ctx, 2, vote(MAX_EPOCH, last_offset=10**12))
        assert answer.vote_granted and ctx.client.epoch == MAX_EPOCH
        ctx.tick(ctx.client.next_deadline_ms())
        stored = ctx.store.read()
        assert stored is not None and stored.epoch == MAX_EPOCH + 1
