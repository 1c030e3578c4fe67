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
