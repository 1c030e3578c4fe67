"""A Fetch whose partitions interleave topics, against a broker process (issue 17, item 10).

librdkafka's consumer of many topics lists a topic once per run of its partitions, so a request
may read (a,0) (b,0) (c,0) (a,1) ...; the answer has one entry per topic (FetchResponse.json:
``responses``, "The response topics"), and the broker lost the connection looking for the
zero-copy placeholders of the records in request order. The seeded defect
``reference.defects=fetch-placeholder-order`` brings that back, and the same exchange shows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.targets import Target, launch
from fixtures.wire import WireClient, WireError
from reference_impl import defects
from reference_impl.protocol.record_set import build_batch, records_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with launch("reference", workdir=tmp_path_factory.mktemp("kh-decode-fetch")) as target:
        yield target


TOPICS = ("ilv-a", "ilv-b", "ilv-c")
PARTITIONS = 2


def _create_and_fill(client: WireClient) -> None:
    answer = client.request(
        "create_topics",
        5,
        topics=[{"name": t, "num_partitions": PARTITIONS, "replication_factor": 1} for t in TOPICS],
        timeout=10_000,
    )
    assert all(int(t.error_code) == 0 for t in answer.topics), answer
    for topic in TOPICS:
        for partition in range(PARTITIONS):
            batch = build_batch([(None, f"{topic}/{partition}".encode())])
            data = [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]
            produced = client.request("produce", 9, acks=-1, timeout=10_000, topic_data=data)
            assert int(produced.responses[0].partition_responses[0].error_code) == 0


def _interleaved_fetch(client: WireClient, version: int) -> dict[tuple[str, int], list[bytes | None]]:
    """Fetch every partition with the topics interleaved: (a,0) (b,0) (c,0) (a,1) (b,1) (c,1)."""
    topics = [
        {"topic": t, "partitions": [{"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}
        for p in range(PARTITIONS)
        for t in TOPICS
    ]
    answer = client.request(
        "fetch", version, replica_id=-1, max_wait=100, min_bytes=1, topics=topics, forgotten_topics_data=[]
    )
    return {
        (t.topic, p.partition_index): [r.value for r in records_of(bytes(p.records or b""))]
        for t in answer.responses
        for p in t.partitions
    }


@pytest.fixture(scope="module")
def filled(broker: Target) -> str:
    with WireClient(broker.bootstrap_servers) as client:
        _create_and_fill(client)
    return broker.bootstrap_servers


@pytest.mark.parametrize("version", [4, 11, 12])
def test_a_fetch_interleaving_topics_gets_every_partition(filled: str, version: int) -> None:
    """Legacy (int32) and compact (varint) records lengths; each partition's records come back."""
    with WireClient(filled) as client:
        got = _interleaved_fetch(client, version)
    expected = {(t, p): [f"{t}/{p}".encode()] for t in TOPICS for p in range(PARTITIONS)}
    assert got == expected


def test_seeded_placeholder_order_drops_the_connection(tmp_path: Path) -> None:
    workdir = tmp_path / "kh-decode-defect"
    config = f"{defects.DEFECTS_CONFIG}={defects.FETCH_PLACEHOLDER_ORDER}"
    with (
        launch("reference", workdir=workdir, broker_configs=[config]) as target,
        WireClient(target.bootstrap_servers) as client,
    ):
        _create_and_fill(client)
        with pytest.raises(WireError, match="closed the connection"):
            _interleaved_fetch(client, 12)

