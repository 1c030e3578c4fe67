"""Topic and config administration through the sans-IO broker, and metadata surviving a restart."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request

ZERO = uuid.UUID(int=0)


def create_topics(
    h: BrokerHarness, *topics: dict[str, Any], validate_only: bool = False, version: int = 7
) -> Any:
    full = [
        {"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": [], **t} for t in topics
    ]
    return h.call(request(19, version, topics=full, timeout=1000, validate_only=validate_only)).topics


@pytest.mark.parametrize(
    ("topic", "code"),
    [
        ({"name": "bad name"}, ErrorCode.invalid_topic_exception),
        ({"name": "x" * 250}, ErrorCode.invalid_topic_exception),
        ({"name": ".."}, ErrorCode.invalid_topic_exception),
        ({"name": "t", "num_partitions": 0}, ErrorCode.invalid_partitions),
        ({"name": "t", "replication_factor": 2}, ErrorCode.invalid_replication_factor),
        ({"name": "t", "configs": [{"name": "no.such.config", "value": "1"}]}, ErrorCode.invalid_config),
        ({"name": "t", "configs": [{"name": "retention.ms", "value": "soon"}]}, ErrorCode.invalid_config),
        (
            {
                "name": "t",
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [{"partition_index": 0, "broker_ids": [7]}],
            },
            ErrorCode.invalid_replica_assignment,
        ),
    ],
)
def test_create_topic_errors(topic: dict[str, Any], code: ErrorCode) -> None:
    """CreateTopics validation as Kafka's controller does it; nothing is created on error."""
    h = BrokerHarness()
    (result,) = create_topics(h, topic)
    assert result.error_code == code and result.error_message
    assert not h.broker.image.topics


def test_create_defaults_duplicates_and_collisions() -> None:
    h = BrokerHarness("num.partitions=3")
    (made,) = create_topics(h, {"name": "a.b", "num_partitions": -1, "replication_factor": -1})
    assert (made.error_code, made.num_partitions, made.replication_factor) == (ErrorCode.none, 3, 1)
    assert {c.name for c in made.configs} >= {"retention.ms", "cleanup.policy"}
    assert create_topics(h, {"name": "a.b"})[0].error_code == ErrorCode.topic_already_exists
    assert create_topics(h, {"name": "a_b"})[0].error_code == ErrorCode.invalid_topic_exception
    dup = create_topics(h, {"name": "d"}, {"name": "d"})
    assert [r.error_code for r in dup] == [ErrorCode.invalid_request] * 2
    assert create_topics(h, {"name": "v"}, validate_only=True)[0].error_code == ErrorCode.none
    assert "v" not in h.broker.image.topics


def test_delete_and_create_partitions() -> None:
    h = BrokerHarness()
    create_topics(h, {"name": "t", "num_partitions": 2})
    grow = h.call(
        request(
            37, 3, topics=[{"name": "t", "count": 5, "assignments": None}], timeout=1000, validate_only=False
        )
    ).results[0]
    assert grow.error_code == ErrorCode.none
    assert len(h.broker.image.topics["t"].partitions) == 5 and len(h.broker.partitions) == 5
    shrink = h.call(
        request(
            37, 3, topics=[{"name": "t", "count": 3, "assignments": None}], timeout=1000, validate_only=False
        )
    ).results[0]
    assert shrink.error_code == ErrorCode.invalid_partitions
    gone = h.call(
        request(
            20, 6, topics=[{"name": "t", "topic_id": ZERO}, {"name": "nope", "topic_id": ZERO}], timeout=1000
        )
    ).responses
    assert [r.error_code for r in gone] == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]
    assert not h.broker.partitions and not [k for k in h.store.logs if k[0] == "t"]


