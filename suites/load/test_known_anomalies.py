"""The verifier against a real broker: known loss and known duplication, reported exactly.

Loss: Tansu with memory storage forgets everything when its process restarts,
so every record acknowledged before a restart is lost, and the records
produced after it reuse those offsets (inconsistent offsets, one per reused
offset). Duplication: a handful of records produced a second time by a
non-idempotent producer.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from chaos.checkers import check
from chaos.checkers.spark_checks import MAX_EXAMPLES, NAMES, anomaly_key, check_parquet
from chaos.history import read_jsonl
from fixtures.targets import Target
from spark_load.config import DatasetSpec, LoadConfig, ProducerSpec
from spark_load.consume import plan_splits
from spark_load.history import write_history
from spark_load.jobs.generate import ACK_SCHEMA_DDL, produce_dataset
from spark_load.jobs.read import read_topic
from spark_load.jobs.verify import verify
from spark_load.produce import REPORT_COLUMNS, TaskProducer
from spark_load.report import RunResult, publish_to_allure
from spark_load.topics import create_topic, partition_ranges

BEFORE_RESTART = 600
AFTER_RESTART = 1400
DUPLICATED_SEQS = list(range(BEFORE_RESTART, BEFORE_RESTART + 1400, 140))  # ten records sent twice


def _positions(rows: list[Any]) -> set[tuple[int, int]]:
    return {(row["partition"], row["offset"]) for row in rows if row["error"] is None}


def test_injected_loss_and_duplication_are_counted_exactly(spark: Any, tansu: Target, tmp_path: Path) -> None:
    config = LoadConfig(
        tansu.bootstrap_servers,
        "kh-load-injected",
        DatasetSpec(records=BEFORE_RESTART + AFTER_RESTART, seed=11, generator_id="inject", key_space=50),
        partitions=3,
        tasks=2,
        read_tasks=4,
    )
    create_topic(config.bootstrap_servers, config.topic, config.partitions, 1)
    before = produce_dataset(spark, config, str(tmp_path / "acks-before"), seq_range=(0, BEFORE_RESTART)).acks
    assert before.where("error is null").count() == BEFORE_RESTART, "the records to lose were acknowledged"

    tansu.nodes[0].restart()  # memory storage: the acknowledged records are gone
    create_topic(config.bootstrap_servers, config.topic, config.partitions, 1)
    after = produce_dataset(
        spark,
        config,
        str(tmp_path / "acks-after"),
        seq_range=(BEFORE_RESTART, BEFORE_RESTART + AFTER_RESTART),
    ).acks

    resend = dataclasses.replace(config, producer=ProducerSpec(idempotence=False))
    producer = TaskProducer(resend, task_index=99)
    producer.send(DUPLICATED_SEQS)
    reports = producer.finish()
    assert all(error is None for error in reports["error"])
    again = spark.createDataFrame(
        list(zip(*(reports[c] for c in REPORT_COLUMNS), strict=True)), ACK_SCHEMA_DDL
    )

    acks = before.unionByName(after).unionByName(again)
    ranges = partition_ranges(config.bootstrap_servers, config.topic, config.partitions)
    reads, statuses = read_topic(spark, config, plan_splits(ranges, 300), str(tmp_path / "reads"))
    assert all(status.complete for status in statuses), statuses

    verdict = verify(acks, reads)
    reused_offsets = _positions(before.collect()) & (
        _positions(after.collect()) | _positions(again.collect())
    )
    publish_to_allure(
        RunResult(tmp_path, "tansu", config.topic, {"records": config.dataset.records}, verdict=verdict),
        story="injected loss and duplication are counted exactly",
    )
    assert verdict.counts == {
        "lost": BEFORE_RESTART,
        "duplicate": len(DUPLICATED_SEQS),
        "corrupt": 0,
        "reordered": 0,
        "inconsistent_offset": len(reused_offsets),
        "unexpected": 0,
        "unacked_read": 0,
        "unacked": 0,
        "foreign": 0,
    }
    assert verdict.read == AFTER_RESTART + len(DUPLICATED_SEQS)
    assert verdict.acked == BEFORE_RESTART + AFTER_RESTART
    assert not verdict.valid

    # A second, independent judge: the same run as a chaos history, through the chaos checkers.
    acks.write.parquet(str(tmp_path / "acks-all"))
    history_path = tmp_path / "history.jsonl"
    write_history(tmp_path / "acks-all", tmp_path / "reads", history_path, topic=config.topic,
                  meta={"idempotence": True})  # fmt: skip
    chaos = check(read_jsonl(history_path)).counts()
    assert chaos["duplicate"] == verdict.counts["duplicate"]
    assert chaos["inconsistent_offsets"] == verdict.counts["inconsistent_offset"]
    assert chaos["lost_write"] + chaos["unseen"] == verdict.counts["lost"]

    # A third: the same recorded run written as Parquet and judged by the Spark checkers, which must
    # find the Python checkers' anomalies one by one (chaos/checkers/spark_checks.py).
    parquet_path = tmp_path / "history.parquet"
    write_history(tmp_path / "acks-all", tmp_path / "reads", parquet_path, topic=config.topic,
                  meta={"idempotence": True})  # fmt: skip
    history = read_jsonl(history_path)
    python = check(history)
    judged = check_parquet(spark, str(parquet_path), history.meta, examples=MAX_EXAMPLES)
    for name in NAMES:
        assert set(judged.examples[name]) == {anomaly_key(name, a) for a in python.anomalies[name]}, name
