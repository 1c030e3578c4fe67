"""The dependency-graph checker (chaos.checkers.graph) on hand-made txn-append histories.

Each anomaly class has a history that holds it (the test fails if the checker misses it) and,
where the class can be told apart by one change, the same history without it. Keys are
partitions of topic ``k``; ``s(p, o, v)`` is a send of ``v`` stored at ``k-p@o``, ``r(p, o, v)``
a read of it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from chaos.checkers import check
from chaos.history import History, Op, dump, parse_lines

T = "k"
Rec = tuple[int, int, str]


def s(p: int, o: int, v: str) -> Rec:
    return (p, o, v)


r = s


class Txns:
    def __init__(self, **meta: Any) -> None:
        self.history = History(meta={"workload": "txn-append", "idempotence": True, **meta})

    def _op(self, type_: str, process: int, f: str, **fields: Any) -> int:
        n = len(self.history.ops)
        self.history.ops.append(Op(n, type_, process, f, 1000.0 + n, n / 10, **fields))
        return n

    def txn(
        self,
        process: int,
        sends: Sequence[Rec] = (),
        reads: Sequence[Rec] = (),
        outcome: str = "ok",
    ) -> int:
        """A transaction; returns its id (the invoke's index)."""
        n = self._op("invoke", process, "txn")
        self._op(
            outcome,
            process,
            "txn",
            value={"read": [[T, p, o, v] for p, o, v in reads]},
            records=[(T, p, o, v) for p, o, v in sends],
        )
        return n


def found(t: Txns, name: str) -> list[Any]:
    return check(t.history).anomalies.get(name, [])


def counted(t: Txns) -> list[str]:
    return check(t.history).bad


def test_clean_transactions_have_no_graph_anomaly() -> None:
    t = Txns()
    t.txn(1, sends=[s(0, 0, "x")])
    t.txn(2, sends=[s(1, 0, "y")], reads=[r(0, 0, "x")])
    t.txn(3, reads=[r(1, 0, "y"), r(0, 0, "x")])
    result = check(t.history)
    assert result.valid is True, result.bad
    assert not any(result.anomalies.get(n) for n in ("G0", "G1a", "G1b", "G1c", "G-single", "G2"))
    assert result.stats["graph_transactions"] == 3 and result.stats["graph_edges"] >= 2


def test_g0_write_cycle() -> None:
    t = Txns()
    t1 = t.txn(1, sends=[s(0, 0, "a"), s(1, 1, "b")])
    t2 = t.txn(2, sends=[s(0, 1, "c"), s(1, 0, "d")])
    t.txn(3, reads=[r(0, 0, "a"), r(0, 1, "c"), r(1, 0, "d"), r(1, 1, "b")])
    [g0] = found(t, "G0")
    assert sorted(g0.ops) == [t1, t2] and g0.detail["edges"] == ["ww", "ww"]
    drawing = g0.detail["dot"]
    assert drawing.startswith('digraph "G0" {') and f"T{t1} -> T{t2}" in drawing
    assert all(line.startswith(("digraph", "  ", "}")) for line in drawing.splitlines())  # \n escaped
    assert "ww on k-0" in g0.description
    assert "G0" not in counted(t)  # interleaved open transactions: Kafka allows it
    t.history.meta["strict_cycles"] = True
    assert "G0" in counted(t)


def test_g0_absent_when_writes_are_in_one_order() -> None:
    t = Txns()
    t.txn(1, sends=[s(0, 0, "a"), s(1, 0, "b")])
    t.txn(2, sends=[s(0, 1, "c"), s(1, 1, "d")])
    t.txn(3, reads=[r(0, 0, "a"), r(0, 1, "c"), r(1, 0, "b"), r(1, 1, "d")])
    assert found(t, "G0") == []


def test_g1c_write_read_cycle() -> None:
    t = Txns()
    t2 = t.txn(2, sends=[s(0, 0, "b")], reads=[r(1, 0, "c")])  # reads what t1 wrote...
    t1 = t.txn(1, sends=[s(0, 1, "a"), s(1, 0, "c")])  # ...which wrote k-0 after it
    [g1c] = found(t, "G1c")
    assert sorted(g1c.ops) == sorted([t1, t2]) and sorted(g1c.detail["edges"]) == ["wr", "ww"]
    assert found(t, "G0") == []
    t.history.meta["strict_cycles"] = True
    assert "G1c" in counted(t)


def test_g_single_one_anti_dependency() -> None:
    t = Txns()
    t.txn(0, sends=[s(0, 0, "x")])
    t1 = t.txn(1, sends=[s(2, 1, "v")], reads=[r(0, 0, "x")])  # missed z, written by t2
    t2 = t.txn(2, sends=[s(0, 1, "z"), s(2, 0, "w")])  # wrote k-2 before t1
    t.txn(3, reads=[r(0, 0, "x"), r(0, 1, "z"), r(2, 0, "w"), r(2, 1, "v")])
    [single] = found(t, "G-single")
    assert sorted(single.ops) == sorted([t1, t2]) and sorted(single.detail["edges"]) == ["rw", "ww"]
    assert found(t, "G2") == []


def test_g2_two_anti_dependencies() -> None:
    t = Txns()
    t.txn(0, sends=[s(0, 0, "x"), s(1, 0, "y")])
    t1 = t.txn(1, sends=[s(1, 1, "b")], reads=[r(0, 0, "x")])
    t2 = t.txn(2, sends=[s(0, 1, "a")], reads=[r(1, 0, "y")])
    t.txn(3, reads=[r(0, 0, "x"), r(0, 1, "a"), r(1, 0, "y"), r(1, 1, "b")])
    [g2] = found(t, "G2")
    assert sorted(g2.ops) == sorted([t1, t2]) and g2.detail["edges"] == ["rw", "rw"]
    assert found(t, "G-single") == []


def test_g1a_aborted_read() -> None:
    t = Txns()
    t1 = t.txn(1, sends=[s(0, 0, "a")], outcome="fail")
    t2 = t.txn(2, reads=[r(0, 0, "a")])
    [g1a] = found(t, "G1a")
    assert sorted(g1a.ops) == [t1, t2] and "aborted" in g1a.description
    assert "G1a" in counted(t)
    ok = Txns()
    ok.txn(1, sends=[s(0, 0, "a")])
    ok.txn(2, reads=[r(0, 0, "a")])
    assert found(ok, "G1a") == []


def test_g1b_intermediate_read() -> None:
    t = Txns()
    t1 = t.txn(1, sends=[s(0, 0, "a"), s(0, 2, "b")])
    t.txn(3, sends=[s(0, 1, "m"), s(0, 3, "n")])
    t2 = t.txn(2, reads=[r(0, 0, "a"), r(0, 1, "m"), r(0, 3, "n")])  # across b@2, unread
    [g1b] = found(t, "G1b")
    assert sorted(g1b.ops) == [t1, t2] and "'b'@2" in g1b.description
    assert "G1b" in counted(t)


def test_g1b_absent_when_the_read_ends_between_the_writes() -> None:
    t = Txns()
    t.txn(1, sends=[s(0, 0, "a"), s(0, 2, "b")])
    t.txn(3, sends=[s(0, 1, "m")])
    t.txn(2, reads=[r(0, 0, "a"), r(0, 1, "m")])  # the next poll may return b
    assert found(t, "G1b") == []


def test_int_poll_skip_and_int_nonmonotonic_poll() -> None:
    t = Txns()
    t.txn(1, sends=[s(0, 0, "a"), s(0, 1, "b"), s(0, 2, "c")])
    skip = t.txn(2, reads=[r(0, 0, "a"), r(0, 2, "c")])
    back = t.txn(3, reads=[r(0, 1, "b"), r(0, 0, "a")])
    [s1] = found(t, "int_poll_skip")
    [b1] = found(t, "int_nonmonotonic_poll")
    assert s1.ops == [skip] and b1.ops == [back]
    assert {"int_poll_skip", "int_nonmonotonic_poll"} <= set(counted(t))
    ok = Txns()
    ok.txn(1, sends=[s(0, 0, "a"), s(0, 1, "b")])
    ok.txn(2, reads=[r(0, 0, "a"), r(0, 1, "b")])
    assert found(ok, "int_poll_skip") == [] and found(ok, "int_nonmonotonic_poll") == []


def test_int_send_skip_and_int_nonmonotonic_send() -> None:
    t = Txns()
    skip = t.txn(1, sends=[s(0, 0, "a"), s(0, 2, "b")])
    t.txn(2, sends=[s(0, 1, "c")])
    back = t.txn(3, sends=[s(1, 1, "d"), s(1, 0, "e")])
    t.txn(4, reads=[r(0, 0, "a"), r(0, 1, "c"), r(0, 2, "b"), r(1, 0, "e"), r(1, 1, "d")])
    [s1] = found(t, "int_send_skip")
    [b1] = found(t, "int_nonmonotonic_send")
    assert s1.ops == [skip] and b1.ops == [back]
    bad = counted(t)
    assert "int_nonmonotonic_send" in bad and "int_send_skip" not in bad  # interleaving: allowed


def test_precommitted_read() -> None:
    t = Txns()
    t1 = t.txn(1, sends=[s(0, 0, "a")], reads=[r(0, 0, "a")])
    [pre] = found(t, "precommitted_read")
    assert pre.ops == [t1] and "precommitted_read" in counted(t)
    ok = Txns()
    ok.txn(1, sends=[s(0, 0, "a")])
    ok.txn(2, reads=[r(0, 0, "a")])
    assert found(ok, "precommitted_read") == []


def test_lost_write_inferred_from_a_higher_polled_offset() -> None:
    t = Txns()
    t.txn(1, sends=[s(0, 0, "a"), s(0, 1, "b")])
    t.txn(2, reads=[r(0, 1, "b")])
    [lost] = found(t, "lost_write")
    assert "'a'" in lost.description and "lost_write" in counted(t)


def test_poll_skip_and_nonmonotonic_poll_across_transactions_of_one_consumer() -> None:
    t = Txns()
    t.txn(1, sends=[s(0, 0, "a"), s(0, 1, "b"), s(0, 2, "c")])
    t.txn(2, reads=[r(0, 0, "a")])
    t.txn(2, reads=[r(0, 2, "c")])
    t.txn(2, reads=[r(0, 1, "b")])
    assert len(found(t, "poll_skip")) == 1 and len(found(t, "nonmonotonic_poll")) == 1


def test_nonmonotonic_send_across_transactions_of_one_producer() -> None:
    t = Txns()
    t.txn(1, sends=[s(0, 1, "a")])
    t.txn(1, sends=[s(0, 0, "b")])
    t.txn(2, reads=[r(0, 0, "b"), r(0, 1, "a")])
    assert len(found(t, "nonmonotonic_send")) == 1


def test_verdict_and_round_trip_name_graph_anomalies() -> None:
    t = Txns()
    t.txn(1, sends=[s(0, 0, "a")], outcome="fail")
    t.txn(2, reads=[r(0, 0, "a")])
    out = io.StringIO()
    dump(t.history, out)
    result = check(parse_lines(out.getvalue().splitlines()))
    assert result.valid is False and "G1a=1" in result.verdict_line()


def test_queue_histories_are_not_graph_checked() -> None:
    t = Txns()
    t.history.meta["workload"] = "transactional"
    t.txn(1, sends=[s(0, 0, "a")], outcome="fail")
    t.txn(2, reads=[r(0, 0, "a")])
    assert found(t, "G1a") == [] and found(t, "aborted_read") != []


def test_a_send_without_an_offset_reads_back_as_unknown() -> None:
    """A delivery report without an offset (confluent-kafka's None) is written as null and read as -1."""
    t = Txns()
    t.txn(1, sends=[s(0, 0, "a")])
    t.history.ops[-1].records = [(T, 0, None, "a")]  # type: ignore[list-item]
    t.txn(2, reads=[r(0, 0, "a")])
    out = io.StringIO()
    dump(t.history, out)
    again = parse_lines(out.getvalue().splitlines())
    assert again.ops[1].records == [(T, 0, -1, "a")]
    result = check(again)
    assert result.valid is True, result.bad
