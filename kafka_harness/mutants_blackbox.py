"""``kafka-harness mutants --black-box``: the reference broker's seeded replication bugs, switched on in
real broker processes, against chaos campaigns (issue 21).

The property suite's mutation check (``kafka-harness mutants``) drives the core's state machines in
one process. Here the same ten modes, and the broker-start mode ``answer-before-caught-up`` (which
only a process has), are switched on in reference broker *processes* through the
hidden config ``reference.mutant=MODE``, as a broker config (the broker-level default of the
topic config of the same name) and as the campaign topic's config (the controller's election
rule reads the topic's own configs), and ``kafka-harness chaos`` campaigns judge them from the
outside, as they would judge any broker: only through clients, proxies and process signals.

Each mode has a list of campaigns (:data:`PLANS`): the faults that make the bug bite, tried in order
until one finds anomalies. A mode is *caught* by a campaign that is valid on a clean reference
broker (its baseline, run once per campaign) and invalid with the mode on; its line names the
anomaly classes the checkers reported::

    no-dedup: caught by duplicate, validate_delivery (campaign seed 1, timeout)
    hw-over-all-replicas: NOT CAUGHT (...)
    VERDICT: valid mutants=10 caught=9 required=8

Exit 0 when at least ``--require`` modes are caught (default: 80 % of every mode, rounded up: 9 of the
11, which still needs 8 of the ten replication modes, the bar of issue 21; or every mode of a
``--mode`` selection), 1 otherwise, 2 when the command could not run. Logs in
``reports/output/mutants-black-box/<mode or clean>/``.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fixtures.targets import BROKER_CONFIGS_ENV
from kafka_harness.run.stages import Stage, StageResult, parse_verdict, run_stage
from reports.paths import output

OUT = output("mutants-black-box")
CLEAN = "clean"
MUTANT_CONFIG = "reference.mutant"
"""The broker config that switches a mode on (``reference_impl/core/mutants.py``; the harness names
it here because it never imports the core)."""
CAMPAIGN_BUDGET_S = 300.0


@dataclass(frozen=True)
class Campaign:
    """One ``kafka-harness chaos`` campaign on a launched reference target."""

    label: str
    """Short and unique: what the faults are (``cluster kill+partition-leader``)."""
    args: tuple[str, ...]
    seed: int
    probe: str | None = None
    """A probe of :mod:`kafka_harness.mutants_probes` instead of a chaos campaign (``args`` unused)."""

    def argv(self, mode: str | None, out: Path) -> list[str]:
        # the broker default reaches the partitions' own state machines; the controller's election
        # rule reads the topic's configs (reference_impl/core/controller/elections.py), so both
        configs = (
            ["--broker-config", f"{MUTANT_CONFIG}={mode}", "--topic-config", f"{MUTANT_CONFIG}={mode}"]
            if mode
            else []
        )
        if self.probe is not None:
            return [sys.executable, "-m", "kafka_harness.mutants_probes", self.probe, *configs]
        return [
            sys.executable, "-m", "kafka_harness", "chaos", "--target", "reference", *self.args,
            "--seed", str(self.seed), "--out", str(out), *configs,
        ]  # fmt: skip

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{self.label}-seed{self.seed}").strip("_")


FAST_FAILOVER = (
    "--broker-config",
    "broker.session.timeout.ms=3000",
    "--broker-config",
    "replica.lag.time.max.ms=2000",
)
"""Failover within a fault window (3-8 s): a broker without a heartbeat for 3 s is fenced and loses its
leaderships, a follower 2 s behind leaves the ISR (the defaults, 9 s and 30 s, outlast most windows:
with them no leadership moved in these campaigns)."""
FASTER_FAILOVER = (
    "--broker-config",
    "broker.session.timeout.ms=2000",
    "--broker-config",
    "replica.lag.time.max.ms=1000",
)
"""For strand-leader: the ISR must shrink to the leader within the first half of the window and the
dead leader be fenced within the second."""


def _cluster(label: str, faults: str, seed: int, *extra: str, time_s: int = 25, min_isr: int = 2,
             restart: bool = False, failover: tuple[str, ...] = FAST_FAILOVER) -> Campaign:  # fmt: skip
    """Three reference brokers, replication factor 3, behind proxies, the queue workload at 500/s,
    fast failover; ``restart``: the durability-after-restart check at the end (every broker killed
    while writing, then started; everything acknowledged readable)."""
    args = ("--brokers", "3", "--rf", "3", "--min-isr", str(min_isr), "--nemesis", faults,
            "--time", str(time_s), "--rate", "500", "--restart-check", "true" if restart else "false",
            "--restart-bound", "20", *failover, *extra)  # fmt: skip
    return Campaign(label, args, seed)


ONE_BROKER_TIMEOUT = Campaign(
    "one broker, timeout",
    ("--nemesis", "timeout", "--time", "12", "--rate", "500", "--restart-check", "false"),
    seed=1,
)
"""Answers lost after the request reached the broker (a ``timeout`` toxic on the downstream): the
idempotent producer retries batches already appended."""
ONE_BROKER_EARLY_READ = Campaign(
    "one broker, early-read, pause",
    ("--workload", "early-read", "--nemesis", "pause", "--time", "10", "--restart-check", "false"),
    seed=1,
)
"""Transactions held open while read_committed observers poll (:mod:`chaos.workloads.probes`)."""
PEERS = _cluster("cluster partition-leader-peers", "partition-leader-peers", 1)
"""The leader cut from its followers and the controllers, still reachable by clients."""
PEERS_KILL = _cluster("cluster partition-leader-peers+kill, restart check", "partition-leader-peers,kill", 2,
                      restart=True)  # fmt: skip
STRAND = _cluster("cluster min-isr 1 strand-leader", "strand-leader", 2, min_isr=1, failover=FASTER_FAILOVER)
"""The leader loses its followers, shrinks the ISR to itself, takes writes alone, then dies."""
STRAND_KILL = _cluster("cluster min-isr 1 strand-leader+kill", "strand-leader,kill", 54, time_s=30, min_isr=1,
                       failover=FASTER_FAILOVER)  # fmt: skip
"""A stranded leader that dies and returns, then a kill of whoever leads after it."""
KILL_PROBED = _cluster("cluster kill, restart probe", "kill", 7, time_s=20)
"""A broker killed and started again: the restart probe asks it for the topic as its port opens
(``chaos/nemesis/restart_probe.py``). Whether the probe's first question lands before the node has
caught up is a race the node usually wins within milliseconds (NOT CAUGHT on seed 7 once)."""
ISOLATED_PROBED = _cluster("cluster restart-isolated, restart probe", "restart-isolated", 7, time_s=20)
"""A broker killed and started again while cut off from its peers for 3 s (``restart-isolated``): it
cannot catch up before the probe asks, so the window is certain."""

STALE_EPOCH_PROBE = Campaign("probe: fetch with the previous leader epoch", (), 0, probe="stale-epoch")
"""After a leader change, Fetch/ListOffsets/OffsetForLeaderEpoch naming the old epoch: FENCED_LEADER_EPOCH."""
AVAILABILITY_PROBE = Campaign("probe: acks=all with a follower paused", (), 0, probe="acks-all-availability")
"""RF 3, min.insync.replicas 2, one follower paused: acks=all still acknowledged within 20 s."""
ISR_PROBE = Campaign("probe: a follower rejoining at a stale high watermark", (), 0, probe="isr-expand-early")
"""A preferred election right after an acks=all write: the new leader's high watermark lags its epoch's
start; a follower that received nothing must not be shown in the ISR."""
KIP279_PROBE = Campaign("probe: a replica whose last epoch its new leader never had", (), 0,
                        probe="kip279-divergence")  # fmt: skip
"""Two quick leader changes (each new leader cut from the last): the returning replica must truncate
to the end of the epoch it shares with the leader, then serve what the leader serves."""
UNCLEAN_PROBE = Campaign("probe: the only in-sync replica dies", (), 0, probe="unclean-election")
"""RF 2, min.insync.replicas 1, unclean election off: the follower left the ISR, records acknowledged by
the leader alone, the leader killed: no leader until it returns, nothing acknowledged lost."""

PLANS: dict[str, tuple[Campaign, ...]] = {
    "answer-before-caught-up": (ISOLATED_PROBED, KILL_PROBED),
    "truncate-to-hw": (PEERS_KILL,),
    "kip279-hole": (KIP279_PROBE, STRAND_KILL),
    "hw-over-all-replicas": (AVAILABILITY_PROBE, STRAND),
    "hw-without-followers": (PEERS_KILL,),
    "acks-all-early": (PEERS,),
    "isr-expand-early": (ISR_PROBE, STRAND_KILL),
    "lso-above-hw": (ONE_BROKER_EARLY_READ,),
    "no-dedup": (ONE_BROKER_TIMEOUT,),
    "stale-epoch-accepted": (STALE_EPOCH_PROBE, STRAND_KILL),
    "unclean-election": (UNCLEAN_PROBE, STRAND),
}
"""Each mode's campaigns, tried in order until one catches it. Earlier rounds (chaos/README.md) tried
kill and partition-leader with the default failover (nothing caught but no-dedup), then
partition-leader-peers with and without kill for every cluster mode; these are what caught each."""


# -- one campaign's outcome -------------------------------------------------------------------------

VALID, INVALID, ERROR = "valid", "invalid", "error"


@dataclass(frozen=True)
class Outcome:
    status: str
    """valid, invalid (anomalies found) or error (the campaign could not judge)."""
    anomalies: tuple[str, ...] = ()
    summary: str = ""
    seconds: float = 0.0


def classify(returncode: int | None, timed_out: bool, text: str, seconds: float = 0.0) -> Outcome:
    """A chaos campaign's outcome from its exit code and verdict line: invalid only with exit 1 and
    ``VERDICT: invalid`` naming the anomaly classes found."""
    if timed_out:
        return Outcome(ERROR, summary=f"overran {CAMPAIGN_BUDGET_S:.0f} s", seconds=seconds)
    verdict, counts = parse_verdict(text)
    shown = f"VERDICT: {verdict} " + " ".join(f"{k}={v}" for k, v in counts.items()) if verdict else ""
    if returncode == 0 and verdict == "valid":
        return Outcome(VALID, summary=shown.strip(), seconds=seconds)
    if returncode == 1 and verdict == "invalid":
        found = tuple(k for k, v in counts.items() if v > 0)
        return Outcome(INVALID, found, shown.strip(), seconds)
    return Outcome(ERROR, summary=shown.strip() or f"exit {returncode}, no verdict", seconds=seconds)


def run_campaign(campaign: Campaign, mode: str | None, logs: Path = OUT) -> Outcome:
    """One campaign against freshly launched reference brokers (``mode`` on, or clean)."""
    where = logs / (mode or CLEAN)
    stage = Stage(campaign.slug, "mutants", campaign.argv(mode, where / campaign.slug), CAMPAIGN_BUDGET_S,
                  env={BROKER_CONFIGS_ENV: ""})  # fmt: skip
    result: StageResult = run_stage(stage, where, echo=False)
    text = result.log.read_text(errors="replace")
    return classify(result.returncode, result.timed_out, text, result.seconds)


Runner = Callable[[Campaign, "str | None"], Outcome]


@dataclass
class ModeResult:
    mode: str
    caught_by: Campaign | None = None
    outcome: Outcome | None = None
    notes: list[str] | None = None

    def line(self) -> str:
        if self.caught_by is not None and self.outcome is not None:
            return (f"{self.mode}: caught by {', '.join(self.outcome.anomalies)} "
                    f"(campaign seed {self.caught_by.seed}, {self.caught_by.label})")  # fmt: skip
        return f"{self.mode}: NOT CAUGHT" + (f" ({'; '.join(self.notes)})" if self.notes else "")


def judge_mode(
    mode: str, plans: Sequence[Campaign], runner: Runner, baseline: dict[Campaign, Outcome],
    say: Callable[[str], None] = print,
) -> ModeResult:  # fmt: skip
    """Run ``mode``'s campaigns in order until one is invalid with it on and valid clean; a campaign
    whose baseline is not valid cannot catch anything (its anomalies are not the mode's)."""
    result = ModeResult(mode, notes=[])
    assert result.notes is not None
    for campaign in plans:
        if campaign not in baseline:
            baseline[campaign] = runner(campaign, None)
            b = baseline[campaign]
            say(
                f"  [{CLEAN}] {campaign.label} seed {campaign.seed}: {b.status} ({b.summary}) "
                f"{b.seconds:.0f} s"
            )
        if baseline[campaign].status != VALID:
            why = baseline[campaign].summary
            result.notes.append(f"{campaign.label} seed {campaign.seed}: baseline {why}")
            continue
        seeded = runner(campaign, mode)
        say(f"  [{mode}] {campaign.label} seed {campaign.seed}: {seeded.status} ({seeded.summary}) "
            f"{seeded.seconds:.0f} s")  # fmt: skip
        if seeded.status == INVALID:
            result.caught_by, result.outcome = campaign, seeded
            return result
        result.notes.append(f"{campaign.label} seed {campaign.seed}: {seeded.summary}")
    return result


def verdict_line(selected: int, caught: int, required: int) -> str:
    word = "valid" if caught >= required else "invalid"
    return f"VERDICT: {word} mutants={selected} caught={caught} required={required}"


def default_required(selected: int, total: int) -> int:
    """80 % of every mode, rounded up (8 of the 10 replication modes, issue 21's bar; 9 of 11 with the
    broker-start mode, so still at least 8 of the ten); every mode of a smaller selection."""
    return math.ceil(selected * 0.8) if selected == total else selected


def main(argv: list[str], modes: Sequence[str]) -> int:
    """``modes``: every seeded mode the reference broker knows (the caller, the mutants command,
    reads them from the core)."""
    parser = argparse.ArgumentParser(
        prog="kafka-harness mutants --black-box", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--black-box", action="store_true", required=True)
    parser.add_argument("--mode", action="append", choices=list(modes), help="only these modes (repeatable)")
    parser.add_argument(
        "--require", type=int, default=None, help="modes that must be caught (default 80%% rounded up)"
    )
    parser.add_argument("--list", action="store_true", help="print each mode's campaigns and exit")
    args = parser.parse_args(argv)
    missing = [m for m in modes if m not in PLANS]
    if missing:
        print(f"kafka-harness mutants --black-box: no campaigns for {', '.join(missing)}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    chosen = [m for m in modes if not args.mode or m in args.mode]
    if args.list:
        for m in chosen:
            print(f"{m}: " + "; ".join(f"{c.label} seed {c.seed}" for c in PLANS[m]))
        return 0
    required = args.require if args.require is not None else default_required(len(chosen), len(modes))
    if not 0 <= required <= len(chosen):
        print(f"kafka-harness mutants --black-box: --require is 0 to {len(chosen)}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    started = time.monotonic()
    print(f"{len(chosen)} modes, each against chaos campaigns on reference broker processes "
          f"(baseline clean first; logs in {OUT}/)", flush=True)  # fmt: skip
    baseline: dict[Campaign, Outcome] = {}
    results = [
        judge_mode(m, PLANS[m], run_campaign, baseline, lambda s: print(s, flush=True)) for m in chosen
    ]
    print(f"wall time {time.monotonic() - started:.0f} s\n")
    for r in results:
        print(r.line())
    caught = sum(r.caught_by is not None for r in results)
    print(verdict_line(len(chosen), caught, required))
    return 0 if caught >= required else 1
