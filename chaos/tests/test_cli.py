"""The chaos and check commands' answers to bad input: a clear message, VERDICT line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import check_cli, cli
from chaos.history import History, Op, write_jsonl


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nemesis", "kill,earthquake"], "unknown nemesis earthquake"),
        (["--target", "bootstrap:127.0.0.1:9"], "needs a target launched here"),
        (["--target", "nowhere"], "unknown target"),
        (["--nemesis", "packet-drop"], "need --packet-faults"),
        (["--time", "0"], "must be positive"),
        (["--acks", "1"], "needs --acks all"),
        (["--load", "records=10,warp=9"], "unknown --warp"),
        (["--load", "records=many"], "load spec"),
        (["--load", "target=tansu"], "set by the caller"),
        (["--restart-bound", "0"], "must be positive"),
        (["--broker-config", "reference.defects"], "KEY=VALUE"),
        (["--nemesis", "kill", "--broker-config", "a=b"], "for reference brokers"),
        (["--target", "noida", "--nemesis", "kill,latency"], "process faults only"),
        (["--target", "noida", "--rf", "3"], "runs one broker"),
        (["--crash-clients"], "needs --workload txn-append"),
        (["--campaigns", "0"], "--campaigns is 1 to"),
    ],
)
def test_chaos_refuses_what_it_cannot_run(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert message in err
    assert out.strip().splitlines()[-1] == "VERDICT: could not run"


def test_check_judges_a_file_and_refuses_garbage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ops = [
        Op(0, "invoke", 0, "send", 1.0, 0.0, "a", "q", 0),
        Op(1, "ok", 0, "send", 1.1, 0.1, "a", "q", 0, 5),
        Op(2, "invoke", 1, "poll", 1.2, 0.2),
        Op(3, "ok", 1, "poll", 1.3, 0.3, records=[("q", 0, 5, "b")]),
    ]
    path = tmp_path / "history.jsonl"
    write_jsonl(History(ops, {"idempotence": True}), path)
    assert check_cli.main([str(path), "--json", str(tmp_path / "r.json")]) == 1
    out, _ = capsys.readouterr()
    assert out.strip().splitlines()[-1].startswith("VERDICT: invalid") and "inconsistent=1" in out
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"meta": {}}\n{"index": 0, "type": "maybe"}\n')
    assert check_cli.main([str(garbage)]) == 2
    _, err = capsys.readouterr()
    assert "line 2" in err


def test_batch_summary_counts_valid_campaigns_anomalies_and_recovery() -> None:
    """The --campaigns summary from three judged campaigns and one that could not run."""
    from chaos.checkers import check

    def history(lost: bool) -> History:
        ops = [
            Op(0, "invoke", 0, "send", 1.0, 0.1, value="a", topic="q", partition=0),
            Op(1, "ok", 0, "send", 1.1, 0.2, value="a", topic="q", partition=0, offset=0),
            Op(2, "info", "nemesis", "start", 1.2, 0.3, value={"fault": "kill", "id": 0}),
            Op(3, "info", "nemesis", "stop", 2.0, 1.0, value={"fault": "kill", "id": 0}),
            Op(4, "invoke", 0, "send", 2.1, 1.1, value="b", topic="q", partition=0),
            Op(5, "ok", 0, "send", 2.6, 1.6, value="b", topic="q", partition=0, offset=1),
            Op(6, "invoke", 1, "poll", 3.0, 2.0),
            Op(
                7,
                "ok",
                1,
                "poll",
                3.0,
                2.0,
                records=[("q", 0, 1, "b")] if lost else [("q", 0, 0, "a"), ("q", 0, 1, "b")],
            ),
        ]
        return History(ops, {"workload": "queue", "idempotence": True, "final_drain": True})

    restarted = check(history(False))
    restarted.stats.update(restart_acked=5, restart_readable_s=0.8)
    rows = [
        cli.BatchRow(1, 0, restarted, 10.0),
        cli.BatchRow(2, 1, check(history(True)), 12.0),
        cli.BatchRow(3, 0, check(history(False)), 11.0),
        cli.BatchRow(4, 2, None, 1.0),
    ]
    lines = cli.summary(rows)
    assert lines[0].startswith("SUMMARY: 2/4 campaigns valid (seeds 1-4; 1 could not run or judge)")
    assert "  lost_write: 1 in 1 campaign(s) [2]" in lines
    assert any(line.startswith("  recovery after 3 faults: median 0.60 s") for line in lines), lines
    assert "  restart check in 1 campaign(s): all readable again within 0.80 s (median 0.80 s)" in lines
    assert (
        lines[-1] == "  seed 4: VERDICT: could not run"
        and lines[-3] == "  seed 2: VERDICT: invalid lost=1 validate_delivery=1"
    )


def test_txn_append_options_reach_the_campaign() -> None:
    args = cli.parser().parse_args(["--workload", "txn-append", "--crash-clients", "--strict-cycles"])
    meta = cli.make_campaign(args, ["kill"], 5, None).meta()
    assert (meta["workload"], meta["crash_clients"], meta["strict_cycles"], meta["seed"]) == (
        "txn-append",
        True,
        True,
        5,
    )


def test_group_protocol_consumer_reaches_the_consumers() -> None:
    """--group-protocol consumer (issue 19): group consumers speaking KIP-848, so the broker owns the
    session timing and librdkafka gets none of the classic knobs it refuses with that protocol."""
    from chaos.workloads.queue import QueueOptions, consumer_config

    args = cli.parser().parse_args(["--group-protocol", "consumer"])
    meta = cli.make_campaign(args, ["kill"], 5, None).meta()
    assert (meta["consumer_mode"], meta["group_protocol"]) == ("group", "consumer")
    kip848 = consumer_config("b:1", "g", QueueOptions("t", consumer_mode="group", group_protocol="consumer"))
    classic = consumer_config("b:1", "g", QueueOptions("t", consumer_mode="group"))
    assert kip848.get("group.protocol") == "consumer" and "session.timeout.ms" not in kip848
    assert "group.protocol" not in classic and classic["session.timeout.ms"] == 6000


def test_two_campaigns_of_one_workload_and_seed_are_two_report_results() -> None:
    """The main job's chaos-kill and chaos-links run the same workload with the same seed: their Allure
    results must differ in full name (the history id), else the report shows one result retried."""
    from chaos.cli import result_id, result_name
    from chaos.runner import Campaign

    kill = Campaign(target="reference", workload="queue", faults=["kill"], seed=7)
    links = Campaign(target="reference", workload="queue", faults=["partition-client", "latency"], seed=7)
    assert result_id(kill) != result_id(links)
    assert result_name(kill) != result_name(links)
    again = Campaign(target="reference", workload="queue", faults=["kill"], seed=7)
    assert result_id(kill) == result_id(again)
