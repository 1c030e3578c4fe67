"""Admin operations through each client: topics and consumer groups."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from fixtures.clients import Client, wait_for
from fixtures.wire import Capabilities, Router, ops

FEATURE = "Admin"
T = TypeVar("T")


def test_topic_lifecycle(kafka_client: Client, unique: Callable[[str], str]) -> None:
    """Protocol guide (CreateTopics, Metadata, DeleteTopics): a topic a client creates with 3 partitions is
    listed and described with 3 partitions; once deleted it is no longer listed."""
    kafka_client.require("admin")
    name = unique("t")
    kafka_client.create_topic(name, 3)
    wait_for(lambda: name in kafka_client.list_topics(), f"{name} listed after CreateTopics")
    # On a cluster each broker learns the topic from the metadata log in its own time: the listing and
    # the description may come from different brokers, so the description is awaited too.
    wait_for(lambda: kafka_client.topic_partitions(name) == 3, f"{name} described with 3 partitions")
    kafka_client.delete_topic(name)
    wait_for(lambda: name not in kafka_client.list_topics(), f"{name} gone after DeleteTopics")


def test_group_admin(
    kafka_client: Client,
    topic_factory: Callable[..., str],
    unique: Callable[[str], str],
    router: Router,
    caps: Capabilities,
) -> None:
    """Protocol guide (ListGroups, DescribeGroups, OffsetFetch): a group with committed offsets and no members
    is listed, described as Empty with no members, and its committed offsets read back as committed."""
    kafka_client.require("group_admin")
    topic, group = topic_factory(partitions=2), unique("g")
    for p in (0, 1):
        answer = ops.produce_values(router, caps, topic, [b"a", b"b", b"c"], partition=p)
        ops.check(answer.error_code, "setup")
    kafka_client.commit(group, topic, {0: 2, 1: 1})
    wait_for(lambda: group in kafka_client.list_groups(), f"{group} listed by ListGroups")
    described = through(kafka_client, "DescribeGroups", lambda: kafka_client.describe_group(group))
    assert (str(described["state"]).lower(), described["members"]) == ("empty", 0), f"described {described}"
    offsets = through(kafka_client, "OffsetFetch", lambda: kafka_client.group_offsets(group, topic))
    assert offsets == {0: 2, 1: 1}, f"committed offsets read back: {offsets}"


def through(client: Client, api: str, call: Callable[[], T]) -> T:
    """Run one admin call; the client failing on the target's answer is a finding, named by its API."""
    try:
        return call()
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
        raise AssertionError(f"{client.name} failed on the target's {api} answer: {why}") from exc
