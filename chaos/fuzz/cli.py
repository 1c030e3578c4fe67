"""``kafka-harness fuzz``: structure-aware protocol fuzzing of one target, a replay, or a diff.

    kafka-harness fuzz --target reference --requests 20000 --seed 1
    kafka-harness fuzz --target reference --broker-config reference.defects=unbounded-decode
    kafka-harness fuzz --replay DIR/crash-list_groups-v4-HASH.bin --target reference
    kafka-harness fuzz --diff reference,tansu --requests 5000

Prints progress, the rate and wall time, outcome counts per API, the reproducers it wrote, and
last ``VERDICT: valid|invalid requests=N crashes=N hangs=N rss_peak_mb=N lost=N``: valid when
the target never died or hung, lost no acknowledged canary record and (launched here) stayed
within ``--rss-limit-mb``. Exit 0 valid, 1 invalid, 2 could not run. A JSON summary goes to
``--out`` (default ``reports/output/fuzz/<target>-seed<seed>/``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fixtures.targets import TargetUnavailableError, add_security_options, security_from_args
from reference_impl.protocol.apis import API_KEYS
from reports.paths import output

from .canary import Canary, CanaryError
from .classify import CLASSES, DIED, HANG, Outcome
from .engine import Engine, Stats
from .generate import Context
from .plan import CasePlan, Ratios
from .prepare import SetupError, prepare
from .replay import ensure_up, read_frame_file, send_one, write_finding
from .sasl import SASL_PREFIX, SaslStats, replay_frames, reproducer_name, run_sasl_phase, split_frames
from .shrink import ddmin
from .target import FuzzTarget, normalise, open_target

PROG = "kafka-harness fuzz"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", help="reference | tansu | noida (launched here) | bootstrap:HOST:PORT | "
                   "HOST:PORT")
    p.add_argument("--requests", type=int, default=10_000, help="requests at most (default 10000)")
    p.add_argument("--time", type=float, default=3600.0, help="seconds at most (default 3600)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--apis", default=None, help="comma-separated API keys or names (default: all advertised)")
    p.add_argument("--out", type=Path, default=None, help="reproducers and summary.json (default under "
                   "reports/output/fuzz/)")
    p.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a config for a reference broker (repeatable), e.g. "
                   "reference.defects=unbounded-decode")
    p.add_argument("--concurrency", type=int, default=16, help="connections at once (default 16)")
    p.add_argument("--hang-s", type=float, default=5.0,
                   help="seconds without answer or close that make a hang")
    p.add_argument("--probe-every", type=int, default=1000, help="a liveness probe every N requests")
    p.add_argument("--valid-ratio", type=float, default=0.3, help="share of requests sent unmutated")
    p.add_argument("--rss-limit-mb", type=float, default=256.0, help="resident memory bound (local targets)")
    p.add_argument("--canary-records", type=int, default=200, help="acknowledged records that must survive")
    p.add_argument("--max-shrink", type=int, default=3, help="crashes and hangs to confirm and shrink")
    p.add_argument("--shrink-time", type=float, default=60.0, help="seconds per shrink")
    p.add_argument("--replay", type=Path, default=None, metavar="FILE", help="send one reproducer; exit 1 if "
                   "its crash or hang reproduces")
    p.add_argument("--diff", default=None, metavar="A,B", help="the same requests to two targets; compare")
    p.add_argument("--sasl-cases", type=int, default=300,
                   help="on a SASL target: hostile handshakes and tokens on fresh unauthenticated "
                   "connections (default 300; 0: none)")
    add_security_options(p, launches=True)
    return p


def _could_not_run(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    print("VERDICT: could not run")
    return 2


def _api_keys(text: str | None) -> list[int] | None:
    if not text:
        return None
    keys = []
    for item in text.split(","):
        item = item.strip()
        if item.lstrip("-").isdigit():
            keys.append(int(item))
        elif item in API_KEYS:
            keys.append(API_KEYS[item])
        else:
            raise ValueError(f"unknown API {item!r} (a key, or a name such as list_groups)")
    return keys


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    malformed = [kv for kv in args.broker_config if "=" not in kv or kv.startswith("=")]
    if malformed:
        return _could_not_run(f"--broker-config takes KEY=VALUE, not {malformed[0]!r}")
    if args.requests <= 0 or args.time <= 0 or args.hang_s <= 0 or args.concurrency <= 0:
        return _could_not_run("--requests, --time, --hang-s and --concurrency must be positive")
    if not 0 <= args.valid_ratio <= 1:
        return _could_not_run("--valid-ratio is a share between 0 and 1")
    try:
        apis = _api_keys(args.apis)
        args.client_security = security_from_args(args)
    except ValueError as exc:
        return _could_not_run(str(exc))
    if args.diff:
        from .diff import diff_main

        return diff_main(args, apis)
    if not args.target:
        return _could_not_run("--target is required (or --diff A,B)")
    if args.replay is not None:
        return replay_main(args)
    return fuzz_main(args, apis)


def say(line: str) -> None:
    print(line, flush=True)


def default_out(target: str, seed: int) -> Path:
    name = normalise(target).replace(":", "_").replace("/", "_").replace(",", "_")
    return output("fuzz") / f"{name}-seed{seed}"


def _exit_on_sigterm() -> None:
    """SIGTERM (``timeout``, the main job's budget) ends the run through ``finally``, so the target
    launched here is stopped rather than left running."""

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def fuzz_main(args: argparse.Namespace, apis: list[int] | None) -> int:
    started = time.monotonic()
    _exit_on_sigterm()
    try:
        target = open_target(args.target, list(args.broker_config), args.security, args.client_security)
    except (TargetUnavailableError, ValueError, OSError) as exc:
        return _could_not_run(f"target {args.target}: {exc}")
    try:
        return _fuzz(args, apis, target, started)
    finally:
        target.close()


def _fuzz(args: argparse.Namespace, apis: list[int] | None, target: FuzzTarget, started: float) -> int:
    out: Path = args.out or default_out(args.target, args.seed)
    ctx = Context()
    try:
        advertised = prepare(target.address, ctx, security=target.security)
    except SetupError as exc:
        return _could_not_run(f"setting up: {exc}")
    canary: Canary | None = None
    if args.canary_records > 0:
        canary = Canary(target.address, args.seed, args.canary_records, target.security)
        try:
            canary.write()
        except CanaryError as exc:
            return _could_not_run(f"durability canary: {exc}")
        say(f"canary: {len(canary.acked)} records acknowledged (acks=-1) in {canary.topic}")
    try:
        plan = CasePlan(args.seed, advertised, ctx, apis,
                        Ratios(valid=args.valid_ratio, field=(1 - args.valid_ratio) * 0.65))
    except ValueError as exc:
        return _could_not_run(str(exc))
    plan.preload()
    say(f"fuzzing {target.name} at {target.address}: {len(plan.keys)} APIs, "
        f"{sum(len(v) for v in plan.versions.values())} api/versions, seed {args.seed}, "
        f"{args.concurrency} connections, hang bound {args.hang_s:g} s")
    engine = Engine(plan, target, requests=args.requests, time_s=args.time, concurrency=args.concurrency,
                    hang_s=args.hang_s, probe_every=args.probe_every,
                    after_restart=canary.check if canary else None, progress=say)
    cpu_before = time.process_time()
    stats = asyncio.run(engine.run())
    sasl_stats = _sasl_phase(args, target, advertised, out)
    stats.fuzzer_cpu_s = time.process_time() - cpu_before
    if canary is not None:
        stats.lost = max(stats.lost, canary.check())
        if stats.lost:
            say(f"canary: {stats.lost} of {len(canary.acked)} acknowledged records missing or changed "
                f"in {canary.topic} (last fetch answer: {canary.last_answer or 'records'})")
    findings = shrink_findings(args, target, stats, out)
    handler_errors = target.log_text().count("Traceback (most recent call last)")
    summary = summarise(args, target, stats, findings, handler_errors, time.monotonic() - started)
    if sasl_stats is not None:
        summary["sasl"] = {"cases": sasl_stats.cases, "outcomes": dict(sasl_stats.counts),
                           "by_kind": {k: dict(v) for k, v in sasl_stats.by_kind.items()},
                           "crashes": len(sasl_stats.crashes), "hangs": len(sasl_stats.hangs)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print_summary(stats, target, findings, handler_errors, out)
    return verdict(stats, target, args.rss_limit_mb, sasl_stats)


def _sasl_phase(
    args: argparse.Namespace, target: FuzzTarget, advertised: dict[int, tuple[int, int]], out: Path
) -> SaslStats | None:
    """The SASL exchange fuzzed (:mod:`.sasl`) when the target is reached over SASL; its crashes and
    hangs written as ``sasl-*.bin`` reproducers (the frames, in order)."""
    if args.sasl_cases <= 0 or target.security is None or not target.security.sasl:
        return None
    version = min(2, advertised.get(36, (0, 1))[1])
    sasl_stats = asyncio.run(run_sasl_phase(target, args.seed, args.sasl_cases, args.hang_s, version,
                                            progress=say))
    for outcome, cases in ((DIED, sasl_stats.crashes), (HANG, sasl_stats.hangs)):
        for case in cases[: args.max_shrink]:
            out.mkdir(parents=True, exist_ok=True)
            path = out / reproducer_name(outcome, case)
            path.write_bytes(b"".join(case.sent))
            say(f"sasl {outcome} ({case.kind}, case {case.index}): {path}")
            say(f"  replay: kafka-harness fuzz --replay {path} --target {args.target}"
                + (f" --security {args.security}" if args.security else "")
                + (f" --command-config {args.command_config}" if args.command_config else ""))
    return sasl_stats


def verdict(stats: Stats, target: FuzzTarget, rss_limit_mb: float, sasl: SaslStats | None = None) -> int:
    crashes, hangs = len(stats.crashes), stats.total(HANG)
    if sasl is not None:
        crashes, hangs = crashes + len(sasl.crashes), hangs + len(sasl.hangs)
    rss = target.rss_peak_mb
    valid = crashes == 0 and hangs == 0 and stats.lost == 0 and (not target.local or rss <= rss_limit_mb)
    print(f"VERDICT: {'valid' if valid else 'invalid'} requests={stats.requests} crashes={crashes} "
          f"hangs={hangs} rss_peak_mb={round(rss)} lost={stats.lost}")
    return 0 if valid else 1


# -- crashes and hangs: confirm alone, shrink, write -------------------------------------------------


def shrink_findings(
    args: argparse.Namespace, target: FuzzTarget, stats: Stats, out: Path
) -> list[dict[str, Any]]:
    """Confirm each crash's candidates and each hang alone; shrink what reproduces; write files."""
    findings: list[dict[str, Any]] = []
    seen: set[tuple[str, int, str]] = set()
    todo: list[tuple[str, Any]] = [(DIED, event) for event in stats.crashes]
    todo += [(HANG, case) for case in stats.hangs]
    for outcome, item in todo:
        if len(findings) >= args.max_shrink:
            break
        candidates = item.candidates if outcome == DIED else [item]
        fresh = [c for c in candidates if (c.api, c.version, outcome) not in seen]
        if not fresh:
            continue
        if not target.local and outcome == DIED:
            for case in fresh[:3]:  # an attached target cannot be restarted: write, unconfirmed
                path = write_finding(out, outcome, case.frame, _meta(args, case, False, None))
                findings.append({"outcome": outcome, "file": str(path), "confirmed": False})
            continue
        for case in fresh:
            if not _reproduces(target, case.frame, outcome, args.hang_s):
                continue
            seen.add((case.api, case.version, outcome))
            say(f"shrinking the {outcome} of request {case.index} ({case.api} v{case.version}, "
                f"{len(case.frame)} bytes)")

            def reproduces(frame: bytes, outcome: str = outcome) -> bool:
                return _reproduces(target, frame, outcome, args.hang_s)

            shrunk = ddmin(case.frame, reproduces, max_attempts=200, time_s=args.shrink_time, keep=4)
            path = write_finding(out, outcome, shrunk.frame, _meta(args, case, True, shrunk))
            say(f"{outcome}: {len(case.frame)} -> {len(shrunk.frame)} bytes "
                f"in {shrunk.attempts} attempts: {path}")
            say(f"  replay: kafka-harness fuzz --replay {path} --target {args.target}"
                + "".join(f" --broker-config {kv}" for kv in args.broker_config))
            findings.append({"outcome": outcome, "file": str(path), "confirmed": True, "index": case.index,
                             "bytes": len(shrunk.frame), "original_bytes": len(case.frame)})
            break
        else:
            findings.append({"outcome": outcome, "confirmed": False,
                             "candidates": [c.index for c in fresh],
                             "note": "no request in flight reproduces it alone"})
    if target.local:
        from .replay import ensure_up

        ensure_up(target, args.hang_s)
    return findings


def _reproduces(target: FuzzTarget, frame: bytes, outcome: str, hang_s: float) -> bool:
    return send_one(target, frame, hang_s).cls == outcome


def _meta(args: argparse.Namespace, case: Any, confirmed: bool, shrunk: Any) -> dict[str, Any]:
    return {
        "target": args.target,
        "broker_configs": list(args.broker_config),
        "seed": args.seed,
        "index": case.index,
        "kind": case.kind,
        "mutation": case.detail,
        "confirmed_alone": confirmed,
        "original_hex": case.frame.hex(),
        "shrink_attempts": shrunk.attempts if shrunk else 0,
        "shrink_complete": shrunk.complete if shrunk else False,
        "replay": f"kafka-harness fuzz --replay FILE --target {args.target}",
    }


# -- output ----------------------------------------------------------------------------------------


def per_api(stats: Stats) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for (api, _version), counts in stats.counts.items():
        out.setdefault(api, Counter()).update(counts)
    return out


def print_summary(stats: Stats, target: FuzzTarget, findings: list[dict[str, Any]], handler_errors: int,
                  out: Path) -> None:
    say(f"requests: {stats.requests} in {stats.wall_s:.1f} s ({stats.rate:.0f} req/s), "
        f"{stats.probes} liveness probes, {target.restarts} restarts; CPU: fuzzer {stats.fuzzer_cpu_s:.1f} s"
        + (f", target {target.cpu_total_s:.1f} s" if target.local else ""))
    if target.local:
        say(f"target process: rss_peak_mb={target.rss_peak_mb:.1f} open_fds_peak={target.fds_peak} "
            f"handler_tracebacks={handler_errors}")
    totals = Counter[str]()
    for counts in stats.counts.values():
        totals.update(counts)
    say("outcomes: " + " ".join(f"{c}={totals[c]}" for c in CLASSES))
    say("by kind: " + "; ".join(f"{k}: " + " ".join(f"{c}={n}" for c, n in sorted(v.items()))
                                for k, v in sorted(stats.by_kind.items())))
    say("per api:")
    for api, counts in sorted(per_api(stats).items()):
        say(f"  {api:34} " + " ".join(f"{c}={counts[c]}" for c in CLASSES if counts[c]))
    for (api, version, cls), examples in sorted(stats.examples.items()):
        if cls in ("undecodable", HANG, DIED):
            say(f"  {cls}: {api} v{version}: {examples[0].detail[:200]}")
    if stats.stopped:
        say(f"run stopped early: {stats.stopped}")
    for f in findings:
        say(f"finding: {f}")
    say(f"summary: {out / 'summary.json'}")


def summarise(args: argparse.Namespace, target: FuzzTarget, stats: Stats, findings: list[dict[str, Any]],
              handler_errors: int, total_s: float) -> dict[str, Any]:
    return {
        "target": args.target,
        "broker_configs": list(args.broker_config),
        "seed": args.seed,
        "requests": stats.requests,
        "wall_s": round(stats.wall_s, 2),
        "total_s": round(total_s, 2),
        "requests_per_s": round(stats.rate, 1),
        "fuzzer_cpu_s": round(stats.fuzzer_cpu_s, 1),
        "target_cpu_s": round(target.cpu_total_s, 1),
        "crashes": [{"at_request": e.at_request, "reason": e.reason, "lost_after": e.lost_after,
                     "candidates": [c.index for c in e.candidates]} for e in stats.crashes],
        "hangs": stats.total(HANG),
        "lost": stats.lost,
        "rss_peak_mb": round(target.rss_peak_mb, 1),
        "open_fds_peak": target.fds_peak,
        "handler_tracebacks": handler_errors,
        "restarts": target.restarts,
        "probes": stats.probes,
        "stopped": stats.stopped,
        "outcomes": {f"{api} v{version}": dict(c) for (api, version), c in sorted(stats.counts.items())},
        "by_kind": {k: dict(v) for k, v in stats.by_kind.items()},
        "examples": [{"api": api, "version": v, "class": cls, "index": e.index, "kind": e.kind,
                      "detail": e.detail, "hex": e.frame[:512].hex()}
                     for (api, v, cls), exs in sorted(stats.examples.items()) for e in exs],
        "findings": findings,
    }


# -- replay ----------------------------------------------------------------------------------------


def replay_main(args: argparse.Namespace) -> int:
    try:
        frame = read_frame_file(args.replay)
    except (OSError, ValueError) as exc:
        return _could_not_run(str(exc))
    try:
        target = open_target(args.target, list(args.broker_config), args.security, args.client_security)
    except (TargetUnavailableError, ValueError, OSError) as exc:
        return _could_not_run(f"target {args.target}: {exc}")
    try:
        if args.replay.name.startswith(SASL_PREFIX):  # the SASL phase's frames, unauthenticated
            ensure_up(target, args.hang_s)
            cls = asyncio.run(replay_frames(target, split_frames(frame), args.hang_s))
            outcome = Outcome(cls, "SASL frames replayed on an unauthenticated connection")
        else:
            outcome = send_one(target, frame, args.hang_s)
    finally:
        target.close()
    reproduced = outcome.cls in (DIED, HANG)
    print(f"OUTCOME: {outcome.cls}" + (f" ({outcome.detail})" if outcome.detail else ""))
    print(f"VERDICT: {'invalid' if reproduced else 'valid'} requests=1 crashes={int(outcome.cls == DIED)} "
          f"hangs={int(outcome.cls == HANG)} rss_peak_mb={round(target.rss_peak_mb)} lost=0")
    return 1 if reproduced else 0
