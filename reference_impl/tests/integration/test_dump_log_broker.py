"""dump-log on segments a reference broker process wrote: the same records a client reads, and damage named.

A client's read and the files must agree record for record (offsets, keys,
values, gzip batches included); a byte flipped in a copy is reported at the
position of the batch holding it, with the offsets that batch claims, and
the offset after the last good batch is where the client's records go on.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.targets import Target, launch
from reference_impl.tools import dump_log

pytestmark = [pytest.mark.slow, pytest.mark.clients]
RECORDS = 600


@pytest.fixture(scope="module")
def written() -> Iterator[tuple[Target, str, list[tuple[int, bytes, bytes]]]]:
    """A stopped broker's data, the topic, and what a consumer read from it before the stop."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    target = launch("reference")
    topic = f"dump-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    configs = {"internal.segment.bytes": "4096", "index.interval.bytes": "256"}
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(timeout=30)
    for codec in ("none", "gzip"):
        producer = Producer({"bootstrap.servers": target.bootstrap_servers, "compression.type": codec,
                             "linger.ms": 5})
        for i in range(RECORDS // 2):
            producer.produce(topic, key=b"k%d" % (i % 37), value=b"%s-%d" % (codec.encode(), i))
            if i % 25 == 0:
                producer.flush(10)
        assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": target.bootstrap_servers, "group.id": "dump",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    read: list[tuple[int, bytes, bytes]] = []
    deadline = time.monotonic() + 60
    while len(read) < RECORDS and time.monotonic() < deadline:
        for m in consumer.consume(500, 0.5):
            if m.error() is None:
                read.append((m.offset(), m.key(), m.value()))  # type: ignore[arg-type]
    consumer.close()
    target.nodes[0].stop()
    yield target, topic, read
    target.close()


def _dump(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    status = dump_log.main([str(path), "--json", "--print-data"])
    return status, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _segments(target: Target, topic: str) -> list[Path]:
    assert target.workdir is not None
    return sorted((target.workdir / "node-1" / f"{topic}-0").glob("*.log"))


def test_dump_log_shows_what_a_client_reads(
    written: tuple[Target, str, list[tuple[int, bytes, bytes]]], capsys: pytest.CaptureFixture[str]
) -> None:
    target, topic, read = written
    segments = _segments(target, topic)
    assert len(read) == RECORDS and len(segments) > 2
    dumped: list[tuple[int, bytes, bytes]] = []
    codecs = set()
    for segment in segments:
        status, entries = _dump(segment, capsys)
        assert status == 0 and entries[-1]["ok"], [e for e in entries if e["type"] != "batch"]
        for batch in (e for e in entries if e["type"] == "batch"):
            codecs.add(batch["codec"])
            dumped += [(r["offset"], r["key"].encode(), r["value"].encode()) for r in batch["records"]]
    assert dumped == read and codecs == {"none", "gzip"}


def test_dump_log_names_the_damaged_batch_of_a_corrupted_copy(
    written: tuple[Target, str, list[tuple[int, bytes, bytes]]], tmp_path: Path,
    capsys: pytest.CaptureFixture[str]
) -> None:
    target, topic, read = written
    source = _segments(target, topic)[1]
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    _status, entries = _dump(copy, capsys)
    batches = [e for e in entries if e["type"] == "batch"]
    victim = batches[len(batches) // 2]
    data = bytearray(copy.read_bytes())
    data[victim["position"] + victim["size"] - 3] ^= 0x5A  # inside its records: only the CRC notices
    copy.write_bytes(bytes(data))
    status, entries = _dump(copy, capsys)
    (damage,) = [e for e in entries if e["type"] == "damage"]
    assert status == 1 and damage["position"] == victim["position"] and damage["reason"] == "CRC32C mismatch"
    assert (damage["baseOffset"], damage["lastOffset"]) == (victim["baseOffset"], victim["lastOffset"])
    after_good = [o for o, _k, _v in read if o >= damage["offsetAfterLastGoodBatch"]]
    assert after_good[0] == victim["baseOffset"]
