"""The simulator benchmark runs and reports what it measured (its figures are not asserted)."""

from __future__ import annotations

import re

import pytest

from reference_impl.sim import bench


def test_bench_reports_node_steps_and_produce_replicate_steps(capsys: pytest.CaptureFixture[str]) -> None:
    bench.main(["--virtual-ms", "300", "--schedules", "1"])
    out = capsys.readouterr().out
    assert {"replication", "replication+invariants", "faults", "brokers", "brokers+invariants"} <= {
        line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")
    }
    acknowledged = re.findall(r"([\d,]+) records acknowledged in", out)
    assert len(acknowledged) == 2 and all(int(n.replace(",", "")) > 0 for n in acknowledged), out
    both = re.findall(r"([\d,]+) client appends \+ ([\d,]+) node steps", out)
    assert len(both) == 2, out
    for appends, steps in both:
        assert int(appends.replace(",", "")) > 0 and int(steps.replace(",", "")) > 0, out
