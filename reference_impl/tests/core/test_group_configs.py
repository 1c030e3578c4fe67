"""Group config resources (type 32; Kafka's
group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupConfig.java): checked as
``GroupConfig.validate`` checks them, described as ``ConfigHelper.createGroupConfigEntry`` lists them,
kept in the metadata log (replayed on restart, in snapshots) and read by the share-partitions."""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl.core.configs.group_configs import reset_duration_ms
from reference_impl.core.configs.model import ConfigError, ConfigSource
from reference_impl.core.configs.resolution import BrokerConfig, validate_group_configs
from reference_impl.core.controller.records import ControllerImage, decode_snapshot, encode_snapshot
from reference_impl.core.group.share_partition import AutoOffsetReset
from reference_impl.core.handlers.share_common import group_config
from reference_impl.core.metadata.image import GROUP_RESOURCE
from reference_impl.core.metadata.records import ConfigRecord
from reference_impl.protocol.errors import ErrorCode

from ..group.helpers import harness
from .harness import BrokerHarness, request
from .test_acls import ACL_CONFIGS, _create, _login
from .test_admin import describe

SET, DELETE, APPEND = 0, 1, 2
GROUP_RESOURCE_ACL, LITERAL, ALLOW, DESCRIBE_CONFIGS, ALTER_CONFIGS = 3, 3, 3, 10, 11  # acl_codes' numbers


def alter(
    h: BrokerHarness, group: str, *ops: tuple[str, int, str | None], validate_only: bool = False
) -> Any:
    return h.call(
        request(
            44,
            1,
            resources=[
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": group,
                    "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
                }
            ],
            validate_only=validate_only,
        )
    ).responses[0]


def described(h: BrokerHarness, group: str, keys: list[str] | None = None) -> dict[str, Any]:
    result = describe(h, GROUP_RESOURCE, group, keys)
    assert result.error_code == ErrorCode.none, result.error_message
    return {c.name: c for c in result.configs}


def test_describe_lists_every_key_with_broker_defaults_and_overrides() -> None:
    h = BrokerHarness("group.share.record.lock.duration.ms=20000")
    entries = described(h, "g")
    assert sorted(entries) == [
        "consumer.heartbeat.interval.ms",
        "consumer.session.timeout.ms",
        "share.auto.offset.reset",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
        "share.session.timeout.ms",
    ]
    lock = entries["share.record.lock.duration.ms"]
    # the broker's value, reported as DEFAULT_CONFIG (ConfigHelper.createGroupConfigEntry)
    assert (lock.value, lock.config_source) == ("20000", ConfigSource.DEFAULT_CONFIG)
    assert [(s.name, s.value) for s in lock.synonyms] == [("share.record.lock.duration.ms", "20000")]
    reset = entries["share.auto.offset.reset"]
    assert (reset.value, reset.config_source, reset.config_type) == ("latest", ConfigSource.DEFAULT_CONFIG, 2)
    assert entries["consumer.session.timeout.ms"].value == "45000"

    assert alter(h, "g", ("share.auto.offset.reset", SET, "earliest")).error_code == ErrorCode.none
    reset = described(h, "g", ["share.auto.offset.reset"])["share.auto.offset.reset"]
    assert (reset.value, reset.config_source) == ("earliest", ConfigSource.DYNAMIC_GROUP_CONFIG)
    assert described(h, "other", ["share.auto.offset.reset"])["share.auto.offset.reset"].value == "latest"
    assert alter(h, "g", ("share.auto.offset.reset", DELETE, None)).error_code == ErrorCode.none
    assert h.broker.image.group_configs == {}


