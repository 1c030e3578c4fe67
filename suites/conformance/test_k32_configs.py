"""Configs: DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44).

Rules from KIP-133 (DescribeConfigs / AlterConfigs), KIP-226 (config_source: 1
DYNAMIC_TOPIC_CONFIG, 5 DEFAULT_CONFIG, synonyms v1+), KIP-339 (IncrementalAlterConfigs:
SET, DELETE; DELETE reverts to the default) and Kafka's LogConfig (retention.ms default
604800000, cleanup.policy default delete).
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, ops

from .expect import expect, expect_code, expect_equal

FEATURE = "Configs"
TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
SET, DELETE = 0, 1


def describe(
    router: Router,
    caps: Capabilities,
    kind: int,
    name: str,
    keys: list[str] | None = None,
    version: int | None = None,
) -> Any:
    v = caps.best("describe_configs") if version is None else version
    # a broker's configs are described by that broker; a topic's by the controller, the broker that
    # answered the changes made to them (the others apply them from the metadata log a moment later)
    at = router.node(int(name)) if kind == BROKER else router.to_controller()
    answer = at.request(
        "describe_configs",
        v,
        include_synonyms=False,
        include_documentation=False,
        resources=[{"resource_type": kind, "resource_name": name, "configuration_keys": keys}],
    )
    return answer.results[0]


def incremental(
    router: Router,
    caps: Capabilities,
    topic: str,
    changes: list[tuple[str, int, str | None]],
    *,
    kind: int = TOPIC,
    validate_only: bool = False,
) -> Any:
    """IncrementalAlterConfigs on one resource (a topic unless ``kind`` says otherwise), at the
    controller; the resource's answer."""
    body = {
        "validate_only": validate_only,
        "resources": [
            {
                "resource_type": kind,
                "resource_name": topic,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in changes],
            }
        ],
    }
    version = caps.best("incremental_alter_configs")
    answer = ops.controller_request(router, "incremental_alter_configs", version, body, first_response_code)
    return answer.responses[0]


def first_response_code(answer: Any) -> Any:
    return answer.responses[0].error_code


def config_map(result: Any) -> dict[str, Any]:
    return {c.name: c for c in result.configs}


@pytest.mark.versions("describe_configs")
def test_describe_topic_defaults(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-133 / LogConfig: a new topic's configs include retention.ms=604800000 and cleanup.policy=delete,
    reported as defaults (config_source DEFAULT_CONFIG, v1+)."""
    result = describe(router, caps, TOPIC, topic, version=version)
    expect_code(result.error_code, "NONE", rule="KIP-133")
    configs = config_map(result)
    for name, value in (("retention.ms", "604800000"), ("cleanup.policy", "delete")):
        expect(name in configs, "KIP-133", f"{name} missing")
        expect_equal(configs[name].value, value, "LogConfig default", name)
        if version >= 1:
            expect_equal(int(configs[name].config_source), DEFAULT_CONFIG, "KIP-226", f"{name} config_source")


def test_describe_selected_keys(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-133: configuration_keys restricts the answer to the named configs."""
    result = describe(router, caps, TOPIC, topic, ["retention.ms", "segment.bytes"])
    expect_equal(sorted(config_map(result)), ["retention.ms", "segment.bytes"], "KIP-133", "configs returned")


def test_topic_override_is_reported_as_dynamic(
    router: Router, caps: Capabilities, topic_factory: Any
) -> None:
    """KIP-226: a config set at creation is returned with its value and config_source DYNAMIC_TOPIC_CONFIG."""
    name = topic_factory(configs={"retention.ms": "3600000"})
    entry = config_map(describe(router, caps, TOPIC, name, ["retention.ms"]))["retention.ms"]
    expect_equal(
        (entry.value, int(entry.config_source)), ("3600000", DYNAMIC_TOPIC_CONFIG), "KIP-226", "override"
    )


def test_describe_unknown_topic(router: Router, caps: Capabilities, unique: Any) -> None:
    """KIP-133: describing a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION."""
    result = describe(router, caps, TOPIC, unique("absent"))
    expect_code(result.error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule="KIP-133")


def test_describe_broker(router: Router, caps: Capabilities) -> None:
    """KIP-133: a broker resource (type 4, name = node id) is described with its configs."""
    node = ops.metadata(router, caps, []).brokers[0].node_id
    result = describe(router, caps, BROKER, str(node))
    expect_code(result.error_code, "NONE", rule="KIP-133")
    expect(len(result.configs) > 0, "KIP-133", "a broker described with no configs")


@pytest.mark.requires("incremental_alter_configs")
def test_incremental_set_then_delete(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-339: SET stores an override that DescribeConfigs returns; DELETE removes it and the default
    returns."""
    set_answer = incremental(router, caps, topic, [("retention.ms", SET, "7200000")])
    expect_code(set_answer.error_code, "NONE", rule="KIP-339")
    entry = config_map(describe(router, caps, TOPIC, topic, ["retention.ms"]))["retention.ms"]
    expect_equal(entry.value, "7200000", "KIP-339", "retention.ms after SET")
    expect_code(
        incremental(router, caps, topic, [("retention.ms", DELETE, None)]).error_code, "NONE", rule="KIP-339"
    )
    entry = config_map(describe(router, caps, TOPIC, topic, ["retention.ms"]))["retention.ms"]
    expect_equal(entry.value, "604800000", "KIP-339", "retention.ms after DELETE")


@pytest.mark.requires("incremental_alter_configs")
def test_incremental_unknown_config_is_invalid(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-339: setting a config name the broker does not know is INVALID_CONFIG."""
    result = incremental(router, caps, topic, [("no.such.config", SET, "1")])
    expect_code(result.error_code, "INVALID_CONFIG", rule="KIP-339")


@pytest.mark.requires("incremental_alter_configs")
def test_incremental_invalid_value_is_rejected(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-339 / LogConfig validation: a value of the wrong type (retention.ms=soon) is INVALID_CONFIG."""
    result = incremental(router, caps, topic, [("retention.ms", SET, "soon")])
    expect_code(result.error_code, "INVALID_CONFIG", rule="KIP-339")


@pytest.mark.requires("alter_configs")
def test_legacy_alter_replaces_every_override(router: Router, caps: Capabilities, topic_factory: Any) -> None:
    """KIP-133 AlterConfigs: the request replaces the whole set of overrides; one left out reverts to
    default."""
    name = topic_factory(configs={"retention.ms": "3600000"})
    body = {
        "validate_only": False,
        "resources": [
            {
                "resource_type": TOPIC,
                "resource_name": name,
                "configs": [{"name": "segment.ms", "value": "600000"}],
            }
        ],
    }
    version = caps.best("alter_configs")
    answer = ops.controller_request(router, "alter_configs", version, body, first_response_code)
    expect_code(answer.responses[0].error_code, "NONE", rule="KIP-133 AlterConfigs")
    configs = config_map(describe(router, caps, TOPIC, name, ["retention.ms", "segment.ms"]))
    expect_equal(
        (configs["segment.ms"].value, configs["retention.ms"].value),
        ("600000", "604800000"),
        "KIP-133 AlterConfigs",
        "(segment.ms, retention.ms) after replacing the overrides",
    )
