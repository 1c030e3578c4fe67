"""The fuzzer against a real reference broker: every advertised API version answered, the CI slice,
the seeded defect ``unbounded-decode`` caught and replayed (issue 17, the harness side)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.fuzz import cli
from chaos.fuzz.classify import DECODE_OK
from chaos.fuzz.encode import encode_request
from chaos.fuzz.generate import Context, Generator
from chaos.fuzz.plan import usable_versions
from chaos.fuzz.prepare import prepare
from chaos.fuzz.replay import send_one, write_finding
from chaos.fuzz.target import FuzzTarget, open_target
from reference_impl import defects
from reference_impl.protocol.apis import API_NAMES, request_class


@pytest.fixture(scope="module")
def reference() -> Iterator[FuzzTarget]:
    target = open_target("reference", [])
    try:
        yield target
    finally:
        target.close()


def test_every_advertised_api_version_gets_a_valid_request_the_reference_answers(
    reference: FuzzTarget,
) -> None:
    """Valid generation must produce requests a correct broker answers: each API version the
    reference advertises, three generated values each, every one answered and decoded (a request
    the broker closes on would never reach the code behind the parser)."""
    ctx = Context()
    advertised = prepare(reference.address, ctx)
    versions = usable_versions(advertised)
    assert len(versions) >= 30
    failures = []
    for seed in range(3):
        gen = Generator(random.Random(seed), ctx)
        for key, listed in versions.items():
            for version in listed:
                cls = request_class(key, version)
                frame = encode_request(cls, key, version, gen.value(cls), 1000 + key).frame
                outcome = send_one(reference, frame, hang_s=5.0)
                if outcome.cls != DECODE_OK:
                    failures.append(f"{API_NAMES[key]} v{version} seed {seed}: {outcome}")
    assert not failures, "\n".join(failures)


def test_a_reproducer_file_replays_to_its_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A written frame read back and sent by ``--replay``: an unknown API key is closed, exit 0."""
    frame = bytes.fromhex("0000000f03e8000000000001000568656c6c6f")
    path = write_finding(tmp_path, "hang", frame, {"note": "t"})
    assert json.loads(path.with_suffix(".json").read_text())["api"] == "key1000"
    assert cli.main(["--replay", str(path), "--target", "reference"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-2] == "OUTCOME: closed"
    assert out[-1].startswith("VERDICT: valid requests=1 crashes=0 hangs=0")


def test_ci_slice_20000_requests_against_the_reference_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The acceptance run's CI slice: 20,000 requests, no crash, no hang, RSS within bound, canary intact."""
    started = time.monotonic()
    code = cli.main(["--target", "reference", "--requests", "20000", "--seed", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    print(f"\n[fuzz CI slice] {time.monotonic() - started:.1f} s wall: {last}")
    assert code == 0, out[-4000:]
    assert last.startswith("VERDICT: valid requests=20000 crashes=0 hangs=0 rss_peak_mb=")
    assert last.endswith(" lost=0")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["requests"] == 20000 and summary["handler_tracebacks"] == 0


def test_the_fuzzer_catches_the_seeded_unbounded_decode_defect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``reference.defects=unbounded-decode`` kio reads wire lengths unchecked and a huge array
    length aborts the broker (issue 17 item 1): the fuzzer must see it die, shrink one request that
    kills it alone, and that file must replay to a crash."""
    config = f"{defects.DEFECTS_CONFIG}={defects.UNBOUNDED_DECODE}"
    code = cli.main(["--target", "reference", "--broker-config", config, "--requests", "5000",
                     "--time", "8",
                     "--seed", "4", "--max-shrink", "1", "--shrink-time", "8", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert code == 1, out[-4000:]
    crashes = int(last.split("crashes=")[1].split()[0])
    assert last.startswith("VERDICT: invalid") and crashes > 0, last
    reproducers = sorted(tmp_path.glob("crash-*.bin"))
    assert reproducers, out[-4000:]
    replay = ["--replay", str(reproducers[0]), "--target", "reference", "--broker-config", config]
    assert cli.main(replay) == 1
    assert "OUTCOME: died" in capsys.readouterr().out
