"""One request may not add more than 10,000 partitions (issue 17, item 5).

Kafka's controller refuses it before anything else:
``ReplicationControlManager.validateTotalNumberOfPartitions``
(metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java) throws
``PolicyViolationException("Excessively large number of partitions per request.")`` for CreateTopics,
and ``QuorumController.MAX_RECORDS_PER_USER_OP`` bounds the records of any one operation (CreatePartitions'
``BoundedList``). A CreatePartitions to 100,000 once ran the reference broker out of file descriptors and
left a data directory it could not start on.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from reference_impl import defects
from reference_impl.core.controller.messages import CreateTopicsRequest
from reference_impl.core.controller.writer import EXCESSIVE_PARTITIONS_MESSAGE, MAX_PARTITIONS_PER_REQUEST

from ..raft.test_controller import active, ask, cluster
from .harness import BrokerHarness, request
from .test_admin import create_topics


def _grow(h: BrokerHarness, *topics: tuple[str, int], validate_only: bool = False) -> list[Any]:
    body = request(
        37,
        3,
        topics=[{"name": name, "count": count, "assignments": None} for name, count in topics],
        timeout=1000,
        validate_only=validate_only,
    )
    return list(h.call(body).results)


def _refused(results: list[Any]) -> bool:
    return all(
        r.error_code == ErrorCode.policy_violation and r.error_message == EXCESSIVE_PARTITIONS_MESSAGE
        for r in results
    )


def test_create_topics_over_the_limit_is_refused_whole() -> None:
    """10,001 partitions in one topic, or 6,000 in each of two, or two topics taking a 6,000 default:
    POLICY_VIOLATION on every topic of the request and nothing created; 10,000 passes validation."""
    h = BrokerHarness("num.partitions=6000")
    one = create_topics(h, {"name": "huge", "num_partitions": MAX_PARTITIONS_PER_REQUEST + 1})
    two = create_topics(h, {"name": "a", "num_partitions": 6000}, {"name": "b", "num_partitions": 6000})
    defaults = create_topics(
        h,
        {"name": "c", "num_partitions": -1, "replication_factor": -1},
        {"name": "d", "num_partitions": -1, "replication_factor": -1},
    )
    assert _refused(one) and _refused(two) and _refused(defaults)
    assert not h.broker.image.topics and not h.broker.partitions
    (fits,) = create_topics(
        h, {"name": "fits", "num_partitions": MAX_PARTITIONS_PER_REQUEST}, validate_only=True
    )
    assert fits.error_code == ErrorCode.none


def test_create_topics_counts_assignments() -> None:
    """A manual assignment of 10,001 partitions is counted as 10,001 (Kafka counts the assignments)."""
    h = BrokerHarness()
    assignments = [{"partition_index": p, "broker_ids": [1]} for p in range(MAX_PARTITIONS_PER_REQUEST + 1)]
    (result,) = create_topics(
        h, {"name": "manual", "num_partitions": -1, "replication_factor": -1, "assignments": assignments}
    )
    assert _refused([result]) and "manual" not in h.broker.image.topics


def test_create_partitions_over_the_limit_is_refused_whole() -> None:
    """CreatePartitions to 100,000 (the request that broke the broker), or two topics adding 6,000 each:
    POLICY_VIOLATION for every topic, the topics keep their partitions, no log is opened."""
    h = BrokerHarness()
    create_topics(h, {"name": "t"}, {"name": "u"})
    assert _refused(_grow(h, ("t", 100_000)))
    assert _refused(_grow(h, ("t", 6001), ("u", 6001)))
    assert [len(h.broker.image.topics[n].partitions) for n in ("t", "u")] == [1, 1]
    assert len(h.store.logs) == 3  # t-0, u-0 and the metadata log
    (fits,) = _grow(h, ("t", MAX_PARTITIONS_PER_REQUEST + 1), validate_only=True)  # adds exactly 10,000
    assert fits.error_code == ErrorCode.none


def test_the_seeded_defect_accepts_any_count() -> None:
    """With ``unbounded-partitions`` switched on the old behaviour is back: the checks above would fail."""
    h = BrokerHarness()
    with defects.seeded(defects.UNBOUNDED_PARTITIONS):
        (result,) = create_topics(
            h, {"name": "huge", "num_partitions": MAX_PARTITIONS_PER_REQUEST + 1}, validate_only=True
        )
    assert result.error_code == ErrorCode.none


def test_the_quorum_controller_refuses_too_many_partitions() -> None:
    """In a cluster the active controller validates with the same code: a creation it is asked for
    (a broker forwarding an auto-creation) over the limit is POLICY_VIOLATION and writes no record."""
    sim, _ = cluster()
    body = CreateTopicsRequest(
        correlation_id=77, name="huge", num_partitions=MAX_PARTITIONS_PER_REQUEST + 1, replication_factor=1,
        configs=(),
    )
    answer = ask(sim, body)
    assert answer.error_code == ErrorCode.policy_violation
    assert answer.error_message == EXCESSIVE_PARTITIONS_MESSAGE
    assert "huge" not in active(sim).image.topics
