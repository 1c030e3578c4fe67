"""``kafka-harness chaos``: one campaign, progress while it runs, a verdict as the last line.

Exit 0 when the history is valid, 1 when anomalies were found, 2 when the campaign could not
run or nothing could be judged (the message says why).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from chaos.check_cli import print_result, write_graphs
from chaos.checkers import CheckResult
from chaos.history import RESTART_FAULT
from chaos.nemesis.schedule import parse_faults
from chaos.runner import Campaign, CampaignError, Outcome, run
from fixtures.targets import add_security_options, security_from_args


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes", "on"):
        return True
    if text.lower() in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafka-harness chaos", description=__doc__)
    p.add_argument(
        "--target",
        default="tansu",
        help="reference or tansu (launched here, behind proxies), or noida (launched here, unproxied: "
        "process faults only)",
    )
    p.add_argument(
        "--workload",
        default="queue",
        choices=["queue", "transactional", "txn-append", "share", "early-read", "producer-fence",
                 "abort-rewind"],
        help="txn-append: transactions sending to and polling several keys, judged by the dependency "
        "graph; share: share-group consumers (KIP-932) on the raw protocol (chaos/workloads/share.py); "
        "early-read, producer-fence, abort-rewind: transactional probes (chaos/workloads/probes.py)",
    )
    p.add_argument(
        "--crash-clients",
        action="store_true",
        help="txn-append: tear processors down mid-transaction at seeded times; reopen with fresh ids",
    )
    p.add_argument(
        "--strict-cycles",
        action="store_true",
        help="txn-append: count G0, G1c, G-single, G2 and int_send_skip (serializable transactions, "
        "which Kafka does not promise)",
    )
    p.add_argument(
        "--campaigns",
        type=int,
        default=1,
        help="run N seeded campaigns (seeds --seed-start, +1, ...) and print a summary",
    )
    p.add_argument("--seed-start", type=int, default=None, help="first seed of --campaigns (default: --seed)")
    p.add_argument(
        "--nemesis",
        default="partition-leader,kill,pause",
        help="comma-separated faults (kafka-harness chaos --list-faults)",
    )
    p.add_argument("--time", type=float, default=60.0, help="seconds of workload under faults")
    p.add_argument(
        "--rate",
        type=float,
        default=None,
        help="sends per second, all producers (default 2000); txn-append: transactions/s (default 100)",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--acks", default="all", choices=["0", "1", "all", "-1"])
    p.add_argument("--idempotence", type=_bool, default=True)
    p.add_argument("--retries", type=int, default=None)
    p.add_argument("--min-isr", type=int, default=None)
    p.add_argument("--rf", type=int, default=1)
    p.add_argument("--brokers", type=int, default=None, help="brokers (default: --rf)")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--consumers", choices=["assign", "group"], default="assign")
    p.add_argument(
        "--group-protocol",
        choices=["classic", "consumer"],
        default="classic",
        help="the group consumers' rebalance protocol (consumer: KIP-848; implies --consumers group)",
    )
    p.add_argument("--unclean-election", type=_bool, default=False)
    p.add_argument("--toxiproxy-url", default=None, help="use a running Toxiproxy server")
    p.add_argument(
        "--out", type=Path, default=None, help="directory for history.jsonl, result.json, timeline.png"
    )
    p.add_argument("--alluredir", type=Path, default=None, help="write the campaign as an Allure result here")
    p.add_argument(
        "--history-format",
        choices=["jsonl", "parquet"],
        default="jsonl",
        help="history.jsonl, or history.parquet for long campaigns (kafka-harness check reads both)",
    )
    p.add_argument(
        "--packet-faults",
        action="store_true",
        help="allow packet-drop and packet-loss (iptables on the brokers' private ports; root)",
    )
    p.add_argument(
        "--load",
        default=None,
        metavar="SPEC",
        help="run kafka-harness load alongside, e.g. records=200000,rate=2000,verify (spark_load/spec.py)",
    )
    p.add_argument(
        "--restart-check",
        type=_bool,
        default=None,
        help="at the end, kill every broker while writing, restart them and read with no new write: "
        "everything acknowledged must be readable within --restart-bound (default: on with kill)",
    )
    p.add_argument("--restart-bound", type=float, default=30.0, help="seconds, for --restart-check")
    p.add_argument(
        "--restart-probe",
        type=_bool,
        default=True,
        help="ask each node the nemesis starts again, as soon as its port opens, for the topic's "
        "Metadata: an existing topic answered unknown is restart_answered_uncaught_up (default: true)",
    )
    p.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config for the reference brokers (repeatable), e.g. reference.defects=late-high-watermark",
    )
    p.add_argument(
        "--topic-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config of the campaign's topics, given at creation (repeatable)",
    )
    p.add_argument(
        "--nodes",
        type=Path,
        default=None,
        metavar="FILE",
        help="a node-control spec (JSON, chaos/nodes.py): drive a cluster started elsewhere "
        "(--target bootstrap:HOST:PORT) through its kill/stop/start/pause/resume commands and its Toxiproxy",
    )
    p.add_argument("--list-faults", action="store_true")
    add_security_options(p, launches=True)
    return p


def _terminate(signum: int, _frame: object) -> None:
    """SIGTERM (a campaign batch or the main job ending an overrun campaign) unwinds like Ctrl-C:
    the ``finally`` blocks stop the brokers and the Toxiproxy server this command started in
    sessions of their own, which the signal to this process group does not reach. Without it an
    overrun campaign left all of them running."""
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    if args.list_faults:
        from chaos.nemesis.schedule import FAULTS

        print("\n".join(FAULTS))
        return 0
    try:
        faults = parse_faults(args.nemesis)
    except ValueError as exc:
        print(f"kafka-harness chaos: {exc}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    try:
        security_from_args(args, as_default=True)
    except ValueError as exc:
        print(f"kafka-harness chaos: {exc}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    if args.idempotence and args.acks not in ("all", "-1"):
        print(
            "kafka-harness chaos: an idempotent producer needs --acks all (or pass --idempotence false)",
            file=sys.stderr,
        )
        print("VERDICT: could not run")
        return 2
    if args.rate is None:
        rates = {"txn-append": 100.0, "share": 200.0, "early-read": 20.0, "producer-fence": 4.0,
                 "abort-rewind": 20.0}
        args.rate = rates.get(args.workload, 2000.0)
    if args.crash_clients and args.workload != "txn-append":
        print("kafka-harness chaos: --crash-clients needs --workload txn-append", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    if not 1 <= args.campaigns <= MAX_CAMPAIGNS:
        print(f"kafka-harness chaos: --campaigns is 1 to {MAX_CAMPAIGNS}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    if args.time <= 0 or args.rate <= 0 or args.restart_bound <= 0:
        print("kafka-harness chaos: --time, --rate and --restart-bound must be positive", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    if args.campaigns > 1 or args.seed_start is not None:
        return batch(args, faults)
    return one(args, faults, args.seed, args.out)


def make_campaign(args: argparse.Namespace, faults: list[str], seed: int, out: Path | None) -> Campaign:
    campaign = Campaign(
        target=args.target,
        workload=args.workload,
        faults=faults,
        time_s=args.time,
        rate=args.rate,
        seed=seed,
        acks=args.acks,
        idempotence=args.idempotence,
        retries=args.retries,
        min_isr=args.min_isr,
        rf=args.rf,
        brokers=args.brokers or args.rf,
        partitions=args.partitions,
        consumer_mode="group" if args.group_protocol == "consumer" else args.consumers,
        group_protocol=args.group_protocol,
        unclean_election=args.unclean_election,
        toxiproxy_url=args.toxiproxy_url,
        packet_faults=args.packet_faults,
        load_spec=args.load,
        restart_check=args.restart_check,
        restart_bound_s=args.restart_bound,
        restart_probe=args.restart_probe,
        broker_configs=list(args.broker_config),
        crash_clients=args.crash_clients,
        nodes_file=args.nodes,
        topic_configs=list(args.topic_config),
        strict_cycles=args.strict_cycles,
        security=args.security,
        history_format=args.history_format,
    )
    if out is not None:
        campaign.out_dir = out
    return campaign


def one(args: argparse.Namespace, faults: list[str], seed: int, out: Path | None) -> int:
    """One campaign: its progress, findings and verdict; the exit code."""
    campaign = make_campaign(args, faults, seed, out)
    try:
        outcome = run(campaign, progress=lambda line: print(line, flush=True))
    except CampaignError as exc:
        print(f"kafka-harness chaos: {exc}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    return finish(args, campaign, outcome)


def finish(args: argparse.Namespace, campaign: Campaign, outcome: Outcome) -> int:
    report(campaign, outcome, args.alluredir)
    result = outcome.result
    if outcome.load is not None:
        print(f"load alongside: {outcome.load.verdict_line} (exit {outcome.load.returncode})")
    print(result.verdict_line())
    if result.valid == "unknown":
        print("kafka-harness chaos: nothing was read back, so nothing can be judged", file=sys.stderr)
        return 2
    load_ok = outcome.load is None or outcome.load.valid
    return 0 if result.valid is True and load_ok else 1


MAX_CAMPAIGNS = 10_000


def batch(args: argparse.Namespace, faults: list[str]) -> int:
    """``--campaigns N``: N seeded campaigns one after another, then a summary of them all.

    Exit 0 when every campaign was valid, 1 when any found anomalies, 2 when any could not run.
    """
    first = args.seed if args.seed_start is None else args.seed_start
    base = args.out or Path("/tmp/kh-chaos") / f"batch-{first}-{int(time.time())}"
    rows: list[BatchRow] = []
    for seed in range(first, first + args.campaigns):
        print(f"=== campaign {len(rows) + 1}/{args.campaigns}: seed {seed}", flush=True)
        campaign = make_campaign(args, faults, seed, base / f"seed-{seed}")
        started = time.monotonic()
        try:
            outcome = run(campaign, progress=lambda line: print(line, flush=True))
        except CampaignError as exc:
            print(f"kafka-harness chaos: seed {seed}: {exc}", file=sys.stderr)
            rows.append(BatchRow(seed, 2, None, time.monotonic() - started))
            continue
        code = finish(args, campaign, outcome)
        rows.append(BatchRow(seed, code, outcome.result, time.monotonic() - started))
    for line in summary(rows):
        print(line)
    (base / "summary.txt").write_text("\n".join(summary(rows)) + "\n")
    return max(row.code for row in rows)


@dataclass
class BatchRow:
    seed: int
    code: int
    """0 valid, 1 anomalies, 2 could not run or nothing judged."""
    result: CheckResult | None
    wall_s: float


def summary(rows: list[BatchRow]) -> list[str]:
    """The batch's summary: valid count, anomalies per class, availability and recovery figures."""
    judged = [row for row in rows if row.result is not None]
    valid = sum(1 for row in rows if row.code == 0)
    unjudged = sum(1 for r in rows if r.code == 2)
    lines = [
        f"SUMMARY: {valid}/{len(rows)} campaigns valid "
        f"(seeds {rows[0].seed}-{rows[-1].seed}; {unjudged} could not run or judge)"
    ]
    totals: dict[str, int] = {}
    campaigns_with: dict[str, list[int]] = {}
    for row in judged:
        assert row.result is not None
        for name, count in row.result.counts().items():
            if count:
                totals[name] = totals.get(name, 0) + count
                campaigns_with.setdefault(name, []).append(row.seed)
    if totals:
        for name, count in totals.items():
            bad = any(row.result is not None and name in row.result.bad for row in judged)
            lines.append(
                f"  {name}: {count} in {len(campaigns_with[name])} campaign(s) {campaigns_with[name][:10]}"
                + ("" if bad else " (allowed)")
            )
    else:
        lines.append("  anomalies: none")
    rates = [r.result.availability.summary()["ok_rate_per_s"] for r in judged if r.result is not None]
    errors = [r.result.availability.summary()["errors"] for r in judged if r.result is not None]
    recoveries = [  # the restart phase's restart-all is followed by reads only: its own figures
        item["recovery_s"]
        for r in judged
        if r.result is not None
        for item in r.result.availability.recovery_s
        if item["fault"] != RESTART_FAULT
    ]
    healed = sorted(x for x in recoveries if x is not None)
    if rates:
        lines.append(
            f"  availability: ok ops/s per campaign min {min(rates)} median {statistics.median(rates)} "
            f"max {max(rates)}; errors per campaign median {statistics.median(errors)}"
        )
    if recoveries:
        lines.append(
            f"  recovery after {len(recoveries)} faults: "
            + (
                f"median {statistics.median(healed):.2f} s, "
                f"p90 {healed[int(0.9 * (len(healed) - 1))]:.2f} s, max {healed[-1]:.2f} s"
                if healed
                else "none served again"
            )
            + (
                f"; {len(recoveries) - len(healed)} never served again"
                if len(healed) < len(recoveries)
                else ""
            )
        )
    restarts = [r.result.stats for r in judged if r.result is not None and "restart_acked" in r.result.stats]
    if restarts:
        readable = sorted(
            x["restart_readable_s"] for x in restarts if x.get("restart_readable_s") is not None
        )
        lines.append(
            f"  restart check in {len(restarts)} campaign(s): "
            + (
                f"all readable again within {readable[-1]:.2f} s (median {statistics.median(readable):.2f} s)"
                if readable
                else ""
            )
            + (
                f"; {len(restarts) - len(readable)} with records never readable"
                if len(readable) < len(restarts)
                else ""
            )
        )
    walls = [row.wall_s for row in rows]
    lines.append(
        f"  wall time: {sum(walls):.0f} s in all, {statistics.median(walls):.0f} s median per campaign"
    )
    for row in rows:
        verdict = row.result.verdict_line() if row.result is not None else "VERDICT: could not run"
        lines.append(f"  seed {row.seed}: {verdict}")
    return lines


