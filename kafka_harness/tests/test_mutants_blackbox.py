"""``kafka-harness mutants --black-box``: how a campaign's outcome is read, the judgement (a campaign
catches a mode only when it is valid clean and invalid with the mode on), the verdict's bar, and the
command end to end on the cheapest mode (no-dedup: one broker, answers lost, duplicates)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_harness.mutants_blackbox import (
    ERROR,
    INVALID,
    MUTANT_CONFIG,
    PLANS,
    VALID,
    Campaign,
    Outcome,
    classify,
    default_required,
    judge_mode,
    verdict_line,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_campaign_gets_the_mode_as_a_broker_config_and_the_baseline_none(tmp_path: Path) -> None:
    campaign = PLANS["no-dedup"][0]
    seeded = campaign.argv("no-dedup", tmp_path)
    switch = f"{MUTANT_CONFIG}=no-dedup"
    assert seeded[-4:] == ["--broker-config", switch, "--topic-config", switch]
    assert "--broker-config" not in campaign.argv(None, tmp_path)
    assert seeded[seeded.index("--seed") + 1] == str(campaign.seed)


def test_a_campaign_is_read_from_its_exit_and_verdict() -> None:
    invalid = classify(1, False, "...\nVERDICT: invalid duplicate=10 validate_delivery=1 lost=0\n")
    assert invalid.status == INVALID and invalid.anomalies == ("duplicate", "validate_delivery")
    assert classify(0, False, "VERDICT: valid\n").status == VALID
    assert classify(2, False, "VERDICT: could not run\n").status == ERROR
    assert classify(1, False, "Traceback ...\n").status == ERROR  # a crash is not a catch
    assert classify(0, False, "VERDICT: invalid lost=1\n").status == ERROR  # exit and verdict disagree
    assert classify(None, True, "").status == ERROR


def _fake(outcomes: dict[tuple[str | None, int], Outcome]):  # type: ignore[no-untyped-def]
    calls: list[tuple[str | None, int]] = []

    def runner(campaign: Campaign, mode: str | None) -> Outcome:
        calls.append((mode, campaign.seed))
        return outcomes[(mode, campaign.seed)]

    return runner, calls


def test_a_mode_is_caught_by_the_first_campaign_valid_clean_and_invalid_with_it() -> None:
    a, b = Campaign("a", (), 1), Campaign("b", (), 2)
    runner, calls = _fake({
        (None, 1): Outcome(VALID), ("m", 1): Outcome(VALID, summary="VERDICT: valid"),
        (None, 2): Outcome(VALID), ("m", 2): Outcome(INVALID, ("lost",), "VERDICT: invalid lost=3"),
    })  # fmt: skip
    baseline: dict[Campaign, Outcome] = {}
    result = judge_mode("m", (a, b), runner, baseline, say=lambda _: None)
    assert result.caught_by == b and result.line() == "m: caught by lost (campaign seed 2, b)"
    # a second mode reuses the baselines: each campaign runs clean once
    judge_mode("m", (a, b), runner, baseline, say=lambda _: None)
    assert calls.count((None, 1)) == 1 and calls.count((None, 2)) == 1


def test_a_campaign_invalid_clean_catches_nothing() -> None:
    a = Campaign("a", (), 1)
    runner, calls = _fake({(None, 1): Outcome(INVALID, ("lost",), "VERDICT: invalid lost=1")})
    result = judge_mode("m", (a,), runner, {}, say=lambda _: None)
    assert result.caught_by is None and calls == [(None, 1)]
    assert result.line().startswith("m: NOT CAUGHT (a seed 1: baseline VERDICT: invalid lost=1")


def test_the_bar_is_eight_of_ten_or_every_mode_selected() -> None:
    assert default_required(10, 10) == 8 and default_required(2, 10) == 2
    assert verdict_line(10, 8, 8) == "VERDICT: valid mutants=10 caught=8 required=8"
    assert verdict_line(10, 7, 8) == "VERDICT: invalid mutants=10 caught=7 required=8"


def test_no_dedup_is_caught_end_to_end() -> None:
    """The real command on one mode: the campaign clean (valid), then with the mode on (about 35 s)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KH_TARGET", "KH_BROKER_CONFIGS")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "kafka_harness", "mutants", "--black-box", "--mode", "no-dedup"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    print(done.stdout, f"\nwall {time.monotonic() - started:.1f} s")
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "VERDICT: valid mutants=1 caught=1 required=1", done.stdout + done.stderr
    assert lines[-2].startswith("no-dedup: caught by duplicate"), lines[-2]
    assert any(line.startswith("  [clean] ") and ": valid (" in line for line in lines), lines
    assert done.returncode == 0


@pytest.mark.parametrize(
    "argv", [["--black-box", "--mode", "nope"], ["--black-box", "--require", "5", "--mode", "no-dedup"]]
)
def test_the_command_refuses(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "kafka_harness", "mutants", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr


def test_the_stale_epoch_probe_is_valid_on_a_clean_reference() -> None:
    """The light check of the probes: three clean reference brokers, the leader killed, the new one
    asked with the old epoch (about 15 s). A probe that called a clean broker invalid could catch
    nothing (its baseline would not be valid)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KH_TARGET", "KH_BROKER_CONFIGS")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "kafka_harness.mutants_probes", "stale-epoch"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    print(done.stdout, f"\nwall {time.monotonic() - started:.1f} s")
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "VERDICT: valid stale_epoch_served=0", done.stdout + done.stderr
    assert any("FENCED_LEADER_EPOCH" in line.upper() for line in lines), lines
    assert done.returncode == 0


def test_every_probe_campaign_names_a_probe() -> None:
    from kafka_harness.mutants_probes import PROBES

    named = {c.probe for plans in PLANS.values() for c in plans if c.probe is not None}
    assert named and named <= set(PROBES)
    assert PLANS["unclean-election"][0].probe == "unclean-election"