@pytest.mark.parametrize(
    ("ops", "code"),
    [
        ((("no.such", SET, "1"),), ErrorCode.invalid_config),
        ((("share.auto.offset.reset", SET, "by_duration:-PT1H"),), ErrorCode.invalid_config),
        ((("consumer.session.timeout.ms", SET, "x"),), ErrorCode.invalid_config),
        ((("consumer.session.timeout.ms", SET, "44999"),), ErrorCode.invalid_config),  # < group.consumer.min
        ((("share.record.lock.duration.ms", SET, "60001"),), ErrorCode.invalid_config),  # > group.share.max
        ((("consumer.session.timeout.ms", APPEND, "1"),), ErrorCode.invalid_config),  # not a list
        (
            (("share.session.timeout.ms", SET, "50000"), ("share.session.timeout.ms", DELETE, None)),
            ErrorCode.invalid_request,
        ),
        # null, not DELETE: ConfigAdminManager.preprocess refuses it on the broker, for every resource
        ((("share.auto.offset.reset", SET, None),), ErrorCode.invalid_request),
    ],
    ids=[
        "unknown",
        "not-a-choice",
        "not-an-int",
        "below-min",
        "above-max",
        "append",
        "named-twice",
        "set-null",
    ],
)
def test_bad_changes_are_refused(ops: tuple[tuple[str, int, str | None], ...], code: ErrorCode) -> None:
    h = BrokerHarness()
    assert alter(h, "g", ("share.auto.offset.reset", SET, "earliest")).error_code == ErrorCode.none
    assert alter(h, "g", *ops).error_code == code
    assert h.broker.image.group_configs == {"g": {"share.auto.offset.reset": "earliest"}}


def test_an_empty_group_name_is_invalid_request() -> None:
    assert alter(BrokerHarness(), "", ("share.auto.offset.reset", SET, "earliest")).error_code == (
        ErrorCode.invalid_request
    )


def test_session_timeout_must_exceed_heartbeat_interval() -> None:
    broker = BrokerConfig.parse(
        1, ["group.share.min.session.timeout.ms=1000", "group.share.max.heartbeat.interval.ms=60000"]
    )
    ok = {"share.session.timeout.ms": "10000", "share.heartbeat.interval.ms": "9999"}
    assert validate_group_configs(ok, broker) == ok
    with pytest.raises(ConfigError, match=r"must be greater than share\.heartbeat\.interval\.ms"):
        validate_group_configs(ok | {"share.heartbeat.interval.ms": "10000"}, broker)
    # a key the group does not set counts with the broker's value (heartbeat 5000)
    with pytest.raises(ConfigError, match="must be greater than"):
        validate_group_configs({"share.session.timeout.ms": "5000"}, broker)


def test_validate_only_and_legacy_alter_configs() -> None:
    h = BrokerHarness()
    answer = alter(h, "g", ("share.auto.offset.reset", SET, "earliest"), validate_only=True)
    assert answer.error_code == ErrorCode.none
    assert h.broker.image.group_configs == {}
    assert alter(h, "g", ("consumer.heartbeat.interval.ms", SET, "6000")).error_code == ErrorCode.none
    legacy = h.call(
        request(
            33,
            2,
            resources=[
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": "g",
                    "configs": [{"name": "share.auto.offset.reset", "value": "earliest"}],
                }
            ],
            validate_only=False,
        )
    ).responses[0]
    assert legacy.error_code == ErrorCode.none
    assert h.broker.image.group_configs == {"g": {"share.auto.offset.reset": "earliest"}}  # replaced whole


def test_group_configs_survive_a_restart_and_a_snapshot() -> None:
    h = BrokerHarness()
    assert alter(h, "g", ("share.record.lock.duration.ms", SET, "16000")).error_code == ErrorCode.none
    again = BrokerHarness(store=h.store)
    assert described(again, "g", ["share.record.lock.duration.ms"])[
        "share.record.lock.duration.ms"
    ].value == ("16000")
    image = ControllerImage(cluster_id="c", controller_id=1)
    image.apply(ConfigRecord(resource_type=GROUP_RESOURCE, resource_name="g", name="k", value="v"), 0)
    assert decode_snapshot(encode_snapshot(image), "c", 1).group_configs == {"g": {"k": "v"}}


def test_list_config_resources_names_groups_with_configs() -> None:
    h = BrokerHarness()
    assert alter(h, "g", ("share.auto.offset.reset", SET, "earliest")).error_code == ErrorCode.none
    answer = h.call(request(74, 1, resource_types=[GROUP_RESOURCE]))
    assert [(r.resource_name, r.resource_type) for r in answer.config_resources] == [("g", GROUP_RESOURCE)]


def test_share_partitions_take_the_groups_reset_and_lock() -> None:
    h = BrokerHarness("group.share.record.lock.duration.ms=30000")
    leader = h.broker.group_coordinator.share.leader
    assert group_config(h.broker, leader, "g") is leader.config
    ops = (("share.auto.offset.reset", SET, "earliest"), ("share.record.lock.duration.ms", SET, "15000"))
    assert alter(h, "g", *ops).error_code == ErrorCode.none
    config = group_config(h.broker, leader, "g")
    assert (config.auto_offset_reset, config.lock_duration_ms) == (AutoOffsetReset.EARLIEST, 15000)
    assert config.delivery_attempt_limit == leader.config.delivery_attempt_limit


