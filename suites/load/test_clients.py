"""The executor-side client code on its own (no Spark): producing with reports, reading splits exactly."""

from __future__ import annotations

import dataclasses

import pytest

from fixtures.targets import Target
from spark_load.config import DatasetSpec, LoadConfig, ProducerSpec, ReaderSpec
from spark_load.consume import Split, SplitReader
from spark_load.payloads import RecordGenerator, is_intact
from spark_load.produce import TaskProducer
from spark_load.topics import create_topic


def config_for(target: Target, topic: str, client: str) -> LoadConfig:
    return LoadConfig(
        target.bootstrap_servers,
        topic,
        DatasetSpec(records=3000, seed=5, generator_id="clients"),
        producer=ProducerSpec(client=client),
        reader=ReaderSpec(client=client),
        partitions=2,
    )


def read_split(config: LoadConfig, split: Split) -> tuple[list[int], bool, list[tuple[bytes, bytes]]]:
    reader = SplitReader(config, split)
    offsets: list[int] = []
    records: list[tuple[bytes, bytes]] = []
    for chunk in reader.chunks():
        offsets += chunk["offset"]
        records += zip(chunk["key"], chunk["value"], strict=True)
    assert reader.status is not None
    return offsets, reader.status.complete, records


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_every_send_gets_a_report_and_splits_read_exactly_their_offsets(tansu: Target, client: str) -> None:
    config = config_for(tansu, f"kh-clients-{client}", client)
    create_topic(config.bootstrap_servers, config.topic, config.partitions, 1)
    producer = TaskProducer(config, task_index=0)
    producer.send(range(3000))
    reports = producer.finish()
    assert sorted(reports["seq"]) == list(range(3000))
    assert all(error is None for error in reports["error"])
    in_partition_0 = sorted(o for p, o in zip(reports["partition"], reports["offset"], strict=True) if p == 0)
    assert in_partition_0 == list(range(len(in_partition_0))), "offsets 0..n-1 acknowledged in partition 0"
    assert all(ack >= send for send, ack in zip(reports["send_us"], reports["ack_us"], strict=True))

    middle, middle_complete, _ = read_split(config, Split(0, 0, 10, 25))
    tail, tail_complete, records = read_split(config, Split(1, 0, 25, 25, to_eof=True))
    assert middle == list(range(10, 25)) and middle_complete
    assert tail == list(range(25, len(in_partition_0))) and tail_complete
    assert all(is_intact(key, value) for key, value in records)
    generator = RecordGenerator(config.dataset)
    by_offset = {
        o: s
        for p, o, s in zip(reports["partition"], reports["offset"], reports["seq"], strict=True)
        if p == 0
    }
    assert records[0] == generator.record(by_offset[25]), "the log holds exactly the bytes generated"


def test_the_time_bound_stops_sending_and_counts_the_rest_as_unsent(tansu: Target) -> None:
    config = config_for(tansu, "kh-clients-bounded", "confluent-kafka")
    config = dataclasses.replace(config, producer=ProducerSpec(rate_per_task=500, time_bound_s=0.3))
    create_topic(config.bootstrap_servers, config.topic, config.partitions, 1)
    producer = TaskProducer(config, task_index=0)
    producer.send(range(3000))
    reports = producer.finish()
    assert producer.stopped_by_time_bound
    assert producer.unsent > 0 and producer.sent + producer.unsent == 3000
    assert sorted(reports["seq"]) == list(range(producer.sent)), "what was sent is the first seqs, in order"
