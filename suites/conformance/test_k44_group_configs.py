"""Group configs (KIP-848 / KIP-932): config resources of type GROUP (32) through
IncrementalAlterConfigs (44) and DescribeConfigs (32).

Rules from Kafka's ``GroupConfig``
(group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupConfig.java): the keys
``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``, ``share.session.timeout.ms``,
``share.heartbeat.interval.ms``, ``share.record.lock.duration.ms`` (INT) and
``share.auto.offset.reset`` (STRING, ``latest``, ``earliest`` or, in later releases,
``by_duration:<ISO-8601 duration>``; default ``latest``); any other name
is INVALID_CONFIG ("Unknown group config name"), as is a value that does not parse or is not one of
the choices. A set key is described with config_source 8 (DYNAMIC_GROUP_CONFIG, Kafka's
``ConfigHelper.createGroupConfigEntry``). ``share.auto.offset.reset=earliest`` makes a share-partition
the group starts begin at the log start (KIP-932), so records produced before anyone joined are
delivered; ``by_duration:PT1H`` at the first record at most an hour old (a target that refuses
``by_duration`` skips that case).

Targets without consumer-protocol groups (ConsumerGroupHeartbeat, 68) predate group configs and skip;
the share-group cases also need ShareGroupHeartbeat/ShareFetch.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, describe_absence, ops
from fixtures.wire.share import ShareConsumer, acquired_offsets

from .expect import expect, expect_code, expect_equal
from .test_k32_configs import incremental

FEATURE = "Group configs"
RULE = "GroupConfig (KIP-848/KIP-932)"
GROUP = 32
DYNAMIC_GROUP_CONFIG = 8
SET, DELETE = 0, 1
RESET = "share.auto.offset.reset"
SEEN_WAIT_S = 10.0  # a config change reaches the other brokers through the metadata log
SEEN_PAUSE_S = 0.1
INVALID_CONFIG = 40
TWO_HOURS_MS = 2 * 3600 * 1000


def _need(caps: Capabilities, *apis: str) -> None:
    for api in ("incremental_alter_configs", "describe_configs", *apis):
        if not caps.supports(api):
            pytest.skip(describe_absence(api, caps))


@pytest.fixture(autouse=True)
def _group_configs(caps: Capabilities) -> None:
    _need(caps, "consumer_group_heartbeat")


alter = functools.partial(incremental, kind=GROUP)
"""IncrementalAlterConfigs on one group resource (at the controller); the resource's answer."""


