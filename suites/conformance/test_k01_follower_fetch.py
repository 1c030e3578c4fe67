"""Fetch from the closest replica (KIP-392): ``rack_id`` (Fetch v11+), ``preferred_read_replica``,
consumers reading from a follower.

Kafka's rules: ``core/src/main/scala/kafka/server/ReplicaManager.scala`` (``findPreferredReadReplica``:
only a leader with ``replica.selector.class`` set names a replica, never itself, only an in-sync one
that reached the fetch offset; ``readFromLog``: the read is skipped and the partition answered with
no records when one is named), ``clients/src/main/java/org/apache/kafka/common/replica/
RackAwareReplicaSelector.java`` (the consumer's rack; the leader when it is there or no replica is)
and ``server-common/.../FetchParams.java`` (``fetchOnlyLeader``: a consumer with client metadata,
v11+, may read from a follower, which serves below its own high watermark).

Most cases need a cluster with racks and the selector (:mod:`suites.rack_cluster`: on a reference
run one is launched for them, 3 brokers in racks a, b, c with ``RackAwareReplicaSelector`` and the
run's security; another target is used as it is, and skips them when its brokers are in fewer than
two racks); the case without a selector runs against the run's target.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from fixtures.targets.session import TargetSession
from fixtures.wire import Capabilities, Router, ops
from suites.rack_cluster import RECORDS, RackCluster, rack_cluster

from .expect import expect, expect_code, expect_equal

FEATURE = "Fetch"
KIP = "KIP-392"


@pytest.fixture(scope="module")
def racks(target_session: TargetSession) -> Iterator[RackCluster]:
    yield from rack_cluster(target_session)


def test_metadata_and_describe_cluster_carry_each_brokers_rack(racks: RackCluster) -> None:
    """MetadataResponse.json / DescribeClusterResponse.json ``Rack``: each broker's ``broker.rack``, as
    it registered with the controller (BrokerRegistrationRequest ``Rack``)."""
    answer = ops.metadata(racks.router, racks.caps, [])
    listed = {int(b.node_id): b.rack for b in answer.brokers}
    if racks.configured is not None:  # a launched reference: the racks it was given
        expect_equal(listed, racks.configured, "MetadataResponse.json Rack", "the racks Metadata lists")
    if racks.caps.versions("describe_cluster"):
        version = racks.caps.best("describe_cluster")
        cluster = racks.router.any().request(
            "describe_cluster", version, include_cluster_authorized_operations=False
        )
        got = {int(b.broker_id): b.rack for b in cluster.brokers}
        expect_equal(got, listed, "DescribeClusterResponse.json Rack", "DescribeCluster's racks, Metadata's")


def test_leader_names_the_in_sync_follower_in_the_consumers_rack(racks: RackCluster) -> None:
    """ReplicaManager.findPreferredReadReplica + RackAwareReplicaSelector: a consumer in a follower's
    rack is told to read there (preferred_read_replica), and the leader skips the read: no records,
    its high watermark."""
    topic, leader, follower = racks.topic_with_records()
    part = racks.fetch(leader, topic, rack_id=racks.rack(follower))
    expect_code(part.error_code, "NONE", rule=KIP)
    expect_equal(int(part.preferred_read_replica), follower, KIP, "preferred_read_replica")
    expect_equal(ops.data_records(part), [], KIP, "records in an answer naming another replica")
    expect_equal(int(part.high_watermark), RECORDS, KIP, "the leader's high watermark")


def test_leader_serves_a_consumer_of_its_own_rack_no_rack_or_a_rack_of_no_broker(
    racks: RackCluster,
) -> None:
    """RackAwareReplicaSelector: the leader when the consumer's rack holds it, when the consumer has no
    rack, or when no replica is in its rack; the leader is never named (-1) and it reads."""
    topic, leader, _follower = racks.topic_with_records()
    for rack in (racks.rack(leader), "", "no-such-rack"):
        part = racks.fetch(leader, topic, rack_id=rack)
        expect_code(part.error_code, "NONE", rule=KIP)
        expect_equal(int(part.preferred_read_replica), -1, KIP, f"preferred_read_replica for rack {rack!r}")
        expect_equal(len(ops.data_records(part)), RECORDS, KIP, f"records read for rack {rack!r}")


def test_follower_serves_a_consumer_below_its_high_watermark(racks: RackCluster) -> None:
    """FetchParams.fetchOnlyLeader is false for a v11+ consumer: the follower answers from its own log,
    nothing at or past the high watermark it knows; its high watermark reaches the leader's (bounded
    retries, the follower learns it on its next fetch)."""
    topic, _leader, follower = racks.topic_with_records()
    deadline = time.monotonic() + 15
    while True:
        part = racks.fetch(follower, topic, rack_id=racks.rack(follower))
        expect_code(part.error_code, "NONE", rule="KIP-392 follower read")
        hw = int(part.high_watermark)
        offsets = [r.offset for r in ops.data_records(part)]
        served_past = [o for o in offsets if o >= hw]
        expect(not served_past, KIP, f"a follower served offsets {served_past} at or past its HW {hw}")
        expect_equal(int(part.preferred_read_replica), -1, KIP, "a follower names no replica")
        if hw == RECORDS or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    expect_equal(offsets, list(range(RECORDS)), KIP, "the records a follower serves once its HW caught up")


def test_follower_refuses_a_fetch_without_client_metadata(racks: RackCluster) -> None:
    """FetchParams.fetchOnlyLeader: before v11 a consumer carries no client metadata and may read from
    the leader only: a follower answers NOT_LEADER_OR_FOLLOWER."""
    topic, _leader, follower = racks.topic_with_records()
    part = racks.fetch(follower, topic, version=racks.caps.best("fetch", hi=10))
    expect_code(part.error_code, "NOT_LEADER_OR_FOLLOWER", rule="FetchParams.fetchOnlyLeader")


def test_follower_answers_offset_out_of_range_past_its_log_end(racks: RackCluster) -> None:
    """ReplicaManager.readFromLog: a fetch offset past the follower's log end is OFFSET_OUT_OF_RANGE
    (the consumer then goes back to the leader, KIP-392)."""
    topic, _leader, follower = racks.topic_with_records()
    part = racks.fetch(follower, topic, RECORDS + 100, rack_id=racks.rack(follower))
    expect_code(part.error_code, "OFFSET_OUT_OF_RANGE", rule=KIP)


@pytest.mark.requires("fetch", min_version=11)
def test_without_a_selector_no_replica_is_preferred(
    router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """ReplicaManager.findPreferredReadReplica: with no ``replica.selector.class`` (Kafka's default) the
    leader names no replica (-1) whatever the consumer's rack, and reads."""
    topic = topic_factory()
    expect_code(ops.produce_values(router, caps, topic, [b"x"]).error_code, "NONE", rule="setup: Produce")
    for rack in ("a", "b", "c"):
        _r, part = ops.fetch(router, caps, topic, 0, version=caps.best("fetch", lo=11), rack_id=rack)
        expect(part is not None, KIP, "the partition is missing from the answer")
        expect_equal(int(part.preferred_read_replica), -1, KIP, f"preferred_read_replica for rack {rack!r}")
        expect_equal(len(ops.data_records(part)), 1, KIP, "records read from the leader")
