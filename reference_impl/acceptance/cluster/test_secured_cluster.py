"""A whole reference cluster on SASL_SSL (issue 18): client, inter-broker and controller listeners.

``launch("reference", brokers=3, security="sasl_ssl")`` starts three combined nodes whose broker
listener is SASL_SSL (SCRAM-SHA-512 between brokers) and whose controller listener is SASL_SSL too
(PLAIN: Kafka serves no SCRAM there). The quorum forms, the brokers register, and a record
produced with ``acks=all`` to a topic whose ISR must be all three replicas
(``min.insync.replicas=3``) is only acknowledged once both followers fetched it over their
secured links; each node's log says its links authenticated.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("cryptography", reason="secured targets need the cryptography package")
pytest.importorskip("confluent_kafka", reason="the check produces with confluent-kafka")

from confluent_kafka import KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from fixtures.targets import Target, launch


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    started = time.monotonic()
    with launch("reference", workdir=tmp_path_factory.mktemp("seccluster"), brokers=3,
                security="sasl_ssl") as target:
        print(f"secured 3-node cluster (SASL_SSL everywhere) up in {time.monotonic() - started:.1f} s")
        yield target


def test_a_sasl_ssl_cluster_replicates_acks_all(secured_cluster: Target) -> None:
    target = secured_cluster
    assert target.secured is not None
    settings: dict[str, str | int | float | bool] = {
        "bootstrap.servers": target.bootstrap_servers,
        **target.secured.client.confluent(),
    }
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(settings)
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=3, config={"min.insync.replicas": "3"})]
    )
    futures[topic].result(timeout=30)
    producer = Producer({**settings, "acks": "all", "message.timeout.ms": 30000})
    acked: list[object] = []

    def delivered(err: object, msg: Message) -> None:
        acked.append(err or msg.offset())

    for i in range(20):
        producer.produce(topic, f"v{i}".encode(), on_delivery=delivered)
    assert producer.flush(40) == 0
    assert acked == list(range(20))  # every record acknowledged by all three replicas, in order
    topics = admin.list_topics(topic, timeout=10).topics
    partition = topics[topic].partitions[0]
    assert sorted(partition.isrs) == [1, 2, 3]
    logs = [Path(n.log_path).read_text(errors="replace") for n in target.nodes]
    for node, text in zip(target.nodes, logs, strict=True):
        assert "authenticated as admin" in text, f"node {node.node_id}: no authenticated link in its log"


def test_a_plaintext_client_is_refused_by_the_secured_cluster(secured_cluster: Target) -> None:
    admin = AdminClient({"bootstrap.servers": secured_cluster.bootstrap_servers, "log_level": 0})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
