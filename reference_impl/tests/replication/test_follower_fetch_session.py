"""Followers fetch in incremental fetch sessions (KIP-227), as Kafka's replica fetcher: after the
first full fetch a follower sends only the partitions whose fetch state changed, and the leader
answers only the partitions whose state changed (issue 22: a follower of many idle partitions
paid for all of them on every acks=all round trip)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reference_impl.core.boundary import ResponseReceived, SendRequest, Step
from reference_impl.core.fetch_sessions import FetchPlan, SessionPartition
from reference_impl.core.handlers.k01_fetch import DelayedFetch, _reports
from reference_impl.core.replication.fetch_session import FollowerFetchSession
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch
from reference_impl.tests.core.cluster_harness import ClusterHarness
from reference_impl.tests.core.harness import START_MS, request

TOPIC = "sessions"
PARTITIONS = 6


class FetchLog:
    """The follower fetches each broker sends (request bodies) and the answers it gets."""

    def __init__(self, c: ClusterHarness) -> None:
        self.requests: list[tuple[int, int, Any]] = []  # (follower, leader, body)
        self.responses: list[tuple[int, Any]] = []  # (follower, body)
        for n, broker in c.brokers.items():
            broker.step = self._wrap_step(n, broker.step)  # type: ignore[method-assign]
            broker.tick = self._wrap_tick(n, broker.tick)  # type: ignore[method-assign]

    def _record(self, node: int, step: Step) -> Step:
        for effect in step.effects:
            if isinstance(effect, SendRequest) and int(effect.body.__api_key__) == 1:
                self.requests.append((node, effect.node_id, effect.body))
        return step

    def _wrap_step(self, node: int, step: Callable[..., Step]) -> Callable[..., Step]:
        def wrapped(event: Any, *args: Any, **kwargs: Any) -> Step:
            body = event.body if isinstance(event, ResponseReceived) else None
            if hasattr(body, "responses") and hasattr(body, "session_id"):
                self.responses.append((node, body))
            return self._record(node, step(event, *args, **kwargs))

        return wrapped

    def _wrap_tick(self, node: int, tick: Callable[..., Step]) -> Callable[..., Step]:
        def wrapped(*args: Any, **kwargs: Any) -> Step:
            return self._record(node, tick(*args, **kwargs))

        return wrapped

    def clear(self) -> None:
        self.requests.clear()
        self.responses.clear()


def partitions_of(body: Any) -> set[int]:
    return {int(p.partition) for t in body.topics for p in t.partitions}


def answered(body: Any) -> set[int]:
    return {int(p.partition_index) for t in body.responses for p in t.partitions}


def setup() -> tuple[ClusterHarness, FetchLog]:
    c = ClusterHarness(3)
    fetches = FetchLog(c)
    r = c.call(
        1,
        request(
            19,
            7,
            topics=[
                {
                    "name": TOPIC,
                    "num_partitions": PARTITIONS,
                    "replication_factor": 3,
                    "assignments": [],
                    "configs": [{"name": "min.insync.replicas", "value": "3"}],
                }
            ],
            timeout=1000,
            validate_only=False,
        ),
    )
    assert r.topics[0].error_code == ErrorCode.none
    c.sync()
    c.advance(2_000)  # the first full fetches open the sessions
    return c, fetches


def produce(c: ClusterHarness, index: int, value: bytes) -> Any:
    leader = c.brokers[1].image.topics[TOPIC].partitions[index].leader
    batch = build_batch([(None, value)], base_timestamp=START_MS)
    r = c.call(
        leader,
        request(
            0,
            9,
            acks=-1,
            timeout=5000,
            transactional_id=None,
            topic_data=[{"name": TOPIC, "partition_data": [{"index": index, "records": batch}]}],
        ),
    )
    return leader, r.responses[0].partition_responses[0]


def test_the_first_follower_fetch_is_full_and_opens_a_session() -> None:
    c, fetches = setup()
    assert fetches.requests, "the followers fetched"
    leaders = {index: p.leader for index, p in c.brokers[1].image.topics[TOPIC].partitions.items()}
    first = [body for _f, _l, body in fetches.requests if int(body.session_epoch) == 0]
    assert first, "a follower's first fetch to a leader opens a session (epoch 0)"
    for _follower, leader, body in fetches.requests[:4]:
        if int(body.session_epoch) == 0:
            followed = {i for i, lead in leaders.items() if lead == leader}
            assert followed <= partitions_of(body), "a full fetch carries every followed partition"
    assert any(int(body.session_id) != 0 for _f, body in fetches.responses), "the leader opened a session"


def test_an_incremental_follower_fetch_sends_and_answers_only_the_changed_partition() -> None:
    c, fetches = setup()
    fetches.clear()
    leader, answer = produce(c, 0, b"v")
    assert answer.error_code == ErrorCode.none  # acks=all: both followers fetched it
    followers = {f for f, lead, _ in fetches.requests if lead == leader}
    assert len(followers) == 2
    for _follower, lead, body in fetches.requests:
        if lead != leader:
            continue
        assert int(body.session_epoch) > 0, "in the session: incremental"
        assert partitions_of(body) <= {0}, "only partition 0's fetch offset changed"
    carried = [partitions_of(body) for _f, lead, body in fetches.requests if lead == leader]
    assert {0} in carried, "the fetch after the append carries partition 0's new offset"
    from_leader = [body for f, body in fetches.responses if f in followers]
    assert from_leader
    for body in from_leader:
        assert int(body.session_id) != 0
        assert answered(body) <= {0}, "the other partitions did not change: left out"
    assert any(answered(body) == {0} for body in from_leader), "the records came in an answer"


def test_a_lost_session_is_reopened_by_a_full_fetch_and_replication_goes_on() -> None:
    """The leader forgot the session (a restart): FETCH_SESSION_ID_NOT_FOUND, then a full fetch."""
    c, fetches = setup()
    leader = c.brokers[1].image.topics[TOPIC].partitions[1].leader
    c.brokers[leader].fetch_sessions.sessions.clear()
    fetches.clear()
    _leader, answer = produce(c, 1, b"w")
    assert answer.error_code == ErrorCode.none
    codes = [ErrorCode(int(body.error_code)) for _f, body in fetches.responses]
    assert ErrorCode.fetch_session_id_not_found in codes
    followed = {i for i, p in c.brokers[1].image.topics[TOPIC].partitions.items() if p.leader == leader}
    reopened = [
        body for _f, lead, body in fetches.requests if lead == leader and int(body.session_epoch) == 0
    ]
    assert reopened and all(partitions_of(body) == followed for body in reopened)


def test_the_follower_session_sends_what_changed_and_forgets_what_went() -> None:
    session = FollowerFetchSession()
    a, b, d = ("t", 0), ("t", 1), ("t", 2)
    first = session.build({a: {"o": 1}, b: {"o": 5}})
    assert first.epoch == 0 and set(first.partitions) == {a, b}
    assert session.on_response(first, ErrorCode.none, 77)
    second = session.build({a: {"o": 2}, b: {"o": 5}, d: {"o": 0}})
    assert (second.session_id, second.epoch) == (77, 1)
    assert set(second.partitions) == {a, d} and second.forgotten == []
    assert session.on_response(second, ErrorCode.none, 77)
    third = session.build({a: {"o": 2}})
    assert third.epoch == 2 and third.partitions == {} and third.forgotten == [b, d]
    assert not session.on_response(third, ErrorCode.invalid_fetch_session_epoch, 0)
    fourth = session.build({a: {"o": 2}})
    assert (fourth.session_id, fourth.epoch) == (77, 0), "closes the session and opens a new one"
    assert set(fourth.partitions) == {a}
    assert session.on_response(fourth, ErrorCode.none, 77)
    session.resend(a)  # answered with an error: the leader may keep nothing for it
    assert set(session.build({a: {"o": 2}}).partitions) == {a}
    assert session.on_response(session.build({a: {"o": 2}}), ErrorCode.none, 0)
    assert session.build({a: {"o": 2}}).epoch == 0, "a leader that keeps no session: always full"


def test_a_diverging_epoch_is_always_in_an_incremental_answer() -> None:
    """FetchSession.scala: a diverging epoch is answered even when nothing else changed."""
    key = ("t", 0)
    part = SessionPartition(fetch_offset=5, max_bytes=100, last_high_watermark=3, last_stable_offset=3)
    part.last_log_start_offset = 0
    plan = FetchPlan(1, {key: part}, incremental=True)
    state: Any = type("S", (), {"plan": plan})()
    entry: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "preferred_read_replica": -1,
        "high_watermark": 3,
        "last_stable_offset": 3,
        "log_start_offset": 0,
    }
    assert not _reports(state, key, entry, 0, update=False)
    entry["diverging_epoch"] = {"epoch": 1, "end_offset": 4}
    assert _reports(state, key, entry, 0, update=False)


def test_a_follower_fetch_that_waited_is_recorded_on_arrival_only() -> None:
    """Kafka's ReplicaManager.fetchMessages updates the follower's fetch state once, as the fetch
    arrives; DelayedFetch.onComplete only reads. Recording it again at the answer re-ran the ISR
    and high watermark checks of every partition the follower follows."""
    c, _fetches = setup()
    leader = c.brokers[1].image.topics[TOPIC].partitions[2].leader
    recorded: list[tuple[int, tuple[str, int], int]] = []
    for key, part in c.brokers[leader].partitions.items():
        tracker = part.tracker
        if key[0] != TOPIC or tracker is None:
            continue

        def spy(replica: int, offset: int, leo: int, now: int, _orig: Any = tracker.record_fetch,
                _key: tuple[str, int] = key) -> None:
            recorded.append((replica, _key, offset))
            _orig(replica, offset, leo, now)

        tracker.record_fetch = spy  # type: ignore[method-assign,assignment]
    _leader, answer = produce(c, 2, b"x")
    assert answer.error_code == ErrorCode.none
    c.advance(50)
    per_fetch = [(replica, offset) for replica, key, offset in recorded if key == (TOPIC, 2)]
    # the fetches waiting at offset 0 were recorded as they arrived (before the spy): answering
    # them records nothing; the next ones, at the new log end 1, are recorded as they arrive
    assert sorted(per_fetch) == [(r, 1) for r in sorted({r for r, _o in per_fetch})], per_fetch
    assert len(per_fetch) == 2, "both followers fetched past the record"


def test_a_waiting_follower_fetch_reads_no_partition_at_its_log_end(monkeypatch: Any) -> None:
    """DelayedFetch.tryComplete counts bytes only where the log end is past the fetch offset: a
    follower's waiting fetch, checked again on every change of any partition it follows, reads
    none of the idle ones."""
    c, _fetches = setup()
    leader = c.brokers[1].image.topics[TOPIC].partitions[3].leader
    checking: list[bool] = []  # True: in try_complete, False: in the answer
    reads: list[tuple[str, int]] = []
    original = DelayedFetch.try_complete

    def try_complete(self: DelayedFetch, now_ms: int) -> bool:
        checking.append(True)
        try:
            return original(self, now_ms)
        finally:
            checking.pop()

    def on_complete(self: DelayedFetch, now_ms: int) -> None:
        checking.append(False)  # the answer reads what it sends
        try:
            answering(self, now_ms)
        finally:
            checking.pop()

    answering = DelayedFetch.on_complete
    monkeypatch.setattr(DelayedFetch, "try_complete", try_complete)
    monkeypatch.setattr(DelayedFetch, "on_complete", on_complete)
    for key, part in c.brokers[leader].partitions.items():
        if key[0] != TOPIC:
            continue

        def spy(*args: Any, _orig: Any = part.log.read, _key: tuple[str, int] = key, **kwargs: Any) -> Any:
            if checking and checking[-1]:
                reads.append(_key)
            return _orig(*args, **kwargs)

        monkeypatch.setattr(part.log, "read", spy)
    produce(c, 3, b"y")  # wakes the fetches waiting on partition 3; the others idle
    c.advance(1_000)
    assert not [key for key in reads if key != (TOPIC, 3)], reads
