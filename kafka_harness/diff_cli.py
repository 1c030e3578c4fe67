"""``kafka-harness diff --a T1 --b T2``: the same protocol exchanges against two targets, field by field.

A fixed script (ApiVersions, topic creation and its errors, Metadata,
Produce, Fetch, ListOffsets, FindCoordinator, InitProducerId, DescribeConfigs,
DeleteTopics) runs through the raw client against each target, at the highest
version both advertise, with the same names. Answers are compared as plain
data after normalizing what legitimately differs between two clusters (node
and cluster ids, topic ids, producer ids, hosts and ports, timestamps,
throttle times, free-text error messages). The differences are written as JSON
and as an Allure result; the verdict is valid when there are none.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixtures.targets import (
    TargetSession,
    TargetUnavailableError,
    add_security_options,
    parse_target,
    security_from_args,
)
from fixtures.wire import Capabilities, Exchange, NotAdvertisedError, WireClient, WireError, ops
from reference_impl.protocol.record_set import build_batch
from reports.paths import ALLURE_RESULTS, output

NORMALIZED = "<normalized>"
# fields whose values differ between any two clusters without saying anything about conformance
VOLATILE = {
    "node_id",
    "leader_id",
    "broker_id",
    "controller_id",
    "coordinator_id",
    "port",
    "host",
    "cluster_id",
    "topic_id",
    "producer_id",
    "throttle_time",
    "throttle_time_ms",
    "log_append_time",
    "timestamp",
    "max_timestamp",
    "base_timestamp",
    "member_id",
    "rack",
    "session_id",
    "error_message",
    "leader_epoch",
    "current_leader",
    "log_start_offset_timestamp",
    "head",
    "isr_nodes",
    "replica_nodes",
    "offline_replicas",
}
# lists whose entries carry one of these keys are compared as maps by it (order is not the rule checked)
KEYED_BY = ("api_key", "name", "partition_index", "partition", "index")


@dataclass
class Step:
    name: str
    run: Callable[[WireClient, Capabilities, dict[str, int]], object]
    apis: tuple[str, ...]


@dataclass
class Recorded:
    exchanges: list[tuple[str, Exchange]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def _script(topic: str, group: str) -> list[Step]:
    stamp = int(time.time() * 1000) - 60_000
    batch = build_batch([(b"k1", b"one"), (None, b"two"), (b"k3", b"three")], base_timestamp=stamp)

    def v(caps: Capabilities, common: dict[str, int], api: str) -> int:
        return min(caps.best(api), common.get(api, caps.best(api)))

    def create(w: WireClient, c: Capabilities, vs: dict[str, int]) -> None:
        ops.create_topic(w, c, topic, 3, version=v(c, vs, "create_topics"))

    return [
        Step(
            "ApiVersions",
            lambda w, c, vs: w.request(
                "api_versions", 3, client_software_name="kafka-harness", client_software_version="0.1.0"
            ),
            ("api_versions",),
        ),
        Step("CreateTopics", create, ("create_topics",)),
        Step("CreateTopics again (TOPIC_ALREADY_EXISTS)", create, ("create_topics",)),
        Step(
            "Metadata",
            lambda w, c, vs: ops.metadata(w, c, [topic], version=v(c, vs, "metadata")),
            ("metadata",),
        ),
        Step(
            "Produce 3 records in one batch",
            lambda w, c, vs: ops.produce_batch(w, c, topic, batch, version=v(c, vs, "produce")),
            ("produce",),
        ),
        Step(
            "Fetch from 0",
            lambda w, c, vs: ops.fetch(w, c, topic, 0, version=v(c, vs, "fetch"), max_wait_ms=100),
            ("fetch",),
        ),
        Step(
            "ListOffsets earliest, latest, by time",
            lambda w, c, vs: [
                ops.list_offset(w, c, topic, ts, version=v(c, vs, "list_offsets"))
                for ts in (ops.EARLIEST_TIMESTAMP, ops.LATEST_TIMESTAMP, stamp)
            ],
            ("list_offsets",),
        ),
        Step(
            "FindCoordinator (group)",
            lambda w, c, vs: ops.find_coordinator(w, c, group, version=v(c, vs, "find_coordinator")),
            ("find_coordinator",),
        ),
        Step(
            "InitProducerId (idempotent)",
            lambda w, c, vs: ops.init_producer_id(w, c, version=v(c, vs, "init_producer_id")),
            ("init_producer_id",),
        ),
        Step(
            "DescribeConfigs (topic)",
            lambda w, c, vs: w.request(
                "describe_configs",
                v(c, vs, "describe_configs"),
                include_synonyms=False,
                include_documentation=False,
                resources=[
                    {
                        "resource_type": 2,
                        "resource_name": topic,
                        "configuration_keys": ["cleanup.policy", "retention.ms"],
                    }
                ],
            ),
            ("describe_configs",),
        ),
        Step(
            "Produce to an unknown topic",
            lambda w, c, vs: ops.produce_batch(
                w, c, topic + "-missing", batch, version=min(v(c, vs, "produce"), 12)
            ),
            ("produce",),
        ),
        Step(
            "DeleteTopics",
            lambda w, c, vs: w.request(
                "delete_topics",
                v(c, vs, "delete_topics"),
                timeout=15_000,
                topic_names=[topic],
                topics=[{"name": topic}],
            ),
            ("delete_topics",),
        ),
    ]


def run_script(session: TargetSession, steps: list[Step], common: dict[str, int]) -> Recorded:
    recorded = Recorded()
    current = {"step": ""}

    def observe(exchange: Exchange) -> None:
        recorded.exchanges.append((current["step"], exchange))

    caps = session.capabilities()
    with WireClient(session.first_address, observer=observe) as wire:
        for step in steps:
            current["step"] = step.name
            try:
                step.run(wire, caps, common)
            except (WireError, NotAdvertisedError, OSError, ValueError, TypeError) as exc:
                recorded.errors[step.name] = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, WireError | OSError):  # the connection is gone: reopen for the next step
                    wire.close()
                    return _continue(session, steps, step, common, recorded, current)
    return recorded


def _continue(
    session: TargetSession,
    steps: list[Step],
    failed: Step,
    common: dict[str, int],
    recorded: Recorded,
    current: dict[str, str],
) -> Recorded:
    rest = steps[steps.index(failed) + 1 :]
    if rest:
        more = run_script(session, rest, common)
        recorded.exchanges += more.exchanges
        recorded.errors.update(more.errors)
    return recorded


def normalize(value: Any, key: str = "") -> Any:
    if key in VOLATILE and value not in (None, "", [], -1):
        return NORMALIZED
    if isinstance(value, dict):
        return {k: normalize(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [normalize(v, key) for v in value]
        for k in KEYED_BY:
            if items and all(isinstance(i, dict) and k in i for i in items):
                keys = [str(i[k]) for i in items]
                if len(set(keys)) == len(keys):
                    return {f"{k}={n}": i for n, i in zip(keys, items, strict=True)}
        return items
    return value


def differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple[str, Any, Any]] = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                out += differences(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        if len(a) != len(b):
            out.append((f"{path}.length", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [(path or ".", a, b)]


def compare(a: Recorded, b: Recorded, apis: dict[str, tuple[str, ...]] | None = None) -> list[dict[str, Any]]:
    """Field-level differences, exchange by exchange (the n-th exchange of a step against the n-th); with
    ``apis`` (step → APIs it is about), helper exchanges (a Metadata to learn a topic id) are left out."""
    apis = apis or {}
    out: list[dict[str, Any]] = []
    steps = list(dict.fromkeys([s for s, _ in a.exchanges] + [s for s, _ in b.exchanges]))
    for step in steps:
        about = apis.get(step, ())
        xa = [e for s, e in a.exchanges if s == step and (not about or e.api in about)]
        xb = [e for s, e in b.exchanges if s == step and (not about or e.api in about)]
        for i in range(max(len(xa), len(xb))):
            ea, eb = (xa[i] if i < len(xa) else None), (xb[i] if i < len(xb) else None)
            either = ea or eb
            where = {"step": step, "exchange": i, "api": either.api if either is not None else "?"}
            if ea is None or eb is None:
                out.append(
                    {
                        **where,
                        "path": "(exchange)",
                        "a": "sent" if ea else "not sent",
                        "b": "sent" if eb else "not sent",
                    }
                )
                continue
            if ea.version != eb.version:
                out.append({**where, "path": "(version)", "a": ea.version, "b": eb.version})
            na = normalize(ea.response if ea.response is not None else {"(failure)": ea.error})
            nb = normalize(eb.response if eb.response is not None else {"(failure)": eb.error})
            out += [{**where, "path": p, "a": x, "b": y} for p, x, y in differences(na, nb)]
    for step in sorted(set(a.errors) | set(b.errors)):
        if a.errors.get(step) != b.errors.get(step):
            out.append(
                {
                    "step": step,
                    "exchange": -1,
                    "api": "(harness)",
                    "path": "(error)",
                    "a": a.errors.get(step),
                    "b": b.errors.get(step),
                }
            )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness diff", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--a", required=True, help="first target (reference, tansu, bootstrap:..., container[:IMAGE])"
    )
    parser.add_argument("--b", required=True, help="second target")
    parser.add_argument(
        "--out", type=Path, default=None, help="JSON file (default reports/output/diff/A-vs-B.json)"
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=ALLURE_RESULTS,
        help="Allure results folder for the diff's result",
    )
    add_security_options(parser, launches=True)
    args = parser.parse_args(argv)
    try:
        specs = parse_target(args.a), parse_target(args.b)
        security_from_args(args, as_default=True)  # both targets' raw clients use it
        # two secured references share one CA and one client.properties (the raw clients' default)
        shared = Path(tempfile.mkdtemp(prefix="kh-security-")) if args.security else None
        sessions = [TargetSession(s, security=args.security, _security_dir=shared) for s in specs]
    except ValueError as exc:
        print(f"kafka-harness diff: {exc}", file=sys.stderr)
        return 2
    label = f"{specs[0].name}-vs-{specs[1].name}"
    out = args.out or output("diff") / f"{label}.json"
    start_ms = int(time.time() * 1000)
    try:
        for s in sessions:
            s.target()
        caps = [s.capabilities() for s in sessions]
        name = f"kh-diff-{uuid.uuid4().hex[:8]}"
        steps = _script(name, name + "-group")
        common = {
            api: min(c.best(api) for c in caps)
            for step in steps
            for api in step.apis
            if all(c.versions(api) for c in caps)
        }
        recorded = [run_script(s, steps, common) for s in sessions]
    except (TargetUnavailableError, OSError, WireError) as exc:
        print(f"kafka-harness diff: could not run: {exc}", file=sys.stderr)
        print("VERDICT: invalid could_not_run=1")
        return 2
    finally:
        for s in sessions:
            s.close()
        if shared is not None:
            shutil.rmtree(shared, ignore_errors=True)
    found = compare(recorded[0], recorded[1], apis={st.name: st.apis for st in steps})
    report = {
        "a": args.a,
        "b": args.b,
        "versions": common,
        "normalized_fields": sorted(VOLATILE),
        "steps": [
            {
                "step": st.name,
                "error_a": recorded[0].errors.get(st.name),
                "error_b": recorded[1].errors.get(st.name),
            }
            for st in steps
        ],
        "differences": found,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    for d in found:
        print(f"{d['step']} [{d['api']}] {d['path']}: {args.a}={d['a']!r:.80} {args.b}={d['b']!r:.80}")
    _write_allure(args, out, found, steps, start_ms)
    per_step = {st.name: sum(1 for d in found if d["step"] == st.name) for st in steps}
    print(f"differences written to {out}")
    verdict = "valid" if not found else "invalid"
    print(
        f"VERDICT: {verdict} differences={len(found)} steps={len(steps)} "
        f"steps_differing={sum(1 for n in per_step.values() if n)}"
    )
    return 0 if not found else 1


def _write_allure(
    args: argparse.Namespace, out: Path, found: list[dict[str, Any]], steps: list[Step], start_ms: int
) -> None:
    from reports import allure

    allure.write_result(
        args.results,
        name=f"diff {args.a} vs {args.b}",
        full_name=f"kafka-harness diff {args.a} {args.b}",
        epic="Conformance",
        feature="Diff between targets",
        story="the same exchanges answer the same, up to ids and timestamps",
        passed=not found,
        message=f"{len(found)} field-level differences" if found else "",
        parameters={"target a": args.a, "target b": args.b},
        attachments=[("differences (JSON)", out)],
        steps=[(st.name, not any(d["step"] == st.name for d in found)) for st in steps],
        start_ms=start_ms,
    )
