"""The durability-after-restart checker on hand-written histories: what counts as unreadable after
a restart, what does not, the figures it reports, and the verdict line.

The scenario each test writes: producers' writes acknowledged, a final read, then the restart
phase (its own writer 997, every broker killed and started as one ``restart-all`` fault, its
reader 998 reading from the start with nothing written since).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from chaos import check_cli
from chaos.checkers import check
from chaos.history import RESTART_FAULT, dump, parse_lines, write_jsonl

from .test_checkers import Builder, names

WRITER, READER, FINAL = 997, 998, 999


def _phase(bound_s: float = 30.0) -> Builder:
    """a and b acknowledged and in the final read; the restart writer's r1 (partition 0, offset 2)
    and r2 (partition 1, offset 0) acknowledged; then every broker killed."""
    b = Builder(
        final_reader=FINAL,
        final_read_complete=True,
        restart_check={"writer": WRITER, "reader": READER, "bound_s": bound_s, "fault_id": 3},
    )
    b.send(0, "a", 0, 0).send(0, "b", 0, 1).poll(1, (0, 0, "a"), (0, 1, "b"))
    b.assign(FINAL, [0, 1]).poll(FINAL, (0, 0, "a"), (0, 1, "b"))
    b.send(WRITER, "r1", 0, 2).send(WRITER, "r2", 1, 0)
    b.nemesis("start", RESTART_FAULT, 3).nemesis("stop", RESTART_FAULT, 3)
    b.assign(READER, [0, 1])
    return b


def test_everything_read_again_after_the_restart_is_valid_with_its_figures() -> None:
    b = _phase()
    b.poll(READER, (0, 0, "a"), (0, 1, "b"))
    b.poll(READER, (0, 2, "r1"), (1, 0, "r2"))
    result = check(b.history)
    assert result.valid is True and result.verdict_line() == "VERDICT: valid"
    start, stop = (op for op in b.history.ops if op.process == "nemesis")
    last_poll = b.history.ops[-1]
    assert result.stats["restart_acked"] == 4 and result.stats["unreadable_after_restart"] == 0
    assert result.stats["restart_readable_s"] == round(last_poll.mono - stop.mono, 3)
    assert result.stats["restart_down_s"] == round(stop.mono - start.mono, 3)


def test_records_hidden_after_the_restart_make_the_run_invalid() -> None:
    """The broker serves only up to an old high watermark: the reader gets a and b, never r1 or
    r2. Exactly those two are unreadable, named by their writes' ops, and the verdict says so."""
    b = _phase(bound_s=20)
    b.poll(READER, (0, 0, "a"), (0, 1, "b"))
    result = check(b.history)
    assert result.valid is False and "unreadable_after_restart" in result.bad
    found = result.anomalies["unreadable_after_restart"]
    assert sorted(x.detail["value"] for x in found) == ["r1", "r2"]
    r1 = next(x for x in found if x.detail["value"] == "r1")
    assert [b.history.ops[i].value for i in r1.ops] == ["r1", "r1"] and "within 20 s" in r1.description
    assert result.verdict_line() == "VERDICT: invalid unreadable_after_restart=2"
    assert result.stats["unreadable_after_restart"] == 2 and result.stats["restart_readable_s"] is None
    # the restart phase's writes are its own to judge: no lost, unseen or validate_delivery for them
    assert names(b) == {"unreadable_after_restart": 2}


def test_a_broker_that_came_back_empty_loses_everything_it_acknowledged() -> None:
    """Memory storage: after the restart nothing is there; every acknowledged write counts."""
    b = _phase()
    assert names(b)["unreadable_after_restart"] == 4


def test_reads_before_the_restart_do_not_count() -> None:
    """r1 and r2 were read by someone before the kill (a consumer still running): only what the
    phase's reader gets after the restart shows the brokers serve it again."""
    b = Builder(restart_check={"reader": READER, "bound_s": 30})
    b.send(WRITER, "r1", 0, 0).send(WRITER, "r2", 0, 1).poll(1, (0, 0, "r1"), (0, 1, "r2"))
    b.poll(READER, (0, 0, "r1"), (0, 1, "r2"))  # the reader too, but before the kill
    b.nemesis("start", RESTART_FAULT, 0).nemesis("stop", RESTART_FAULT, 0).assign(READER, [0])
    assert names(b) == {"unreadable_after_restart": 2}
    b.poll(READER, (0, 0, "r1"), (0, 1, "r2"))
    assert names(b) == {}


def test_only_acknowledged_writes_must_come_back() -> None:
    """A write whose outcome is unknown (in flight at the kill, purged) may or may not be there;
    one refused for certain is not expected; neither is required after the restart."""
    b = _phase()
    b.history.ops = [op for op in b.history.ops if op.value not in ("r1", "r2")]
    b.send(WRITER, "u", 0, None, outcome="info").send(WRITER, "f", 0, None, outcome="fail")
    b.nemesis("start", RESTART_FAULT, 4).nemesis("stop", RESTART_FAULT, 4).assign(READER, [0])
    b.poll(READER, (0, 0, "a"), (0, 1, "b"), (0, 2, "u"))
    result = check(b.history)
    assert names(b) == {} and result.stats["restart_acked"] == 2


def test_the_last_restart_is_the_one_judged() -> None:
    b = _phase()
    b.poll(READER, (0, 0, "a"), (0, 1, "b"), (0, 2, "r1"), (1, 0, "r2"))
    assert names(b) == {}
    b.nemesis("start", RESTART_FAULT, 9).nemesis("stop", RESTART_FAULT, 9)
    assert names(b) == {"unreadable_after_restart": 4}, "nothing was read after the second restart"


def test_no_restart_phase_no_restart_anomaly_and_no_figures() -> None:
    b = Builder().send(0, "a", 0, 0).poll(1, (0, 0, "a")).nemesis("start").nemesis("stop")
    result = check(b.history)
    assert result.valid is True and "restart_acked" not in result.stats
    assert result.anomalies["unreadable_after_restart"] == []


def test_a_restart_that_never_finished_leaves_everything_unreadable() -> None:
    """The brokers were killed and could not be started (the stop op is missing): nothing the
    reader did counts as reading after a restart."""
    b = _phase()
    b.history.ops = [op for op in b.history.ops if not (op.process == "nemesis" and op.f == "stop")]
    b.poll(READER, (0, 0, "a"), (0, 1, "b"), (0, 2, "r1"), (1, 0, "r2"))
    result = check(b.history)
    assert result.counts()["unreadable_after_restart"] == 4 and result.stats["restart_down_s"] is None


def test_the_check_command_prints_the_figures_and_the_same_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = _phase()
    b.poll(READER, (0, 0, "a"), (0, 1, "b"))
    text = io.StringIO()
    dump(b.history, text)
    again = parse_lines(text.getvalue().splitlines())
    assert check(again).counts() == check(b.history).counts()
    path = tmp_path / "history.jsonl"
    write_jsonl(b.history, path)
    assert check_cli.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "restart: 4 writes acknowledged before every broker was killed" in out
    assert "2 not readable within the bound" in out
    assert out.strip().splitlines()[-1] == "VERDICT: invalid unreadable_after_restart=2"
