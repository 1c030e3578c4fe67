"""Each detector on minimal hand-made histories: the anomaly present, and absent.

Histories are written as a few lines with a small builder, as Jepsen's kafka_test does, so each
test reads as the scenario it describes.
"""

from __future__ import annotations

import io
from typing import Any

from chaos.checkers import check
from chaos.history import History, Op, dump, parse_lines

T = "q"


class Builder:
    def __init__(self, **meta: Any) -> None:
        self.history = History(meta={"idempotence": True, "final_drain": True, **meta})

    def _op(self, type_: str, process: int | str, f: str, **fields: Any) -> None:
        n = len(self.history.ops)
        self.history.ops.append(Op(n, type_, process, f, 1000.0 + n, n / 10, **fields))

    def send(
        self, process: int, value: str, partition: int, offset: int | None, outcome: str = "ok"
    ) -> Builder:
        self._op("invoke", process, "send", value=value, topic=T, partition=partition)
        self._op(
            outcome,
            process,
            "send",
            value=value,
            topic=T,
            partition=partition,
            offset=offset if outcome == "ok" else None,
        )
        return self

    def poll(self, process: int, *records: tuple[int, int, str]) -> Builder:
        self._op("invoke", process, "poll")
        self._op("ok", process, "poll", records=[(T, p, o, v) for p, o, v in records])
        return self

    def assign(self, process: int, partitions: list[int]) -> Builder:
        self._op("invoke", process, "assign", value=partitions)
        self._op("ok", process, "assign", value=partitions)
        return self

    def txn(self, process: int, outcome: str, written: list[tuple[int, int, str]]) -> Builder:
        self._op("invoke", process, "txn")
        self._op(outcome, process, "txn", value={"read": []}, records=[(T, p, o, v) for p, o, v in written])
        return self

    def nemesis(self, f: str, fault: str = "kill", id_: int = 0) -> Builder:
        self._op("info", "nemesis", f, value={"fault": fault, "id": id_})
        return self


def names(builder: Builder) -> dict[str, int]:
    return {name: count for name, count in check(builder.history).counts().items() if count}


def clean() -> Builder:
    return (
        Builder()
        .send(0, "a", 0, 0)
        .send(0, "b", 0, 1)
        .send(0, "c", 1, 0)
        .poll(1, (0, 0, "a"), (0, 1, "b"))
        .poll(1, (1, 0, "c"))
    )


def test_clean_history_is_valid() -> None:
    result = check(clean().history)
    assert result.valid is True and result.bad == []
    assert result.verdict_line() == "VERDICT: valid"


def test_lost_write_present_and_absent() -> None:
    lost = Builder().send(0, "a", 0, 0).send(0, "b", 0, 1).poll(1, (0, 1, "b"))
    result = check(lost.history)
    assert result.valid is False
    [anomaly] = result.anomalies["lost_write"]
    assert anomaly.detail["value"] == "a" and anomaly.ops == [0, 1]
    assert "lost=1" in result.verdict_line()
    assert "lost_write" not in names(clean())


def test_unseen_only_when_nothing_later_was_read() -> None:
    history = Builder().send(0, "a", 0, 0).send(0, "b", 0, 1).poll(1, (0, 0, "a"))
    assert names(history) == {"unseen": 1, "validate_delivery": 1}
    assert check(history.history).valid is False
    relaxed = Builder(final_drain=False).send(0, "a", 0, 0).send(0, "b", 0, 1).poll(1, (0, 0, "a"))
    assert check(relaxed.history).valid is True, "without a final drain an unread tail proves nothing"


def test_duplicate_present_and_absent() -> None:
    dup = Builder().send(0, "a", 0, 0).poll(1, (0, 0, "a"), (0, 1, "a"))
    assert names(dup) == {"duplicate": 1, "validate_delivery": 1}
    assert check(dup.history).anomalies["duplicate"][0].detail["positions"] == [(T, 0, 0), (T, 0, 1)]
    unsafe = Builder(idempotence=False).send(0, "a", 0, 0).poll(1, (0, 0, "a"), (0, 1, "a"))
    result = check(unsafe.history)
    assert result.anomalies["duplicate"] and result.valid is True, "reported, allowed without idempotence"
    assert "duplicate" not in names(clean())


