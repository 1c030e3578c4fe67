"""Chaos suite helpers: run a campaign in-process into ``tmp_path`` and publish it to Allure.

Tests marked ``chaos_full`` are the on-demand set (``tox -e chaos`` sets ``KH_CHAOS_FULL=1``;
:mod:`fixtures.hooks.on_demand`); the default run keeps the short smoke and power campaigns only.

A campaign on the reference broker gets the run's broker configs (``--broker-config``) after its
own, as every reference broker a run launches does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaos.checkers import CheckResult
from chaos.history import History, read_jsonl
from chaos.plot import timeline_png
from chaos.runner import Campaign, Outcome, run
from fixtures.plugin import session_of
from reports import allure

_RUN_BROKER_CONFIGS: list[str] = []


@pytest.hookimpl(trylast=True)  # after the harness plugin has made the run's target session
def pytest_configure(config: pytest.Config) -> None:
    _RUN_BROKER_CONFIGS[:] = session_of(config).broker_configs


def campaign(tmp_path: Path, **options: Any) -> tuple[Campaign, Outcome]:
    """Run one campaign (output under tmp_path) and attach its history, plot and anomalies to Allure.

    The restart check's bound is 10 s here (30 s by default): a broker that lost or hides what it
    acknowledged shows it at once, and the reference broker's records are readable in about a second."""
    if options.get("target") == "reference" and _RUN_BROKER_CONFIGS:
        options["broker_configs"] = [*options.get("broker_configs", []), *_RUN_BROKER_CONFIGS]
    c = Campaign(out_dir=tmp_path / "campaign", drain_s=20.0, **{"restart_bound_s": 10.0, **options})
    lines: list[str] = []
    outcome = run(c, progress=lines.append)
    result = outcome.result
    png = timeline_png(
        read_jsonl(outcome.history_path),
        result.availability,
        c.out_dir / "timeline.png",
        f"{c.target} seed={c.seed} {','.join(c.faults)}",
    )
    allure.label(epic="Chaos", feature=f"{c.workload} on {c.target}", story=",".join(c.faults))
    for key, value in c.meta().items():
        allure.parameter(key, value)
    for name, items in result.anomalies.items():
        if items:
            with allure.step(f"{name}: {len(items)}" + ("" if name in result.bad else " (allowed)")):
                allure.attach_json(name, [a.to_json() for a in items[:20]])
    allure.attach_text("progress", "\n".join(lines))
    allure.attach_file("history.jsonl", outcome.history_path)
    allure.attach_file("timeline.png", png)
    allure.attach_text("verdict", result.verdict_line())
    return c, outcome


def valid_campaign(
    tmp_path: Path,
    *,
    workload: str,
    faults: list[str],
    seed: int,
    rate: int,
    time_s: float = 6,
    unjudged: Callable[[CheckResult], str | None] | None = None,
) -> tuple[CheckResult, History]:
    """Run one short campaign on the reference broker (no restart check) and expect it valid; its
    result and history. ``unjudged`` may name why a result the checker could not judge says the run
    itself failed (the test fails with that reason instead of the verdict line)."""
    _c, outcome = campaign(
        tmp_path,
        target="reference",
        workload=workload,
        faults=faults,
        time_s=time_s,
        rate=rate,
        seed=seed,
        restart_check=False,
    )
    result = outcome.result
    reason = unjudged(result) if unjudged is not None and result.valid == "unknown" else None
    if reason is not None:
        pytest.fail(f"{reason}: {result.verdict_line()}")
    assert result.valid is True, result.verdict_line()
    return result, read_jsonl(outcome.history_path)
