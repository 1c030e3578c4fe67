"""The share-group checker (:mod:`chaos.checkers.share`) on hand-made histories: each anomaly class
present is found, with the ops that show it, and makes the history invalid through
:func:`chaos.checkers.check`; the same scenario without it (or with the excuse Kafka allows) is
clean. Times: op ``n`` happens at ``n / 10`` monotonic seconds."""

from __future__ import annotations

from typing import Any

from chaos.checkers import check
from chaos.checkers.share import ACCEPT, REJECT, RELEASE, UNSEEN_SERVE_S, check_share
from chaos.history import History, Op

T = "t"
LIMIT = 3


class H:
    def __init__(self, lock_ms: int = 30_000) -> None:
        self.history = History(
            meta={
                "workload": "share",
                "idempotence": True,
                "acks": "all",
                "share": {"delivery_limit": LIMIT, "lock_ms": lock_ms},
            }
        )

    def op(self, type_: str, process: int | str, f: str, **fields: Any) -> H:
        n = len(self.history.ops)
        self.history.ops.append(Op(n, type_, process, f, 1000.0 + n, n / 10, **fields))
        return self

    def send(self, value: str, outcome: str = "ok", offset: int = 0) -> H:
        self.op("invoke", 0, "send", value=value, topic=T, partition=0)
        return self.op(outcome, 0, "send", value=value, topic=T, partition=0, offset=offset)

    def fetch(self, process: int, *got: tuple[int, str, int]) -> H:
        """``got``: (offset, value, delivery count) the fetch acquired."""
        return self.fetch_open(process).fetch_done(process, *got)

    def fetch_open(self, process: int) -> H:
        return self.op("invoke", process, "share-fetch", value={"member": f"m{process}"})

    def fetch_done(self, process: int, *got: tuple[int, str, int]) -> H:
        return self.op(
            "ok",
            process,
            "share-fetch",
            records=[(T, 0, o, v) for o, v, _ in got],
            value={"member": f"m{process}", "counts": [c for _, _, c in got]},
        )

    def ack(self, process: int, kind: int, offset: int, value: str, outcome: str = "ok") -> H:
        acks = [[offset, kind, value]]
        self.op("invoke", process, "share-ack", topic=T, partition=0, value={"acks": acks})
        return self.op(outcome, process, "share-ack", topic=T, partition=0, value={"acks": acks})

    def wait(self, seconds: float) -> H:
        for _ in range(round(seconds * 10)):
            self.op("info", "clock", "tick")
        return self

    def end(self) -> H:
        self.op("invoke", "share", "share-end")
        return self.op("ok", "share", "share-end", value={"drained": True})

    def fault(self, fault: str) -> H:
        return self.op("info", "nemesis", "start", value={"fault": fault, "id": 0})

    def heal(self, fault: str) -> H:
        return self.op("info", "nemesis", "stop", value={"fault": fault, "id": 0})

    def found(self, name: str) -> list[Any]:
        anomalies, _ = check_share(self.history)
        return anomalies[name]


def _invalid_with(h: H, name: str) -> None:
    result = check(h.history)
    assert result.valid is False, result.verdict_line()
    assert name in result.bad


def test_a_clean_delivery_and_accept_has_no_anomaly() -> None:
    h = H().send("a").fetch(1, (0, "a", 1)).ack(1, ACCEPT, 0, "a").end()
    anomalies, stats = check_share(h.history)
    assert {n: len(v) for n, v in anomalies.items() if v} == {}
    assert stats["share_deliveries"] == 1
    assert check(h.history).valid is True


# -- share_lost ---------------------------------------------------------------------------------------


def test_an_acknowledged_record_never_accepted_is_lost() -> None:
    h = H().send("a").send("b", offset=1).fetch(1, (0, "a", 1)).ack(1, ACCEPT, 0, "a").end()
    lost = h.found("share_lost")
    assert [x.detail["value"] for x in lost] == ["b"]
    _invalid_with(h, "share_lost")


