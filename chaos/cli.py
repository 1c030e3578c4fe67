"""``kafka-harness chaos``: one campaign, progress while it runs, a verdict as the last line.

Exit 0 when the history is valid, 1 when anomalies were found, 2 when the campaign could not
run or nothing could be judged (the message says why).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chaos.check_cli import print_result
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
    p.add_argument("--workload", default="queue", choices=["queue", "transactional"])
    p.add_argument(
        "--nemesis",
        default="partition-leader,kill,pause",
        help="comma-separated faults (kafka-harness chaos --list-faults)",
    )
    p.add_argument("--time", type=float, default=60.0, help="seconds of workload under faults")
    p.add_argument("--rate", type=float, default=2000.0, help="sends per second, all producers")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--acks", default="all", choices=["0", "1", "all", "-1"])
    p.add_argument("--idempotence", type=_bool, default=True)
    p.add_argument("--retries", type=int, default=None)
    p.add_argument("--min-isr", type=int, default=None)
    p.add_argument("--rf", type=int, default=1)
    p.add_argument("--brokers", type=int, default=None, help="brokers (default: --rf)")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--consumers", choices=["assign", "group"], default="assign")
    p.add_argument("--unclean-election", type=_bool, default=False)
    p.add_argument("--toxiproxy-url", default=None, help="use a running Toxiproxy server")
    p.add_argument(
        "--out", type=Path, default=None, help="directory for history.jsonl, result.json, timeline.png"
    )
    p.add_argument("--alluredir", type=Path, default=None, help="write the campaign as an Allure result here")
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
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config for the reference brokers (repeatable), e.g. reference.defects=late-high-watermark",
    )
    p.add_argument("--list-faults", action="store_true")
    add_security_options(p, launches=True)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
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
        print("kafka-harness chaos: an idempotent producer needs --acks all (or pass --idempotence false)",
              file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    if args.time <= 0 or args.rate <= 0 or args.restart_bound <= 0:
        print("kafka-harness chaos: --time, --rate and --restart-bound must be positive", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
    campaign = Campaign(
        target=args.target,
        workload=args.workload,
        faults=faults,
        time_s=args.time,
        rate=args.rate,
        seed=args.seed,
        acks=args.acks,
        idempotence=args.idempotence,
        retries=args.retries,
        min_isr=args.min_isr,
        rf=args.rf,
        brokers=args.brokers or args.rf,
        partitions=args.partitions,
        consumer_mode=args.consumers,
        unclean_election=args.unclean_election,
        toxiproxy_url=args.toxiproxy_url,
        packet_faults=args.packet_faults,
        load_spec=args.load,
        restart_check=args.restart_check,
        restart_bound_s=args.restart_bound,
        broker_configs=list(args.broker_config),
        security=args.security,
    )
    if args.out is not None:
        campaign.out_dir = args.out
    try:
        outcome = run(campaign, progress=lambda line: print(line, flush=True))
    except CampaignError as exc:
        print(f"kafka-harness chaos: {exc}", file=sys.stderr)
        print("VERDICT: could not run")
        return 2
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


def report(campaign: Campaign, outcome: Outcome, alluredir: Path | None) -> None:
    """Print the findings; write result.json and timeline.png; optionally an Allure result."""
    import json

    from chaos.history import read_jsonl
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
    history = read_jsonl(outcome.history_path)
    png = timeline_png(
        history,
        result.availability,
        out / "timeline.png",
        f"{campaign.target} {campaign.workload} seed={campaign.seed} {','.join(campaign.faults)}",
    )
    print(f"history: {outcome.history_path}\nplot: {png}\nresult: {out / 'result.json'}")
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
        if outcome.load is not None:
            steps.append((f"load alongside: {outcome.load.verdict_line}", outcome.load.valid))
            attachments.append(("load log", outcome.load.log))
            attachments += [(f"load {p.stem}", p) for p in sorted((out / "load").rglob("*.png"))]
        write_result(
            alluredir,
            name=f"chaos {campaign.target} seed {campaign.seed}",
            full_name=f"chaos.{campaign.target}.{campaign.workload}.{campaign.seed}",
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