def test_inconsistent_offsets_present_and_absent() -> None:
    history = Builder().send(0, "a", 0, 0).send(0, "b", 0, 1).poll(1, (0, 0, "a"), (0, 1, "x"))
    result = check(history.history)
    [anomaly] = result.anomalies["inconsistent_offsets"]
    assert anomaly.detail["offset"] == 1 and anomaly.detail["values"] == ["'b'", "'x'"]
    assert result.valid is False
    assert "inconsistent_offsets" not in names(clean())


def test_with_acks_1_a_lost_acknowledgement_does_not_count_but_readers_disagreeing_does() -> None:
    """acks=1: 'a' acknowledged at 1 and lost on failover, 'x' written there since: allowed; two
    readers seeing different values at one offset: never allowed."""
    lost = Builder(acks="1", idempotence=False).send(0, "a", 0, 0).send(0, "b", 0, 1).send(0, "x", 0, 1)
    lost.poll(1, (0, 0, "a"), (0, 1, "x"))
    result = check(lost.history)
    assert result.valid is True and result.anomalies["inconsistent_offsets"] == [], result.bad
    assert result.anomalies["lost_write"] or result.anomalies["validate_delivery"], "still reported"
    split = Builder(acks="1", idempotence=False).send(0, "a", 0, 0).send(0, "b", 0, 1)
    split.poll(1, (0, 1, "b")).poll(2, (0, 1, "x"))
    assert "inconsistent_offsets" in check(split.history).bad
    assert "inconsistent_offsets" in check(Builder().send(0, "b", 0, 1).poll(1, (0, 1, "x")).history).bad


def test_poll_skip_present_and_absent() -> None:
    base = Builder().send(0, "a", 0, 0).send(0, "b", 0, 1).send(0, "c", 0, 2)
    skipped = base.poll(1, (0, 0, "a")).poll(1, (0, 2, "c")).poll(2, (0, 0, "a"), (0, 1, "b"), (0, 2, "c"))
    [anomaly] = check(skipped.history).anomalies["poll_skip"]
    assert anomaly.detail["skipped"] == [1] and anomaly.detail["from"] == 0 and anomaly.detail["to"] == 2
    # an offset gap nothing is known to fill (a transaction marker) is no skip
    gap = Builder().send(0, "a", 0, 0).send(0, "c", 0, 2).poll(1, (0, 0, "a")).poll(1, (0, 2, "c"))
    assert "poll_skip" not in names(gap)
    # after a reassignment a consumer may start anywhere
    moved = (
        Builder()
        .send(0, "a", 0, 0)
        .send(0, "b", 0, 1)
        .send(0, "c", 0, 2)
        .poll(1, (0, 0, "a"))
        .assign(1, [0])
        .poll(1, (0, 2, "c"))
        .poll(2, (0, 1, "b"))
    )
    assert "poll_skip" not in names(moved)


def test_nonmonotonic_poll_present_and_absent() -> None:
    history = (
        Builder().send(0, "a", 0, 0).send(0, "b", 0, 1).poll(1, (0, 0, "a"), (0, 1, "b")).poll(1, (0, 0, "a"))
    )
    [anomaly] = check(history.history).anomalies["nonmonotonic_poll"]
    assert (anomaly.detail["from"], anomaly.detail["to"]) == (1, 0)
    rewound = (
        Builder()
        .send(0, "a", 0, 0)
        .send(0, "b", 0, 1)
        .poll(1, (0, 0, "a"), (0, 1, "b"))
        .assign(1, [0])
        .poll(1, (0, 0, "a"))
    )
    assert "nonmonotonic_poll" not in names(rewound), "re-reading after a rebalance is allowed"


def test_nonmonotonic_send_present_and_absent() -> None:
    history = Builder().send(0, "a", 0, 5).send(0, "b", 0, 4).poll(1, (0, 4, "b"), (0, 5, "a"))
    [anomaly] = check(history.history).anomalies["nonmonotonic_send"]
    assert anomaly.detail["offsets"] == [5, 4]
    two_producers = Builder().send(0, "a", 0, 5).send(1, "b", 0, 4).poll(2, (0, 4, "b"), (0, 5, "a"))
    assert "nonmonotonic_send" not in names(two_producers)