def test_a_failed_accept_does_not_finish_a_record() -> None:
    h = H().send("a").fetch(1, (0, "a", 1)).ack(1, ACCEPT, 0, "a", outcome="fail").end()
    assert [x.detail["value"] for x in h.found("share_lost")] == ["a"]


def test_lost_is_excused_by_a_maybe_applied_accept_a_reject_or_the_limit() -> None:
    h = H().send("a").send("b", offset=1).send("c", offset=2)
    h.fetch(1, (0, "a", 1), (1, "b", 1), (2, "c", LIMIT))
    h.ack(1, ACCEPT, 0, "a", outcome="info").ack(1, REJECT, 1, "b").end()  # c: archived at the limit
    assert h.found("share_lost") == []


def test_lost_needs_the_drain_and_ignores_sends_after_it() -> None:
    h = H().send("a")
    assert h.found("share_lost") == []  # no share-end: the workload never drained
    h.end().send("after-the-end")
    assert [x.detail["value"] for x in h.found("share_lost")] == ["a"]


# -- redelivered after ACCEPT / REJECT ------------------------------------------------------------------


def test_a_record_delivered_after_its_accept_was_answered_is_redelivered_accepted() -> None:
    h = H().send("a").fetch(1, (0, "a", 1)).ack(1, ACCEPT, 0, "a").fetch(2, (0, "a", 1)).end()
    found = h.found("redelivered_accepted")
    assert len(found) == 1 and found[0].detail["value"] == "a"
    assert found[0].ops == [5, 7]  # the accept's answer and the later delivery
    _invalid_with(h, "redelivered_accepted")


def test_redelivery_after_a_failed_or_timed_out_accept_is_allowed() -> None:
    for outcome in ("fail", "info"):
        h = H().send("a").fetch(1, (0, "a", 1)).ack(1, ACCEPT, 0, "a", outcome=outcome)
        h.fetch(2, (0, "a", 2)).ack(2, ACCEPT, 0, "a").end()
        assert h.found("redelivered_accepted") == [], outcome
        assert check(h.history).valid is True


def test_a_fetch_sent_before_the_accept_answer_is_not_a_redelivery() -> None:
    h = H().send("a").fetch(1, (0, "a", 1)).fetch_open(2)
    h.ack(1, ACCEPT, 0, "a").fetch_done(2, (0, "a", 2)).end()  # acquired before the accept landed
    assert h.found("redelivered_accepted") == []


def test_a_record_delivered_after_its_reject_is_redelivered_rejected() -> None:
    h = H().send("a").fetch(1, (0, "a", 1)).ack(1, REJECT, 0, "a").fetch(1, (0, "a", 2)).end()
    assert len(h.found("redelivered_rejected")) == 1
    _invalid_with(h, "redelivered_rejected")
    clean = H().send("a").fetch(1, (0, "a", 1)).ack(1, REJECT, 0, "a", outcome="fail").fetch(1, (0, "a", 2))
    assert clean.found("redelivered_rejected") == []


# -- concurrent_acquire -----------------------------------------------------------------------------------


def test_two_holders_shown_by_the_first_holders_successful_accept() -> None:
    h = H(lock_ms=1000).send("a").fetch(1, (0, "a", 1))
    h.wait(1.0)  # beyond the lock: evidence (b) cannot apply
    h.fetch(2, (0, "a", 2)).ack(1, ACCEPT, 0, "a").ack(2, ACCEPT, 0, "a").end()
    found = h.found("concurrent_acquire")
    assert len(found) == 1 and found[0].detail["first"] == 1 and found[0].detail["second"] == 2
    _invalid_with(h, "concurrent_acquire")


def test_the_first_holders_accept_failing_means_its_lock_had_ended() -> None:
    h = H(lock_ms=1000).send("a").fetch(1, (0, "a", 1)).wait(1.0)
    h.fetch(2, (0, "a", 2)).ack(1, ACCEPT, 0, "a", outcome="fail").ack(2, ACCEPT, 0, "a").end()
    assert h.found("concurrent_acquire") == []
    assert check(h.history).valid is True