def test_a_consumer_group_takes_its_heartbeat_interval_and_session_timeout() -> None:
    """GroupMetadataManager reads ``consumer.heartbeat.interval.ms``/``consumer.session.timeout.ms``
    of the group before the broker's ``group.consumer.*``."""
    h = harness()
    ops = (("consumer.heartbeat.interval.ms", SET, "7000"), ("consumer.session.timeout.ms", SET, "50000"))
    assert alter(h, "cg", *ops).error_code == ErrorCode.none

    def join(group: str) -> Any:
        body = {"group_id": group, "member_id": "m-" + group, "member_epoch": 0, "rebalance_timeout": 30_000}
        return h.call(request(68, 1, topic_partitions=[], subscribed_topic_names=[], **body))

    answers = [join(g) for g in ("cg", "plain")]
    assert [a.error_code for a in answers] == [ErrorCode.none] * 2, [a.error_message for a in answers]
    assert [a.heartbeat_interval.total_seconds() for a in answers] == [7.0, 5.0]
    h.advance(49_000)
    described = h.call(request(69, 0, group_ids=["cg", "plain"], include_authorized_operations=False))
    members = {g.group_id: len(g.members) for g in described.groups}
    assert members == {"cg": 1, "plain": 0}  # 45 s (the broker's) ran out, 50 s (the group's) did not


def test_a_share_group_takes_its_heartbeat_interval() -> None:
    h = harness()
    assert alter(h, "sg", ("share.heartbeat.interval.ms", SET, "6000")).error_code == ErrorCode.none

    def join(group: str) -> Any:
        body = {"group_id": group, "member_id": "m-" + group, "member_epoch": 0, "rack_id": None}
        return h.call(request(76, 1, subscribed_topic_names=[], **body))

    answers = [join(g) for g in ("sg", "plain")]
    assert [a.error_code for a in answers] == [ErrorCode.none] * 2, [a.error_message for a in answers]
    assert [a.heartbeat_interval.total_seconds() for a in answers] == [6.0, 5.0]


def test_group_configs_need_the_config_operations_on_the_group() -> None:
    """ConfigHelper/ControllerApis.authorizeAlterResource: DESCRIBE_CONFIGS / ALTER_CONFIGS on the
    GROUP resource, GROUP_AUTHORIZATION_FAILED without."""
    h = BrokerHarness(*ACL_CONFIGS)
    admin = _login(h, "admin", "admin-secret")
    alice = _login(h, "alice", "alice-secret")
    resource = {"resource_type": GROUP_RESOURCE, "resource_name": "g"}
    change = [{"name": "share.auto.offset.reset", "config_operation": SET, "value": "earliest"}]
    alter_body = request(44, 1, resources=[{**resource, "configs": change}], validate_only=False)
    describe_body = request(
        32, 4, resources=[{**resource, "configuration_keys": None}], include_synonyms=False,
        include_documentation=False,
    )  # fmt: skip

    def codes() -> tuple[int, int]:
        return (
            int(h.call(alter_body, alice).responses[0].error_code),
            int(h.call(describe_body, alice).results[0].error_code),
        )

    assert codes() == (ErrorCode.group_authorization_failed,) * 2
    grant = [
        (GROUP_RESOURCE_ACL, "g", LITERAL, "User:alice", op, ALLOW)
        for op in (ALTER_CONFIGS, DESCRIBE_CONFIGS)
    ]
    assert _create(h, admin, *grant) == [0, 0]
    assert codes() == (ErrorCode.none,) * 2


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("by_duration:PT1H", 3_600_000),
        ("by_duration:P1DT0.5S", 86_400_500),
        ("by_duration:pt10m", 600_000),
        ("by_duration:PT0S", 0),
        ("by_duration:-PT1H", None),  # negative: Kafka refuses it
        ("by_duration:P", None),
        ("by_duration:PT", None),
        ("by_duration:P1DT", None),
        ("by_duration:1H", None),
        ("latest", None),
    ],
)
def test_by_duration_values(value: str, ms: int | None) -> None:
    """ShareGroupAutoOffsetResetStrategy: ``by_duration:`` and a java.time.Duration (PnDTnHnMn.nS)."""
    assert reset_duration_ms(value) == ms
