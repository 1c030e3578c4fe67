"""``kafka-harness bench`` with tiny counts against the reference broker and Tansu: the JSON's shape,
ordered percentiles, a table that names every scenario, the Allure result, and bad input.

Nothing here is timed: the figures are printed, never compared with a threshold.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from kafka_harness.cli import main

THROUGHPUT = (
    "produce_rps", "produce_mbps", "fetch_rps", "fetch_mbps", "raw_fetch_rps", "raw_fetch_mbps",
    "raw_produce_rps", "raw_produce_mbps",
)
PERCENTILES = ("p50_ms", "p99_ms", "p999_ms")
SCENARIO_KEYS = {"name", "value_size", "records", "acks", "partitions", "brokers", "replication_factor"}


def ordered(figures: dict[str, Any]) -> bool:
    values = [figures[k] for k in PERCENTILES]
    return all(v is None for v in values) or values[0] <= values[1] <= values[2]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("bench")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = main([
            "bench", "--targets", "reference,tansu", "--records", "400", "--repeat", "1",
            "--rate", "40", "--latency-seconds", "1", "--out", str(out), "--alluredir", str(out / "allure"),
        ])
    return status, stdout.getvalue(), json.loads((out / "bench.json").read_text()), out


@pytest.mark.slow
@pytest.mark.clients
def test_json_shape_and_ordered_percentiles(bench: tuple[int, str, dict[str, Any], Path]) -> None:
    status, _stdout, data, _out = bench
    assert {"created", "table", "settings", "results", "ratios"} <= set(data)
    assert data["settings"]["targets"] == ["reference", "tansu"]
    assert data["settings"]["latency_rate"] == 40
    results = data["results"]
    assert len(results) == 2 * 2 * 2  # (single, cluster) x (100 B, 1 KiB) x (reference, tansu)
    for r in results:
        assert set(r["scenario"]) >= SCENARIO_KEYS, r
        assert set(r["medians"]) == set(THROUGHPUT + PERCENTILES)
        assert ordered(r["medians"]), r
        for run in r["runs"]:
            assert all(run[k] > 0 for k in THROUGHPUT), run
            assert ordered(run), run
            latency = run["latency"]
            assert latency["rate"] == 40 and latency["records"] >= 1
            if not latency["saturated"]:
                assert latency["p999_ms"] <= latency["max_ms"]
    single = [r for r in results if r["scenario"]["brokers"] == 1]
    assert all(r["status"] == "ok" and len(r["runs"]) == 1 for r in single), single
    for r in single:  # one broker, acks=1, 40 rec/s: far below saturation on either target
        assert not r["runs"][0]["latency"]["saturated"], r
        assert all(isinstance(r["medians"][k], float) and math.isfinite(r["medians"][k]) for k in PERCENTILES)
    cluster = [r for r in results if r["scenario"]["brokers"] == 3]
    for r in cluster:
        assert r["scenario"]["acks"] == "all" and r["scenario"]["replication_factor"] == 3
        if r["target"] == "tansu":
            assert r["status"] == "not applicable" and "single broker" in r["reason"] and not r["runs"]
        else:  # the cluster may be missing or failing; then the reason is stated
            assert r["status"] in ("ok", "unavailable", "failed")
            assert r["status"] == "ok" or r["reason"]
    ratios = data["ratios"]["by_scenario"]
    assert ratios and data["ratios"]["of"] == "reference/tansu"
    # a failed measurement makes the bench exit 1; only the cluster's may fail here
    assert status == (1 if any(r["status"] == "failed" for r in cluster) else 0)


@pytest.mark.slow
@pytest.mark.clients
def test_table_names_every_scenario(bench: tuple[int, str, dict[str, Any], Path]) -> None:
    _status, stdout, data, out = bench
    labels = {r["label"] for r in data["results"]}
    assert labels == {
        "single node (100 B, acks=1)", "single node (1 KiB, acks=1)",
        "3 brokers RF=3 (100 B, acks=all)", "3 brokers RF=3 (1 KiB, acks=all)",
    }
    for label in labels:
        assert label in stdout and label in data["table"]
    metrics = (
        "produce rec/s", "fetch rec/s", "raw fetch rec/s", "raw produce rec/s", "e2e p50 ms", "e2e p99 ms",
        "e2e p999 ms",
    )
    for metric in metrics:
        assert metric in data["table"]
    cluster_ok = any(r["status"] == "ok" and r["scenario"]["brokers"] == 3 for r in data["results"])
    assert ("replicated vs single node" in data["table"]) == cluster_ok
    assert bool(data["replicated_vs_single"]) == cluster_ok
    assert "40 rec/s" in data["table"], "the latency rate is stated"
    assert "single broker" in data["table"]
    assert (out / "bench.txt").read_text().strip() == data["table"]


@pytest.mark.slow
@pytest.mark.clients
def test_allure_result(bench: tuple[int, str, dict[str, Any], Path]) -> None:
    _status, _stdout, data, out = bench
    found = [json.loads(p.read_text()) for p in (out / "allure").glob("*-result.json")]
    assert len(found) == 1
    labels = {label["name"]: label["value"] for label in found[0]["labels"]}
    assert labels["epic"] == "Benchmarks"
    attachments = {a["name"]: a for a in found[0]["attachments"]}
    assert set(attachments) == {"bench table", "bench.json"}
    table = (out / "allure" / attachments["bench table"]["source"]).read_text()
    assert table.strip() == data["table"]
    assert json.loads((out / "allure" / attachments["bench.json"]["source"]).read_text()) == data


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--targets", "kafka"], "unknown target"),
        (["--targets", ","], "names no target"),
        (["--targets", "tansu,tansu"], "twice"),
        (["--scenarios", "multi"], "--scenarios"),
        (["--value-size", "4"], "--value-size"),
        (["--value-size", "abc"], "invalid int"),
        (["--records", "0"], "--records"),
        (["--repeat", "-1"], "--repeat"),
        (["--rate", "0"], "--rate"),
        (["--rate", "nan"], "--rate"),
        (["--latency-seconds", "0"], "--latency-seconds"),
        (["--no-such-flag"], "unrecognized"),
    ],
)
def test_bad_input_exits_2_with_a_message(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "bench.json").exists()


def test_out_that_is_a_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("")
    assert main(["bench", "--out", str(a_file)]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_raw_reader_counts_whole_batches_from_their_headers() -> None:
    from kafka_harness.bench.raw_fetch import count_batches
    from reference_impl.protocol.record_set import build_control_batch

    one = build_control_batch(commit=True, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=0)
    records, size, next_offset = count_batches(one + one[:-5])  # a batch the answer cut short is left out
    assert (records, size, next_offset) == (1, len(one), 1)
    assert count_batches(b"") == (0, 0, -1)


def test_replication_rows_put_the_cluster_beside_one_broker() -> None:
    from kafka_harness.bench.model import CLUSTER, SINGLE, Figures, Result, Scenario
    from kafka_harness.bench.table import replication_rows

    def result(name: str, rps: float) -> Result:
        return Result(Scenario(name, 100, 10), "reference", [Figures(rps, 1.0, 1.0, 1.0, 1.0, 1.0)])

    rows = replication_rows([result(SINGLE, 1000.0), result(CLUSTER, 250.0)], ["reference"])
    produce = next(r for r in rows if "produce rec/s" in r)
    assert produce.split()[-3:] == ["250", "1,000", "0.25x"]
    assert replication_rows([result(SINGLE, 1000.0)], ["reference"]) == []


def test_raw_writer_counts_only_records_the_broker_stored() -> None:
    """The raw produce writer's count is what the broker holds afterwards (read back by the raw
    fetch reader), less the one warm-up request, and it fills whole batches."""
    from fixtures.targets.launch import launch
    from kafka_harness.bench.measurements import create_topic
    from kafka_harness.bench.model import Scenario
    from kafka_harness.bench.raw_fetch import read_topic
    from kafka_harness.bench.raw_produce import records_per_batch, write_topic

    target = launch("reference")
    try:
        topic = create_topic(target.bootstrap_servers, Scenario("raw", 100, 1, partitions=2))
        written = write_topic(target.bootstrap_servers, topic, 100, 1_000, acks=1)
        per_batch = records_per_batch(100)
        assert written.records >= 1_000 and written.records % (2 * per_batch) == 0
        stored = read_topic(target.bootstrap_servers, topic)
        assert stored.records == written.records + 2 * per_batch  # the warm-up request's two batches
        assert written.requests == written.records // (2 * per_batch)
    finally:
        target.close()