def test_two_holders_shown_by_a_lock_that_cannot_have_run_out() -> None:
    h = H(lock_ms=30_000).send("a").fetch(1, (0, "a", 1)).fetch(2, (0, "a", 2)).end()
    assert len(h.found("concurrent_acquire")) == 1


def test_lock_evidence_is_void_around_a_fault_or_after_the_holder_acked() -> None:
    faulted = H(lock_ms=30_000).send("a").fetch(1, (0, "a", 1)).fault("kill").fetch(2, (0, "a", 2))
    assert faulted.found("concurrent_acquire") == []
    released = H(lock_ms=30_000).send("a").fetch(1, (0, "a", 1)).ack(1, RELEASE, 0, "a").fetch(2, (0, "a", 2))
    assert released.found("concurrent_acquire") == []
    reopened = H(lock_ms=30_000).send("a").fetch(1, (0, "a", 1))
    reopened.op("invoke", 1, "share-open").op("ok", 1, "share-open").fetch(2, (0, "a", 2))
    assert reopened.found("concurrent_acquire") == []


# -- delivery limit --------------------------------------------------------------------------------------


def test_a_count_above_the_limit_is_over_limit() -> None:
    h = H().send("a").fetch(1, (0, "a", LIMIT + 1)).ack(1, ACCEPT, 0, "a").end()
    found = h.found("delivery_over_limit")
    assert len(found) == 1 and "above the limit" in found[0].description
    _invalid_with(h, "delivery_over_limit")


def test_a_delivery_after_a_release_at_the_limit_is_over_limit() -> None:
    h = H().send("a").fetch(1, (0, "a", LIMIT)).ack(1, RELEASE, 0, "a").fetch(2, (0, "a", LIMIT))
    found = h.found("delivery_over_limit")
    assert len(found) == 1 and "after its release at the limit" in found[0].description
    below = H().send("a").fetch(1, (0, "a", LIMIT - 1)).ack(1, RELEASE, 0, "a").fetch(2, (0, "a", LIMIT))
    assert below.found("delivery_over_limit") == []


# -- delivery_count_regressed ---------------------------------------------------------------------------


def test_a_count_not_above_a_released_delivery_regressed() -> None:
    h = H().send("a").fetch(1, (0, "a", 2)).ack(1, RELEASE, 0, "a").fetch(2, (0, "a", 1))
    h.ack(2, ACCEPT, 0, "a").end()
    found = h.found("delivery_count_regressed")
    assert len(found) == 1 and found[0].detail == {"value": "a", "released_count": 2, "count": 1}
    _invalid_with(h, "delivery_count_regressed")


def test_an_unreleased_delivery_lost_in_a_crash_may_repeat_its_count() -> None:
    """KIP-932: the acquired state is not persisted, so a leader crash may hand the record out again
    with the same count; only a release answered without error fixes the count."""
    h = H().send("a").fetch(1, (0, "a", 1)).fault("kill").heal("kill").fetch(2, (0, "a", 1))
    h.ack(2, ACCEPT, 0, "a").end()
    assert h.found("delivery_count_regressed") == []
    assert h.found("concurrent_acquire") == []
    failed = H().send("a").fetch(1, (0, "a", 1)).ack(1, RELEASE, 0, "a", outcome="info").fetch(2, (0, "a", 1))
    assert failed.found("delivery_count_regressed") == []


# -- unproduced_delivery -------------------------------------------------------------------------------


def test_a_value_never_sent_or_certainly_not_written_is_unproduced() -> None:
    h = H().send("a").send("b", outcome="fail").fetch(1, (0, "a", 1), (1, "b", 1), (2, "zzz", 1))
    found = sorted(x.detail["value"] for x in h.found("unproduced_delivery"))
    assert found == ["b", "zzz"]
    _invalid_with(h, "unproduced_delivery")
    maybe = H().send("a", outcome="info").fetch(1, (0, "a", 1))
    assert maybe.found("unproduced_delivery") == []


