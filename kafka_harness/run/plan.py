"""What the main job runs for a target and a profile: an ordered list of stages with budgets.

Profiles:

* ``quick`` (≤ 10 minutes here): the smoke round trip, conformance and the
  client matrix, the property suite at its CI budget with the mutation check,
  35 s of protocol fuzzing (``kafka-harness fuzz``: no crash, no hang, RSS bound,
  the durability canary intact), two short chaos campaigns (kill, with leader and controller isolation on a
  cluster; client-link partition with latency) and a 100,000-record Spark load
  with verification.
* ``full``: the same suites, the property suite's deep profile, 10 minutes of fuzzing, the chaos
  campaigns of ``tox -e chaos`` (60 s, every client-link fault, the
  transactional workload) and a 1,000,000-record load.

With ``brokers`` ≥ 3 (the default for the reference target) the conformance
suites and the client matrix run against a reference cluster of that size (the
raw-protocol suites send each request to the partition's leader, the
controller or the coordinator, as clients do), and the chaos stages run on a
replicated cluster (RF=3, min.insync.replicas=2) with proxies on every client
and broker-to-broker link.

Chaos needs a target the harness launches itself (it kills nodes and puts
proxies in front of them); against ``bootstrap:`` and ``container`` targets
those stages are left out and the summary says so. A stage may be declared an
expected deviation of a target in its expectations file under the id
``stage::NAME`` (with reason and evidence), as tests are.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from chaos.runner import LAUNCHED, UNPROXIED

from .stages import Stage, python_cli, python_pytest

ROOT = Path(__file__).resolve().parents[2]
EXPECTATIONS = ROOT / "suites" / "expectations"
PROFILES = ("quick", "full")
SECURED_BUDGET = 2.0
"""The conformance stage's budget on a secured target: every connection its hundreds of tests open
does a TLS handshake and a SCRAM exchange first, and the reference's TLS runs in Python."""
LAUNCHED_KINDS = LAUNCHED
"""Targets the chaos campaigns launch themselves (process faults need the process)."""
PROPERTY_SUITE = "reference_impl/acceptance/property"
"""The replication property model and mutation check: they run the reference broker's own state
machines in-process, so the stage is the same whatever the target."""


def stage_expectations(target_name: str) -> dict[str, tuple[str, bool]]:
    """``stage::NAME`` entries of the target's expectations file: stage name → (reason, strict).

    Entries are strict unless they say ``strict = false`` (a deviation that depends on fault timing
    and does not show in every run)."""
    path = EXPECTATIONS / f"{target_name}.toml"
    if not path.exists():
        return {}
    with path.open("rb") as f:
        data = tomllib.load(f)
    return {
        key.removeprefix("stage::"): (str(entry.get("reason", "")), bool(entry.get("strict", True)))
        for key, entry in data.items()
        if key.startswith("stage::") and isinstance(entry, dict)
    }


def build_plan(
    target: str,
    kind: str,
    target_name: str,
    profile: str,
    work: Path,
    brokers: int,
    security: Sequence[str] = (),
) -> list[Stage]:
    """The stages for ``target`` (its spec as typed) under ``profile``; results go below ``work``.
    ``security`` (``--security P`` or ``--command-config FILE``) goes to every stage that reaches the
    target, so each launches it secured, or connects with those client settings."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (quick or full)")
    full = profile == "full"
    expected = stage_expectations(target_name)

    def results(name: str) -> str:
        return str(work / "results" / name)

    def out(name: str) -> Path:
        return work / "out" / name

    def stage(name: str, level: str, argv: list[str], budget_s: float, out_dir: Path | None = None) -> Stage:
        reason, strict = expected.get(name, (None, True))
        return Stage(name, level, argv, budget_s, out_dir, reason, not strict)

    pytest_common = ["-q", "-p", "no:cacheprovider", "--timeout", "600" if full else "300"]
    replicated = kind == "reference" and brokers >= 3
    sized = ["--brokers", str(brokers)] if replicated else []
    plan = [
        stage("smoke", "Clients", [sys.executable, "-m", "kafka_harness.run.smoke", "--target", target,
                                   *security, "--alluredir", results("smoke")], 240),
        stage(
            "conformance",
            "Conformance",
            python_pytest("suites/conformance", "suites/clients", "--target", target, *sized, *security,
                          "--alluredir", results("conformance"), *pytest_common),
            (1200 if full else 600) * (SECURED_BUDGET if security else 1),
        ),
        stage(
            "property",
            "Property",
            python_pytest(PROPERTY_SUITE, "--alluredir", results("property"), *pytest_common,
                          *(["--hypothesis-profile", "deep", "--timeout", "0"] if full else [])),
            3600 if full else 300,
        ),
    ]
    fuzz_s = 600 if full else 35
    plan.append(
        stage(
            "fuzz",
            "Fuzz",
            python_cli("fuzz", "--target", target, *security, "--time", str(fuzz_s), "--requests", "1000000",
                       "--seed", "1", "--max-shrink", "1", "--shrink-time", "10", "--out", str(out("fuzz"))),
            fuzz_s + (120 if full else 25),
            out("fuzz"),
        )
    )
    if kind in LAUNCHED_KINDS:
        campaigns = (
            [("chaos-kill", "kill,pause", "queue", 60),
             ("chaos-links", "partition-client,latency,slicer", "queue", 60),
             ("chaos-transactional", "kill", "transactional", 60)]
            if full
            else [("chaos-kill", "kill", "queue", 15),
                  ("chaos-links", "partition-client,latency", "queue", 15)]
        )
        if kind in UNPROXIED:
            # link faults need a proxy on every link; an unproxied target gets the process faults only
            campaigns = [c for c in campaigns if c[0] != "chaos-links"]
        cluster = ["--brokers", str(brokers), "--rf", "3", "--min-isr", "2"] if replicated else []
        for name, faults, workload, seconds in campaigns:
            if replicated and name == "chaos-kill":
                faults += ",partition-leader,partition-controller"
            plan.append(
                stage(
                    name,
                    "Chaos",
                    python_cli("chaos", "--target", target, *security, "--workload", workload,
                               "--nemesis", faults, "--time", str(seconds), "--seed", "7",
                               "--out", str(out(name)),
                               "--alluredir", results(name), *cluster),
                    seconds + 240,
                    out(name),
                )
            )
    records = 1_000_000 if full else 100_000
    plan.append(
        stage(
            "load",
            "Load",
            python_cli("load", "--target", target, *security, "--records", str(records), "--verify",
                       "--out", str(out("load")), "--alluredir", results("load")),
            900 if full else 420,
            out("load"),
        )
    )
    return plan
