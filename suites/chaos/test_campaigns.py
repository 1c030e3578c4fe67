"""Short campaigns in the default run: the CLI end to end on Tansu, the reference broker under
kill/partition/pause, and the power check (a fault that really loses data must be reported).

Longer and repeated campaigns are ``chaos_full`` (``tox -e chaos``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chaos.history import RESTART_FAULT, read_jsonl
from chaos.runner import Outcome

from .conftest import campaign


def test_cli_campaign_on_tansu_ends_in_a_verdict_with_report(tmp_path: Path) -> None:
    """Link faults on Tansu: a verdict line, exit code to match, history, plot and an Allure result."""
    out, results = tmp_path / "run", tmp_path / "allure-results"
    command = [
        sys.executable,
        "-m",
        "kafka_harness",
        "chaos",
        "--target",
        "tansu",
        "--nemesis",
        "partition-leader,latency,pause",
        "--time",
        "15",
        "--rate",
        "500",
        "--seed",
        "7",
        "--out",
        str(out),
        "--alluredir",
        str(results),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=170)
    lines = done.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("VERDICT: "), done.stdout + done.stderr
    assert done.returncode == (0 if lines[-1] == "VERDICT: valid" else 1), lines[-1]
    assert any(line.lstrip().startswith("t=") for line in lines), "progress is printed while it runs"
    saved = json.loads((out / "result.json").read_text())
    assert saved["stats"]["acked"] > 1000 and saved["valid"] in (True, False)
    starts = [e for e in saved["nemesis"] if e["f"] == "start"]
    stops = [e for e in saved["nemesis"] if e["f"] == "stop"]
    assert [e["id"] for e in starts] == [p["id"] for p in saved["plan"]] == [e["id"] for e in stops]
    assert (out / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (allure_result,) = results.glob("*-result.json")
    written = json.loads(allure_result.read_text())
    assert {a["name"] for a in written["attachments"]} == {"history", "timeline", "result"}
    assert {label["value"] for label in written["labels"] if label["name"] == "epic"} == {"Chaos"}
    # the checkers alone on the recorded history reach the same verdict
    again = subprocess.run(
        [sys.executable, "-m", "kafka_harness", "check", str(out / "history.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.stdout.strip().splitlines()[-1] == lines[-1]


def test_reference_broker_loses_nothing_under_kill_partition_and_pause(tmp_path: Path) -> None:
    """Idempotent acks=all producer against one reference broker killed, isolated and paused."""
    _c, outcome = campaign(
        tmp_path,
        target="reference",
        faults=["kill", "partition-leader", "pause"],
        time_s=20,
        rate=500,
        seed=8,
    )
    result = outcome.result
    counts = result.counts()
    started = [e for e in outcome.nemesis_events if e["f"] == "start"]
    assert {e["fault"] for e in started} == {"kill", "partition-leader", RESTART_FAULT}, (
        "seed 8 plans an isolation and a kill; a kill campaign ends with the restart check"
    )
    assert all("error" not in e for e in started), started
    assert result.stats["acked"] > 1000
    assert counts["lost_write"] == counts["duplicate"] == counts["inconsistent_offsets"] == 0, (
        result.verdict_line()
    )
    assert result.stats["restart_acked"] > 0, "a kill campaign ends with the restart check"
    assert result.valid is True, result.verdict_line()


CLUSTER_FAULTS = ["partition-leader", "partition-controller", "kill", "pause"]


def _cluster_campaign(tmp_path: Path, seed: int, time_s: float, safe: bool = True) -> Outcome:
    """The 3-broker reference cluster behind proxies on every client and broker link; ``safe`` is
    RF=3, min.insync.replicas=2, acks=all with idempotence; unsafe is acks=1 with unclean election."""
    options: dict[str, Any] = (
        {"acks": "all", "idempotence": True, "min_isr": 2}
        if safe
        else {"acks": "1", "idempotence": False, "min_isr": 1, "unclean_election": True}
    )
    _c, outcome = campaign(tmp_path, target="reference", faults=CLUSTER_FAULTS, time_s=time_s, rate=500,
                           seed=seed, rf=3, brokers=3, **options)
    return outcome


def test_reference_cluster_with_proxied_broker_links_loses_nothing(tmp_path: Path) -> None:
    """Three brokers, RF=3, min.insync.replicas=2, idempotent acks=all; the leader and the active
    controller are isolated on every link (client, broker-to-broker and node-to-controller
    listener), brokers killed and paused."""
    outcome = _cluster_campaign(tmp_path, seed=2, time_s=25)
    result = outcome.result
    proxies = read_jsonl(outcome.history_path).meta["proxies"]
    assert {"broker-1-to-2", "broker-2-to-1", "broker-3-to-1"} <= set(proxies), proxies
    assert {"controller-1-to-2", "controller-2-to-1", "controller-3-to-1"} <= set(proxies), proxies
    assert any(e["f"] == "start" for e in outcome.nemesis_events), outcome.nemesis_events
    assert result.stats["acked"] > 1000
    assert result.valid is True, result.verdict_line()


@pytest.mark.chaos_full
@pytest.mark.parametrize("seed", range(1, 11))
def test_ten_seeded_minute_campaigns_on_the_reference_cluster(tmp_path: Path, seed: int) -> None:
    """Issue 7's acceptance: 60 s campaigns mixing leader isolation, controller isolation, kill -9
    and pause on the replicated cluster: 0 lost, 0 duplicates, 0 inconsistent offsets."""
    result = _cluster_campaign(tmp_path, seed=seed, time_s=60).result
    counts = result.counts()
    assert counts["lost_write"] == counts["duplicate"] == counts["inconsistent_offsets"] == 0, (
        result.verdict_line()
    )
    assert result.valid is True, result.verdict_line()


@pytest.mark.chaos_full
def test_the_same_schedules_with_acks_1_and_unclean_election_lose_writes(tmp_path: Path) -> None:
    """The power check on the cluster: the schedules above, made unsafe, must show lost writes in at
    least one campaign (otherwise the campaigns could not tell a safe broker from an unsafe one)."""
    verdicts = []
    for seed in range(1, 11):
        result = _cluster_campaign(tmp_path / str(seed), seed=seed, time_s=60, safe=False).result
        verdicts.append(f"seed {seed}: {result.verdict_line()}")
        if result.counts()["lost_write"] > 0:
            return
    pytest.fail("no unsafe campaign lost a write:\n" + "\n".join(verdicts))


def test_power_check_tansu_memory_storage_killed_loses_acknowledged_writes(tmp_path: Path) -> None:
    """Tansu with memory storage forgets everything when killed: acknowledged records really vanish,
    and the checkers must say so (lost writes), not pass the run."""
    _c, outcome = campaign(tmp_path, target="tansu", faults=["kill"], time_s=15, rate=500, seed=3)
    result = outcome.result
    kills = [e for e in outcome.nemesis_events if e["f"] == "start" and e["fault"] == "kill"]
    assert kills and "error" not in kills[0], outcome.nemesis_events
    assert result.valid is False
    assert result.counts()["lost_write"] > 0, result.verdict_line()
    assert "lost_write" in result.bad
    # and the restart check at the end: a Tansu killed and restarted serves nothing it acknowledged
    assert result.counts()["unreadable_after_restart"] == result.stats["restart_acked"] > 0


@pytest.mark.chaos_full
def test_same_seed_same_fault_schedule(tmp_path: Path) -> None:
    """Two campaigns with one seed: the recorded nemesis events match, event for event."""

    def events(run_dir: Path) -> list[tuple[object, ...]]:
        _c, outcome = campaign(
            run_dir,
            target="tansu",
            faults=["partition-leader", "latency", "pause", "bandwidth", "slicer"],
            time_s=25,
            rate=300,
            seed=1,
        )
        return [
            (
                e["f"],
                e["fault"],
                e["id"],
                e.get("planned_start_s"),
                e.get("duration_s"),
                tuple(e.get("nodes", ())),
            )
            for e in outcome.nemesis_events
        ]

    first, second = events(tmp_path / "a"), events(tmp_path / "b")
    assert first == second and len(first) >= 4


@pytest.mark.chaos_full
@pytest.mark.parametrize("target", ["reference", "tansu"])
def test_sixty_second_campaign_with_every_client_link_fault(tmp_path: Path, target: str) -> None:
    faults = [
        "partition-leader",
        "partition-client",
        "latency",
        "bandwidth",
        "reset-peer",
        "timeout",
        "slicer",
        "pause",
    ]
    _c, outcome = campaign(tmp_path, target=target, faults=faults, time_s=60, rate=1000, seed=7)
    result = outcome.result
    assert result.valid in (True, False) and result.stats["acked"] > 0
    if target == "reference":
        assert result.valid is True, result.verdict_line()


@pytest.mark.chaos_full
def test_transactional_campaign_on_the_reference_broker_is_exactly_once(tmp_path: Path) -> None:
    """Consume-transform-produce with read_committed under isolation and pause: every input value
    transformed once, nothing of an aborted transaction visible."""
    _c, outcome = campaign(
        tmp_path,
        target="reference",
        workload="transactional",
        faults=["partition-leader", "pause", "latency"],
        time_s=20,
        rate=300,
        seed=8,
    )
    result = outcome.result
    assert any(op_f == "txn" for op_f in _txn_fs(outcome.history_path)), "transactions were recorded"
    assert result.valid is True, result.verdict_line()


def _txn_fs(path: Path) -> set[str]:
    from chaos.history import read_jsonl

    return {op.f for op in read_jsonl(path) if op.type == "ok"}


@pytest.mark.chaos_full
def test_load_alongside_a_kill_campaign_is_judged_with_it(tmp_path: Path) -> None:
    """``--load SPEC``: a Spark load under the same faults; its verdict joins the campaign's result."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "kafka_harness", "chaos", "--target", "reference", "--nemesis", "kill",
               "--time", "20", "--load", "records=20000,rate=2000,verify", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    load = json.loads((out / "result.json").read_text())["load"]
    assert load["valid"] and "acked=20000 read=20000 lost=0 duplicate=0" in load["verdict"]
    assert (out / "load.log").exists() and list((out / "load").rglob("summary.json"))