def describe(h: BrokerHarness, rtype: int, name: str, keys: list[str] | None = None) -> Any:
    return h.call(
        request(
            32,
            4,
            resources=[{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
            include_synonyms=True,
            include_documentation=False,
        )
    ).results[0]


def test_config_round_trips_with_sources_and_synonyms() -> None:
    """DescribeConfigs reports the value and where it comes from: topic override, broker
    static config (its log.* synonym), or Kafka's default."""
    h = BrokerHarness("log.retention.hours=1")
    create_topics(h, {"name": "t", "configs": [{"name": "segment.bytes", "value": "1048576"}]})
    entries = {c.name: c for c in describe(h, 2, "t").configs}
    assert (entries["segment.bytes"].value, entries["segment.bytes"].config_source) == ("1048576", 1)
    assert (entries["retention.ms"].value, entries["retention.ms"].config_source) == ("3600000", 4)
    assert [s.name for s in entries["retention.ms"].synonyms] == ["log.retention.hours", "retention.ms"]
    assert entries["cleanup.policy"].config_source == 5

    def incremental(*ops: tuple[str, int, str | None]) -> int:
        r = h.call(
            request(
                44,
                1,
                resources=[
                    {
                        "resource_type": 2,
                        "resource_name": "t",
                        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
                    }
                ],
                validate_only=False,
            )
        )
        return int(r.responses[0].error_code)

    assert incremental(("retention.ms", 0, "5000"), ("cleanup.policy", 2, "compact")) == ErrorCode.none
    values = {c.name: c.value for c in describe(h, 2, "t", ["retention.ms", "cleanup.policy"]).configs}
    assert values == {"retention.ms": "5000", "cleanup.policy": "delete,compact"}
    assert incremental(("retention.ms", 2, "1")) == ErrorCode.invalid_config
    assert incremental(("retention.ms", 0, "1"), ("retention.ms", 1, None)) == ErrorCode.invalid_request
    assert incremental(("segment.bytes", 1, None)) == ErrorCode.none
    assert {c.name: c.config_source for c in describe(h, 2, "t", ["segment.bytes"]).configs} == {
        "segment.bytes": 5
    }

    legacy = h.call(
        request(
            33,
            2,
            resources=[
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [{"name": "retention.bytes", "value": "99"}],
                }
            ],
            validate_only=False,
        )
    ).responses[0]
    assert legacy.error_code == ErrorCode.none
    overrides = {c.name for c in describe(h, 2, "t").configs if c.config_source == 1}
    assert overrides == {"retention.bytes"}  # AlterConfigs replaces the whole set
    assert describe(h, 2, "nope").error_code == ErrorCode.unknown_topic_or_partition
    assert describe(h, 4, "7").error_code == ErrorCode.invalid_request
    broker_entries = {c.name: c for c in describe(h, 4, "1").configs}
    assert broker_entries["log.retention.hours"].config_source == 4


def test_metadata_survives_a_restart() -> None:
    """KRaft style: topics, configs and partitions are records in __cluster_metadata, replayed."""
    h = BrokerHarness()
    create_topics(
        h, {"name": "kept", "num_partitions": 2, "configs": [{"name": "retention.ms", "value": "77"}]}
    )
    topic_id = h.broker.image.topics["kept"].topic_id
    h.broker.shutdown(h.now_ms)
    again = BrokerHarness(store=h.store, now_ms=h.now_ms + 10)
    kept = again.broker.image.topics["kept"]
    assert kept.topic_id == topic_id and sorted(kept.partitions) == [0, 1]
    assert kept.configs == {"retention.ms": "77"}
    assert sorted(again.broker.partitions) == [("kept", 0), ("kept", 1)]


def test_auto_create_on_metadata() -> None:
    """Metadata for an unknown topic creates it (auto.create.topics.enable) and answers
    LEADER_NOT_AVAILABLE while it is created; with auto-creation off, UNKNOWN_TOPIC_OR_PARTITION."""
    h = BrokerHarness()
    ask = request(
        3,
        12,
        topics=[{"name": "auto", "topic_id": None}],
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    assert h.call(ask).topics[0].error_code == ErrorCode.leader_not_available
    assert h.call(ask).topics[0].error_code == ErrorCode.none
    off = BrokerHarness("auto.create.topics.enable=false")
    assert off.call(ask).topics[0].error_code == ErrorCode.unknown_topic_or_partition
    assert not off.broker.image.topics