def describe(at: WireClient, caps: Capabilities, group: str, keys: list[str] | None = None) -> Any:
    answer = at.request(
        "describe_configs",
        caps.best("describe_configs"),
        include_synonyms=False,
        include_documentation=False,
        resources=[{"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}],
    )
    return answer.results[0]


def configs_of(result: Any) -> dict[str, Any]:
    expect_code(result.error_code, "NONE", rule=RULE, where="DescribeConfigs of a group")
    return {c.name: c for c in result.configs}


def test_set_then_describe_then_delete(router: Router, caps: Capabilities, unique: Any) -> None:
    """A SET override is described with its value and source DYNAMIC_GROUP_CONFIG; DELETE brings the
    default back (``share.auto.offset.reset`` ``latest``); every GroupConfig key is described."""
    group = unique("gcfg")
    at = router.to_controller()
    before = configs_of(describe(at, caps, group))
    for key in ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"):
        expect(key in before, RULE, f"{key} missing from a group's configs")
    answer = alter(router, caps, group, [("consumer.heartbeat.interval.ms", SET, "6000")])
    expect_code(answer.error_code, "NONE", rule=RULE, where="SET consumer.heartbeat.interval.ms")
    entry = configs_of(describe(at, caps, group, ["consumer.heartbeat.interval.ms"]))[
        "consumer.heartbeat.interval.ms"
    ]
    expect_equal(
        (entry.value, int(entry.config_source)), ("6000", DYNAMIC_GROUP_CONFIG), RULE, "override described"
    )
    answer = alter(router, caps, group, [("consumer.heartbeat.interval.ms", DELETE, None)])
    expect_code(answer.error_code, "NONE", rule=RULE, where="DELETE consumer.heartbeat.interval.ms")
    entry = configs_of(describe(at, caps, group, ["consumer.heartbeat.interval.ms"]))[
        "consumer.heartbeat.interval.ms"
    ]
    expect(
        int(entry.config_source) != DYNAMIC_GROUP_CONFIG, RULE, "still described as an override after DELETE"
    )
    expect_equal(entry.value, before["consumer.heartbeat.interval.ms"].value, RULE, "value after DELETE")


def test_unknown_key_is_invalid_config(router: Router, caps: Capabilities, unique: Any) -> None:
    """GroupConfig.validateNames: a name it does not define is INVALID_CONFIG."""
    answer = alter(router, caps, unique("gcfg"), [("no.such.group.config", SET, "1")])
    expect_code(answer.error_code, "INVALID_CONFIG", rule=RULE)


@pytest.mark.parametrize(
    ("key", "value"),
    [("consumer.session.timeout.ms", "soon"), ("consumer.heartbeat.interval.ms", "0")],
    ids=["not-an-int", "below-at-least-1"],
)
def test_bad_value_is_invalid_config(
    key: str, value: str, router: Router, caps: Capabilities, unique: Any
) -> None:
    """GroupConfig's ConfigDef: a value that does not parse as its type, or is outside the key's
    range, is INVALID_CONFIG."""
    answer = alter(router, caps, unique("gcfg"), [(key, SET, value)])
    expect_code(answer.error_code, "INVALID_CONFIG", rule=RULE, where=f"{key}={value}")


def test_validate_only_changes_nothing(router: Router, caps: Capabilities, unique: Any) -> None:
    """``validate_only``: a good change is answered NONE and not applied."""
    group = unique("gcfg")
    answer = alter(router, caps, group, [("consumer.heartbeat.interval.ms", SET, "6000")], validate_only=True)
    expect_code(answer.error_code, "NONE", rule=RULE, where="validate_only")
    entry = configs_of(describe(router.to_controller(), caps, group, ["consumer.heartbeat.interval.ms"]))[
        "consumer.heartbeat.interval.ms"
    ]
    expect(int(entry.config_source) != DYNAMIC_GROUP_CONFIG, RULE, "validate_only applied the change")


def test_share_auto_offset_reset_choices(router: Router, caps: Capabilities, unique: Any) -> None:
    """``share.auto.offset.reset`` is ``latest`` or ``earliest``; anything else is INVALID_CONFIG."""
    _need(caps, "share_group_heartbeat")
    answer = alter(router, caps, unique("gcfg"), [(RESET, SET, "sometimes")])
    expect_code(answer.error_code, "INVALID_CONFIG", rule=RULE, where=f"{RESET}=sometimes")


def first_acquired(
    router: Router, caps: Capabilities, group: str, topic: str, reset: str, expected: int
) -> list[int]:
    """Set ``share.auto.offset.reset`` of a new ``group``, wait until partition 0's leader sees it,
    join, and return the offsets the first fetches acquire (until ``expected`` came, three fetches
    at most: the first opens the session and records may come with it or the next)."""
    answer = alter(router, caps, group, [(RESET, SET, reset)])
    if reset.startswith("by_duration:") and int(answer.error_code) == INVALID_CONFIG:
        pytest.skip(f"the target refuses {RESET}={reset} (by_duration came after share groups)")
    expect_code(answer.error_code, "NONE", rule=RULE, where=f"SET {RESET}={reset}")
    leader = router.to_leader(topic, 0)
    deadline = time.monotonic() + SEEN_WAIT_S
    while configs_of(describe(leader, caps, group, [RESET]))[RESET].value != reset:
        expect(time.monotonic() < deadline, RULE, f"the leader never saw {RESET}={reset}")
        time.sleep(SEEN_PAUSE_S)
    tp = (ops.topic_id(router, caps, topic), 0)
    m = ShareConsumer(router.to_coordinator(group), leader, caps, group)
    expect(m.join([topic], {tp}), RULE, f"member never assigned {tp}")
    got: dict[int, int] = {}
    for _ in range(3):
        answer = m.fetch([tp], max_wait_ms=500)
        expect_code(answer.error_code, "NONE", rule=RULE, where="ShareFetch")
        got |= acquired_offsets(answer, tp)
        if len(got) >= expected:
            break
    return sorted(got)


def produce(router: Router, caps: Capabilities, topic: str, count: int, timestamp_ms: int | None) -> None:
    values = [b"v%d" % i for i in range(count)]
    produced = ops.produce_values(router, caps, topic, values, timestamp_ms=timestamp_ms)
    expect_code(produced.error_code, "NONE", rule="setup: Produce")


def test_share_auto_offset_reset_earliest_reads_from_log_start(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-932: with ``share.auto.offset.reset=earliest`` a share-partition the group starts begins at
    the log start, so records produced before the member joined are acquired (with ``latest``, the
    default, none would be)."""
    _need(caps, "share_group_heartbeat", "share_fetch", "share_acknowledge")
    produce(router, caps, topic, 3, None)
    got = first_acquired(router, caps, unique("sg"), topic, "earliest", 3)
    expect_equal(got, [0, 1, 2], RULE, "offsets acquired by the first member of an earliest group")


def test_share_auto_offset_reset_by_duration_starts_at_that_age(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """Kafka's ShareGroupAutoOffsetResetStrategy: ``by_duration:PT1H`` starts a new share-partition
    at the first record stamped at most an hour ago: two records stamped two hours back are
    skipped, the two stamped now are acquired."""
    _need(caps, "share_group_heartbeat", "share_fetch", "share_acknowledge")
    produce(router, caps, topic, 2, int(time.time() * 1000) - TWO_HOURS_MS)
    produce(router, caps, topic, 2, None)
    got = first_acquired(router, caps, unique("sg"), topic, "by_duration:PT1H", 2)
    expect_equal(got, [2, 3], RULE, "offsets acquired by the first member of a by_duration:PT1H group")