def result_name(campaign: Campaign) -> str:
    return f"chaos {campaign.target} {campaign.workload} {','.join(campaign.faults)} seed {campaign.seed}"


def result_id(campaign: Campaign) -> str:
    """The Allure result's full name and history id. The faults are part of it: two campaigns of one
    workload and seed (the main job's chaos-kill and chaos-links) are two results, not one retried."""
    return f"chaos.{campaign.target}.{campaign.workload}.{'+'.join(campaign.faults)}.{campaign.seed}"


def report(campaign: Campaign, outcome: Outcome, alluredir: Path | None) -> None:
    """Print the findings; write result.json and timeline.png; optionally an Allure result."""
    import json

    from chaos.history import read_history
    from chaos.plot import timeline_png

    result = outcome.result
    print_result(result)
    out = campaign.out_dir
    (out / "result.json").write_text(
        json.dumps(
            {
                **result.to_json(),
                "plan": [p.to_json() for p in outcome.plan],
                "nemesis": outcome.nemesis_events,
                "load": outcome.load.to_json() if outcome.load else None,
            },
            indent=1,
            default=str,
        )
    )
    history = read_history(outcome.history_path)
    png = timeline_png(
        history,
        result.availability,
        out / "timeline.png",
        f"{campaign.target} {campaign.workload} seed={campaign.seed} {','.join(campaign.faults)}",
    )
    graphs = write_graphs(result, out / "graphs")
    print(f"history: {outcome.history_path}\nplot: {png}\nresult: {out / 'result.json'}")
    if graphs:
        print(f"anomaly graphs (DOT): {len(graphs)} in {out / 'graphs'}")
    if alluredir is not None:
        from reports.allure import write_result

        steps = [
            (
                f"{name}: {len(items)}" + (" (allowed)" if name not in result.bad else ""),
                name not in result.bad,
            )
            for name, items in result.anomalies.items()
            if items
        ]
        attachments = [("history", outcome.history_path), ("timeline", png), ("result", out / "result.json")]
        attachments += [(f"graph {path.stem}", path) for path in graphs]
        if outcome.load is not None:
            steps.append((f"load alongside: {outcome.load.verdict_line}", outcome.load.valid))
            attachments.append(("load log", outcome.load.log))
            attachments += [(f"load {p.stem}", p) for p in sorted((out / "load").rglob("*.png"))]
        write_result(
            alluredir,
            name=result_name(campaign),
            full_name=result_id(campaign),
            epic="Chaos",
            feature=campaign.workload,
            story=",".join(campaign.faults),
            passed=result.valid is True and (outcome.load is None or outcome.load.valid),
            message=result.verdict_line(),
            parameters={**campaign.meta(), **({"load": campaign.load_spec} if campaign.load_spec else {})},
            attachments=attachments,
            start_ms=outcome.started_ms,
            stop_ms=outcome.stopped_ms,
            steps=steps,
        )