def test_aborted_read_present_and_absent() -> None:
    failed = (
        Builder().send(0, "a", 0, None, outcome="fail").send(0, "b", 0, 1).poll(1, (0, 0, "a"), (0, 1, "b"))
    )
    [anomaly] = check(failed.history).anomalies["aborted_read"]
    assert anomaly.detail["value"] == "a"
    aborted_txn = (
        Builder()
        .txn(0, "fail", [(0, 0, "t1")])
        .txn(0, "ok", [(0, 2, "t2")])
        .poll(1, (0, 0, "t1"), (0, 2, "t2"))
    )
    assert names(aborted_txn) == {"aborted_read": 1}
    committed = Builder().txn(0, "fail", [(0, 0, "t1")]).txn(0, "ok", [(0, 2, "t2")]).poll(1, (0, 2, "t2"))
    assert names(committed) == {}
    indeterminate = Builder().send(0, "a", 0, None, outcome="info").poll(1, (0, 0, "a"))
    assert names(indeterminate) == {}, "an info send may have happened: reading it is fine"


def test_validate_delivery_counts_missing_and_idempotent_duplicates() -> None:
    missing = Builder().send(0, "a", 0, 0).send(0, "b", 1, 0).poll(1, (0, 0, "a"))
    [anomaly] = check(missing.history).anomalies["validate_delivery"]
    assert anomaly.detail["missing"] == 1
    assert "validate_delivery" not in names(clean())


def test_unknown_when_nothing_was_read() -> None:
    result = check(Builder().send(0, "a", 0, 0).history)
    assert result.valid is False  # unseen with a final drain
    result = check(Builder(final_drain=False).send(0, "a", 0, 0).history)
    assert result.valid == "unknown" and result.verdict_line().startswith("VERDICT: unknown")


def test_unknown_when_no_producer_ever_sent() -> None:
    """A campaign whose producers never started tested nothing; it must not read as a pass."""
    idle = Builder(workload="queue").assign(100, [0, 1, 2]).nemesis("start").nemesis("stop")
    assert check(idle.history).valid == "unknown"
    assert check(clean().history).valid is True


def test_availability_and_recovery_after_a_fault() -> None:
    b = Builder().send(0, "a", 0, 0).nemesis("start").send(0, "b", 0, None, outcome="info")
    b.nemesis("stop").send(0, "c", 0, 1).poll(1, (0, 0, "a"), (0, 1, "c"))
    result = check(b.history)
    [recovery] = result.availability.recovery_s
    stop_mono = b.history.ops[5].mono
    ok_c = b.history.ops[7].mono
    assert recovery["fault"] == "kill" and recovery["recovery_s"] == round(ok_c - stop_mono, 3)
    assert sum(result.availability.ok_per_s) == 2 and sum(result.availability.errors_per_s) == 1


def test_jsonl_round_trip_keeps_the_verdict() -> None:
    history = Builder().send(0, "a", 0, 0).send(0, "b", 0, 1).poll(1, (0, 1, "b")).history
    text = io.StringIO()
    dump(history, text)
    again = parse_lines(text.getvalue().splitlines())
    assert again.meta == history.meta and len(again) == len(history)
    assert check(again).counts() == check(history).counts()


def test_lost_write_by_the_final_read_even_if_read_earlier() -> None:
    b = Builder(final_reader=999, final_read_complete=True)
    b.send(0, "a", 0, 0).send(0, "b", 0, 1).poll(1, (0, 0, "a"), (0, 1, "b"))
    b.send(0, "c", 0, 0).poll(999, (0, 0, "c"))  # the log restarted: only "c" remains
    result = check(b.history)
    assert sorted(x.detail["value"] for x in result.anomalies["lost_write"]) == ["a", "b"]
    assert result.anomalies["inconsistent_offsets"], "offset 0 held 'a' and then 'c'"
    intact = Builder(final_reader=999, final_read_complete=True).send(0, "a", 0, 0).poll(999, (0, 0, "a"))
    assert names(intact) == {}
    incomplete = Builder(final_reader=999, final_read_complete=False).send(0, "a", 0, 0).poll(1, (0, 0, "a"))
    assert names(incomplete) == {}, "an unfinished final read proves nothing"


def test_sends_in_flight_together_pair_by_value() -> None:
    b = Builder()
    for value in ("a", "b"):
        b._op("invoke", 0, "send", value=value, topic=T, partition=0)
    b._op("ok", 0, "send", value="b", topic=T, partition=0, offset=1)
    b._op("ok", 0, "send", value="a", topic=T, partition=0, offset=0)
    b.poll(1, (0, 0, "a"), (0, 1, "b"))
    pairs = {(i.value, d.index if d else None) for i, d in b.history.pairs()}
    assert pairs == {("a", 3), ("b", 2), (None, 5)}
    assert names(b) == {}
