"""The probe workloads' checkers (:mod:`chaos.checkers.probes`) on hand-made histories: each anomaly
present is found (and makes the history invalid through :func:`chaos.checkers.check`), and the
same scenario without it is clean. Times: op ``n`` happens at ``n / 10`` monotonic seconds."""

from __future__ import annotations

from typing import Any

from chaos.checkers import check
from chaos.checkers.analysis import analyse
from chaos.checkers.probes import early_reads, fenced_writes, rewinds
from chaos.history import History, Op

T = "p"


class H:
    def __init__(self) -> None:
        self.history = History(meta={"idempotence": True, "final_drain": False, "workload": "probe"})

    @property
    def now(self) -> float:
        return len(self.history.ops) / 10

    def op(self, type_: str, process: int, f: str, **fields: Any) -> H:
        n = len(self.history.ops)
        self.history.ops.append(Op(n, type_, process, f, 1000.0 + n, n / 10, **fields))
        return self

    def txn_invoke(self, process: int) -> H:
        return self.op("invoke", process, "txn")

    def txn_done(
        self, process: int, outcome: str, written: list[tuple[int, int, str]],
        commit_requested: float | None, tid: str | None = None,
    ) -> H:  # fmt: skip
        value: dict[str, Any] = {"read": [], "commit_requested": commit_requested}
        if tid is not None:
            value["transactional_id"] = tid
        return self.op(outcome, process, "txn", value=value, records=[(T, p, o, v) for p, o, v in written])

    def poll(self, process: int, *records: tuple[int, int, str]) -> H:
        self.op("invoke", process, "poll")
        return self.op("ok", process, "poll", records=[(T, p, o, v) for p, o, v in records])

    def init(self, process: int, tid: str) -> H:
        self.op("invoke", process, "init", value={"transactional_id": tid})
        return self.op("ok", process, "init", value={"transactional_id": tid})

    def seek(self, process: int, positions: dict[int, int]) -> H:
        self.op("invoke", process, "assign", value={"seek": positions})
        return self.op("ok", process, "assign", value={"seek": positions})


# -- early read -------------------------------------------------------------------------------------


def test_a_read_before_the_commit_was_requested_is_an_early_read() -> None:
    h = H().txn_invoke(1).poll(2, (0, 0, "a"))  # the poll returned at 0.2 s
    h.txn_done(1, "ok", [(0, 0, "a")], commit_requested=0.25)
    found = early_reads(h.history)
    assert [a.detail["value"] for a in found] == ["a"] and found[0].ops == [2, 3]
    result = check(h.history)
    assert result.valid is False and "early_read" in result.bad


def test_a_read_after_the_commit_was_requested_is_not() -> None:
    h = H().txn_invoke(1)
    h.txn_done(1, "ok", [(0, 0, "a")], commit_requested=h.now)
    h.poll(2, (0, 0, "a"))
    assert early_reads(h.history) == []
    assert "early_read" not in check(h.history).bad


# -- producer fence ---------------------------------------------------------------------------------


def test_a_commit_acknowledged_after_the_id_was_taken_over_is_a_fenced_write() -> None:
    h = H().init(1, "x").txn_invoke(1).init(2, "x")  # process 2's init returned at 0.5 s
    h.txn_done(1, "ok", [(0, 0, "a")], commit_requested=h.now, tid="x")
    found = fenced_writes(h.history)
    assert len(found) == 1 and "acknowledged" in found[0].description and found[0].ops == [4, 5]
    assert "fenced_write" in check(h.history).bad


def test_a_fenced_transaction_read_later_is_a_fenced_write_even_if_the_client_saw_an_error() -> None:
    h = H().init(1, "x").txn_invoke(1).init(2, "x")
    h.txn_done(1, "info", [(0, 0, "a")], commit_requested=h.now, tid="x").poll(3, (0, 0, "a"))
    found = fenced_writes(h.history)
    assert len(found) == 1 and "was read (1 polls)" in found[0].description


def test_fencing_done_right_and_a_commit_before_the_takeover_are_clean() -> None:
    h = H().init(1, "x").txn_invoke(1)
    h.txn_done(1, "ok", [(0, 0, "a")], commit_requested=h.now, tid="x")  # before the takeover
    h.init(2, "x").txn_invoke(1)
    h.txn_done(1, "info", [(0, 1, "b")], commit_requested=h.now, tid="x")  # fenced, never read
    h.txn_invoke(2).txn_done(2, "ok", [(0, 3, "c")], commit_requested=h.now, tid="x")
    h.poll(3, (0, 0, "a"), (0, 3, "c"))
    assert fenced_writes(h.history) == []
    assert "fenced_write" not in check(h.history).bad


# -- abort rewind -----------------------------------------------------------------------------------


def _log() -> H:
    """p-0: 0..2 committed (marker at 3), 4..5 aborted (marker at 6), 7 committed."""
    h = H().txn_invoke(1).txn_done(1, "ok", [(0, 0, "a"), (0, 1, "b"), (0, 2, "c")], 0.1)
    h.txn_invoke(1).txn_done(1, "fail", [(0, 4, "d"), (0, 5, "e")], None)
    return h.txn_invoke(1).txn_done(1, "ok", [(0, 7, "f")], 0.5)


def test_a_rewind_that_lands_past_a_committed_record_is_a_rewind_skip() -> None:
    h = _log().poll(5, (0, 0, "a"), (0, 1, "b")).seek(5, {0: 1}).poll(5, (0, 2, "c"))
    skips, behind = rewinds(h.history, analyse(h.history))
    assert [a.detail["skipped"] for a in skips] == [[1]] and behind == []
    assert "rewind_skip" in check(h.history).bad


def test_a_rewind_that_lands_before_its_position_is_a_rewind_behind() -> None:
    h = _log().poll(5, (0, 0, "a"), (0, 1, "b"), (0, 2, "c")).seek(5, {0: 2}).poll(5, (0, 1, "b"))
    skips, behind = rewinds(h.history, analyse(h.history))
    assert skips == [] and [(a.detail["seek"], a.detail["read"]) for a in behind] == [(2, 1)]
    assert "rewind_behind" in check(h.history).bad


def test_a_rewind_past_aborted_records_and_markers_is_clean() -> None:
    h = _log().poll(5, (0, 0, "a"), (0, 1, "b"), (0, 2, "c")).seek(5, {0: 3}).poll(5, (0, 7, "f"))
    h.seek(5, {0: 1}).poll(5, (0, 1, "b"), (0, 2, "c"))
    assert rewinds(h.history, analyse(h.history)) == ([], [])
    result = check(h.history)
    order = {"rewind_skip", "rewind_behind", "poll_skip", "nonmonotonic_poll"}
    assert not order & set(result.bad), result.bad


def test_reading_the_aborted_records_after_a_rewind_is_an_aborted_read() -> None:
    h = _log().seek(5, {0: 3}).poll(5, (0, 4, "d"))
    assert "aborted_read" in check(h.history).bad