def test_a_share_history_with_no_delivery_is_unknown() -> None:
    h = H().send("a")
    h.history.meta["final_drain"] = True
    h.op("invoke", 999, "poll").op("ok", 999, "poll", records=[(T, 0, 0, "a")])
    assert check(h.history).valid == "unknown"


def test_lock_evidence_is_void_within_a_session_timeout_after_a_fault() -> None:
    """A member whose heartbeats failed during a fault may be removed from the group up to a session
    timeout later, which releases what it holds."""
    for gap_s, expected in ((5.0, 0), (12.0, 1)):
        h = H(lock_ms=30_000)
        h.history.meta["share"]["session_timeout_ms"] = 10_000
        h.send("a").fault("partition-coordinator").heal("partition-coordinator").wait(gap_s)
        h.fetch(1, (0, "a", 1)).fetch(2, (0, "a", 2))
        assert len(h.found("concurrent_acquire")) == expected, gap_s


def test_fetches_without_an_answer_may_have_taken_a_record_to_the_limit() -> None:
    """A record released at count LIMIT - 1, then a fetch of its partition that got no answer: it may
    have been acquired (count LIMIT) and archived when that lock ran out; not lost."""
    h = H().send("a").fetch(1, (0, "a", LIMIT - 1)).ack(1, RELEASE, 0, "a")
    h.fetch_open(2).op("info", 2, "share-fetch", value={"partitions": [0]}).end()
    assert h.found("share_lost") == []
    other = H().send("a").fetch(1, (0, "a", LIMIT - 1)).ack(1, RELEASE, 0, "a")
    other.fetch_open(2).op("info", 2, "share-fetch", value={"partitions": [1]}).end()  # another partition
    assert len(other.found("share_lost")) == 1


def test_a_count_rising_by_two_with_no_unanswered_fetch_is_skipped() -> None:
    h = H().send("a").fetch(1, (0, "a", 1)).ack(1, RELEASE, 0, "a").fetch(2, (0, "a", 3))
    h.ack(2, ACCEPT, 0, "a").end()
    found = h.found("delivery_count_skipped")
    assert len(found) == 1 and found[0].detail["counts"] == [1, 3]
    _invalid_with(h, "delivery_count_skipped")
    excused = H().send("a").fetch(1, (0, "a", 1)).ack(1, RELEASE, 0, "a")
    excused.fetch_open(3).op("info", 3, "share-fetch", value={"partitions": [0]})
    excused.fetch(2, (0, "a", 3)).ack(2, ACCEPT, 0, "a").end()
    assert excused.found("delivery_count_skipped") == []


def test_a_fetch_given_up_on_may_be_served_later_within_the_serve_bound() -> None:
    """A fetch the client gave up on may still be served while it waits in the broker (a share-partition
    loading its state): it explains a skipped count within UNSEEN_SERVE_S of its sending, not after."""

    def run(gap_s: float) -> list[Any]:
        h = H().send("a").fetch_open(3).op("info", 3, "share-fetch", value={"partitions": [0]}).wait(gap_s)
        h.fetch(1, (0, "a", 1)).ack(1, RELEASE, 0, "a").fetch(2, (0, "a", 3)).ack(2, ACCEPT, 0, "a").end()
        return h.found("delivery_count_skipped")

    assert run(5.0) == []
    assert len(run(UNSEEN_SERVE_S + 5.0)) == 1


def test_counts_are_compared_in_count_order_not_in_the_order_fetches_were_sent() -> None:
    """Member 2's fetch sent first may be served after member 1's: counts 1, 3 (sent first), 2."""
    h = H().send("a").fetch(1, (0, "a", 1)).ack(1, RELEASE, 0, "a").fetch_open(2)
    h.fetch(1, (0, "a", 2)).ack(1, RELEASE, 0, "a").fetch_done(2, (0, "a", 3)).ack(2, ACCEPT, 0, "a").end()
    assert h.found("delivery_count_skipped") == []
    assert check(h.history).valid is True
