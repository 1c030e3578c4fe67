"""Issue 4: preferred replica election and partition reassignment on a four-broker reference cluster
(real processes), each completing while an idempotent acks=all confluent-kafka producer runs, with
nothing lost, duplicated or reordered.

The nemesis, in order: SIGKILL the leader of ``moves`` (replicas [1, 2, 3], so 1 leads), restart it
once the leadership moved; when 1 is back in the ISR, ElectLeaders(PREFERRED) with confluent-kafka
gives it the leadership back (and answers ELECTION_NOT_NEEDED when asked again); then
AlterPartitionReassignments with kafka-python moves the partition to [2, 3, 4]: broker 4 is added,
catches up, joins the ISR, and 1 is dropped (the leadership moves off it first).
ListPartitionReassignments shows the move while it runs and nothing once it is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient

from fixtures.targets import Target, launch

from .test_replicated_cluster import _check
from .workload import CLUSTER_CONFIGS, Outcome, partition_state, produce_during, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.clients]

TOPIC = "moves"


@pytest.fixture
def four(tmp_path: Path) -> Iterator[Target]:
    with launch("reference", workdir=tmp_path, brokers=4, broker_configs=CLUSTER_CONFIGS) as target:
        yield target


def _replicas(target: Target) -> list[int]:
    md = AdminClient({"bootstrap.servers": target.bootstrap_servers}).list_topics(TOPIC, timeout=10)
    return list(md.topics[TOPIC].partitions[0].replicas)


def _elect_then_reassign(target: Target) -> Callable[[Outcome], None]:
    def run(outcome: Outcome) -> None:
        admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
        wait_for(lambda: len(outcome.acked) > 0, 60, "records are being acknowledged")
        target.node(1).kill()
        moved = wait_for(lambda: partition_state(target, TOPIC)[0] not in (1, -1), 60, "leadership leaves 1")
        print(
            f"leader 1 killed at {len(outcome.acked)} acked: "
            f"{partition_state(target, TOPIC)[0]} leads after {moved:.2f}s"
        )
        target.node(1).start()
        back = wait_for(lambda: 1 in partition_state(target, TOPIC)[1], 90, "1 rejoins the ISR")
        print(f"  1 back in the ISR after {back:.2f}s")

        started = time.monotonic()
        [result] = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)]).result(30).values()
        assert result is None, f"preferred election failed: {result}"
        took = wait_for(lambda: partition_state(target, TOPIC)[0] == 1, 30, "1 leads again")
        print(
            f"preferred election at {len(outcome.acked)} acked: 1 leads "
            f"{time.monotonic() - started:.2f}s after the call ({took:.2f}s to see it)"
        )
        [again] = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)]).result(30).values()
        assert again is not None and again.name() == "ELECTION_NOT_NEEDED", again

        kafka_admin = KafkaAdminClient(bootstrap_servers=target.bootstrap_servers)
        try:
            started = time.monotonic()
            moves = kafka_admin.alter_partition_reassignments({KafkaTopicPartition(TOPIC, 0): [2, 3, 4]})
            assert moves == {KafkaTopicPartition(TOPIC, 0): None}, moves
            listed = kafka_admin.list_partition_reassignments()
            print(f"reassignment to [2, 3, 4] at {len(outcome.acked)} acked; in progress: {listed}")
            wait_for(
                lambda: (
                    _replicas(target) == [2, 3, 4] and sorted(partition_state(target, TOPIC)[1]) == [2, 3, 4]
                ),
                120,
                "the partition is on [2, 3, 4] with all of them in the ISR",
            )
            print(
                f"  done {time.monotonic() - started:.2f}s after the call at {len(outcome.acked)} acked; "
                f"leader {partition_state(target, TOPIC)[0]}"
            )
            assert kafka_admin.list_partition_reassignments() == {}
        finally:
            kafka_admin.close()

    return run


@pytest.mark.parametrize(
    "count",
    [
        pytest.param(10_000, id="10k"),
        pytest.param(100_000, id="100k", marks=pytest.mark.cluster_full),
    ],
)
def test_preferred_election_and_reassignment_complete_while_producing(four: Target, count: int) -> None:
    admin = AdminClient({"bootstrap.servers": four.bootstrap_servers})
    topic = NewTopic(TOPIC, 1, replica_assignment=[[1, 2, 3]], config={"min.insync.replicas": "2"})
    for future in admin.create_topics([topic]).values():
        future.result(30)
    wait_for(lambda: partition_state(four, TOPIC)[0] == 1, 30, "1 leads")
    outcome = produce_during(four, TOPIC, count, _elect_then_reassign(four), spread_s=15.0)
    _check(outcome, count)
    leader, isr, _controller = partition_state(four, TOPIC)
    print(f"after the run: replicas {_replicas(four)}, leader {leader}, ISR {isr}")
    assert _replicas(four) == [2, 3, 4] and leader in (2, 3, 4)
