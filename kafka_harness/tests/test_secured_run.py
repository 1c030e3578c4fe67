"""The main job, chaos, load, smoke and bench on a secured target (issue 18): the options reach every
stage, wrong combinations are one line and exit 2, and one stage runs end to end on SASL_SSL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chaos import cli as chaos_cli
from fixtures.targets.secured import security_configs
from kafka_harness import main_job
from kafka_harness.bench import cli as bench_cli
from kafka_harness.run.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]
TARGET_STAGES = {"smoke", "conformance", "fuzz", "chaos-kill", "chaos-links", "load"}


@pytest.mark.parametrize(
    "security", [["--security", "sasl_ssl"], ["--command-config", "/x/client.properties"]]
)
def test_every_stage_that_reaches_the_target_gets_the_security(tmp_path: Path, security: list[str]) -> None:
    plan = build_plan("reference", "reference", "reference", "quick", tmp_path, 3, security)
    assert {s.name for s in plan} == TARGET_STAGES | {"property"}
    for stage in plan:
        given = any(stage.argv[i : i + 2] == security for i in range(len(stage.argv)))
        assert given == (stage.name in TARGET_STAGES), stage.name


def test_run_refuses_what_cannot_be_secured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_job.main(["--target", "bootstrap:127.0.0.1:1", "--security", "ssl", "--list"]) == 2
    assert "--security launches a reference" in capsys.readouterr().err
    assert main_job.main(["--command-config", str(tmp_path / "missing.properties"), "--list"]) == 2
    assert "cannot read --command-config" in capsys.readouterr().err
    props = tmp_path / "c.properties"
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=a\nsasl.password=b\n")
    assert main_job.main(["--command-config", str(props), "--security", "ssl", "--list"]) == 2
    assert "give it or --command-config" in capsys.readouterr().err
    assert main_job.main(["--command-config", str(props), "--list"]) == 0
    assert f"--command-config {props}" in capsys.readouterr().out


def test_chaos_takes_the_options_and_refuses_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = chaos_cli.parser().parse_args(["--target", "reference", "--security", "sasl_ssl"])
    assert args.security == "sasl_ssl"
    assert chaos_cli.main(["--command-config", str(tmp_path / "missing"), "--time", "1"]) == 2
    out = capsys.readouterr()
    assert "cannot read --command-config" in out.err and out.out.strip() == "VERDICT: could not run"


def test_bench_adds_a_secured_column_beside_plaintext() -> None:
    args = bench_cli._parse(["--targets", "reference", "--security", "sasl_ssl", "--security", "ssl"])
    assert args.specs == ["reference", "reference+sasl_ssl", "reference+ssl"]
    with pytest.raises(SystemExit):
        bench_cli._parse(["--targets", "tansu", "--security", "ssl"])


def test_a_cluster_is_secured_on_every_listener_and_link(tmp_path: Path) -> None:
    """One place builds the nodes' security: a SASL_SSL cluster maps its controller listener to
    SASL_SSL, brokers link with SCRAM-SHA-512 and controllers with PLAIN, each as admin."""
    setup = security_configs("sasl_ssl", tmp_path, cluster=True)
    configs = [setup.broker_args[i + 1] for i, a in enumerate(setup.broker_args) if a == "--config"]
    assert "listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL" in configs
    assert "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512" in configs
    assert "sasl.mechanism.controller.protocol=PLAIN" in configs
    assert any(c.startswith("listener.name.controller.plain.sasl.jaas.config=") and 'username="admin"' in c
               for c in configs)
    assert (tmp_path / "certs" / "ca.pem").exists() and setup.client.protocol == "SASL_SSL"


def test_the_smoke_stage_runs_on_a_sasl_ssl_reference() -> None:
    pytest.importorskip("cryptography", reason="secured targets need the cryptography package")
    done = subprocess.run(
        [sys.executable, "-m", "kafka_harness.run.smoke", "--target", "reference", "--security", "sasl_ssl",
         "--records", "200"],
        capture_output=True, text=True, timeout=180, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "PROBLEM" not in done.stdout
