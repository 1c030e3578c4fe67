"""``kafka-harness fuzz --diff A,B``: the same requests to two targets, outcome classes compared.

Two Kafka-compatible brokers should agree on what to do with a request: answer it, or close the
connection because it cannot be parsed. Where they differ, one of them (or both) departs from
Kafka. Both targets get the cases of one plan, built from the API versions both advertise and
with no topic ids in the context (each target has its own), so case ``i`` is the same bytes for
both. State still differs between runs (a topic one target created and the other refused), so
a difference is a lead to read, not a verdict: the command judges only crashes and hangs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

from fixtures.targets import TargetUnavailableError

from .classify import HANG
from .engine import Engine, Stats
from .generate import Context
from .plan import CasePlan
from .prepare import SetupError, prepare
from .target import FuzzTarget, open_target


def _intersection(a: dict[int, tuple[int, int]], b: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    out = {}
    for key in sorted(set(a) & set(b)):
        lo, hi = max(a[key][0], b[key][0]), min(a[key][1], b[key][1])
        if lo <= hi:
            out[key] = (lo, hi)
    return out


def diff_main(args: argparse.Namespace, apis: list[int] | None) -> int:
    from .cli import _could_not_run, default_out, say

    names = [n.strip() for n in str(args.diff).split(",") if n.strip()]
    if len(names) != 2:
        return _could_not_run("--diff takes two targets, A,B")
    targets: list[FuzzTarget] = []
    try:
        for name in names:
            reference = name == "reference"
            configs = list(args.broker_config) if reference else []
            security = args.security if reference else None  # the other target: --command-config
            targets.append(open_target(name, configs, security, args.client_security))
        contexts = [Context() for _ in targets]
        pairs = zip(targets, contexts, strict=True)
        advertised = [prepare(t.address, ctx, with_ids=False, security=t.security) for t, ctx in pairs]
        common = _intersection(advertised[0], advertised[1])
        plan_ctx = contexts[0]
        plan = CasePlan(args.seed, common, plan_ctx, apis)
        plan.preload()
        runs: list[Stats] = []
        for target in targets:
            say(f"diff: {args.requests} requests to {target.name}")
            engine = Engine(plan, target, requests=args.requests, time_s=args.time,
                            concurrency=args.concurrency, hang_s=args.hang_s, probe_every=args.probe_every,
                            record_outcomes=True, progress=say)
            runs.append(asyncio.run(engine.run()))
    except (TargetUnavailableError, SetupError, ValueError, OSError) as exc:
        return _could_not_run(f"diff: {exc}")
    finally:
        for target in targets:
            target.close()
    out: Path = args.out or default_out(f"diff-{names[0]}-{names[1]}", args.seed)
    table, examples = compare(plan, runs[0], runs[1])
    say(f"{'api':32} {'version':>7}  {names[0] + ' -> ' + names[1]:40} {'count':>6}")
    for (api, version, a, b), count in sorted(table.items(), key=lambda kv: (-kv[1], kv[0])):
        say(f"{api:32} {version:>7}  {a + ' -> ' + b:40} {count:>6}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "diff.json").write_text(json.dumps({
        "targets": names, "seed": args.seed, "requests": [runs[0].requests, runs[1].requests],
        "differences": [{"api": k[0], "version": k[1], names[0]: k[2], names[1]: k[3], "count": n,
                         "examples": examples[k]} for k, n in sorted(table.items())],
    }, indent=2) + "\n")
    compared = min(r.requests for r in runs)
    say(f"differences: {sum(table.values())} of {compared} requests; {out / 'diff.json'}")
    crashes = [len(r.crashes) for r in runs]
    hangs = [r.total(HANG) for r in runs]
    valid = not any(crashes) and not any(hangs)
    print(f"VERDICT: {'valid' if valid else 'invalid'} requests={runs[0].requests} "
          f"differences={sum(table.values())} crashes={sum(crashes)} hangs={sum(hangs)}")
    return 0 if valid else 1


DiffKey = tuple[str, int, str, str]


def compare(
    plan: CasePlan, a: Stats, b: Stats
) -> tuple[Counter[DiffKey], dict[DiffKey, list[dict[str, Any]]]]:
    """Differences per (api, version, class in A, class in B), with up to three examples each."""
    table: Counter[DiffKey] = Counter()
    examples: dict[DiffKey, list[dict[str, Any]]] = {}
    for index in sorted(set(a.outcomes) & set(b.outcomes)):
        ca, cb = a.outcomes[index], b.outcomes[index]
        if ca == cb or {ca, cb} <= {"decode_ok", "answered"}:
            continue
        case = plan.case(index)
        key = (case.api, case.version, ca, cb)
        table[key] += 1
        bucket = examples.setdefault(key, [])
        if len(bucket) < 3:
            bucket.append({"index": index, "kind": case.kind, "detail": case.detail, "hex": case.frame.hex()})
    return table, examples

