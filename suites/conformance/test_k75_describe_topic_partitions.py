"""DescribeTopicPartitions (75, KIP-966): topics and partitions, paginated with a cursor.

Rules from KIP-966 and Kafka's broker (``core/src/main/java/kafka/server/handlers/
DescribeTopicPartitionsRequestHandler.java``, ``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse``
in ``core/src/main/scala/kafka/server/metadata/KRaftMetadataCache.scala``): the same partitions as
Metadata; topics in name order; at most ``response_partition_limit`` partitions per answer, the rest
named by ``next_cursor``; an unknown named topic is UNKNOWN_TOPIC_OR_PARTITION; the cursor's topic
must be one of the named topics (INVALID_REQUEST); an empty topic list means every topic.
Each case runs at every version the target advertises (skipped where it advertises none).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, WireClient, ops

from .expect import code_name, expect, expect_code, expect_equal

FEATURE = "DescribeTopicPartitions"
RULE = "KIP-966"
HANDLER = "DescribeTopicPartitionsRequestHandler.java"


def _describe(
    wire: WireClient, version: int, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
) -> Any:
    return wire.request(
        "describe_topic_partitions",
        version,
        topics=[{"name": n} for n in names],
        response_partition_limit=limit,
        cursor=None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]},
    )


def _pages(wire: WireClient, version: int, names: list[str], limit: int) -> list[list[tuple[str, int]]]:
    """Every page of the answer, following ``next_cursor`` (at most 20 pages)."""
    pages: list[list[tuple[str, int]]] = []
    cursor: tuple[str, int] | None = None
    for _ in range(20):
        answer = _describe(wire, version, names, limit, cursor)
        pages.append(
            [(t.name, int(p.partition_index)) for t in answer.topics if t.name in names for p in t.partitions]
        )
        if answer.next_cursor is None:
            return pages
        cursor = (answer.next_cursor.topic_name, int(answer.next_cursor.partition_index))
    raise AssertionError(f"[{RULE}] the cursor did not end within 20 pages: {pages}")


@pytest.mark.versions("describe_topic_partitions")
def test_matches_metadata(
    version: int, wire: WireClient, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """KIP-966: a named topic is described with its id, and each partition with the leader, epoch,
    replicas and ISR Metadata gives; no cursor when everything fit; eligible leader replicas are empty
    lists or null (never a replica outside the ISR's replicas)."""
    name = topic_factory(partitions=3)
    answer = _describe(wire, version, [name])
    expect(answer.next_cursor is None, RULE, f"a next cursor {answer.next_cursor} when everything fit")
    (entry,) = answer.topics
    expect_code(entry.error_code, "NONE", rule=RULE)
    meta = ops.metadata(wire, caps, [name]).topics[0]
    expect_equal(entry.topic_id, meta.topic_id, RULE, "topic id (Metadata's)")
    described = [
        (
            int(p.partition_index),
            int(p.leader_id),
            int(p.leader_epoch),
            list(p.replica_nodes),
            list(p.isr_nodes),
        )
        for p in entry.partitions
    ]
    listed = sorted(
        (
            int(p.partition_index),
            int(p.leader_id),
            int(p.leader_epoch),
            list(p.replica_nodes),
            list(p.isr_nodes),
        )
        for p in meta.partitions
    )
    expect_equal(described, listed, RULE, "partitions (index, leader, epoch, replicas, ISR) as Metadata's")
    for p in entry.partitions:
        for field in ("eligible_leader_replicas", "last_known_elr"):
            value = getattr(p, field)
            expect(
                value is None or set(value) <= set(p.replica_nodes),
                RULE,
                f"{field} {value} holds a node that is not a replica",
            )


@pytest.mark.versions("describe_topic_partitions")
def test_pagination_follows_the_cursor(
    version: int, wire: WireClient, topic_factory: Callable[..., str]
) -> None:
    """KIP-966: with ``response_partition_limit`` 2 over topics of 3 and 2 partitions, the pages hold
    at most 2 partitions, in name then index order, and following ``next_cursor`` yields each
    partition exactly once."""
    first, second = topic_factory(partitions=3), topic_factory(partitions=2)
    sizes = {first: 3, second: 2}
    names = sorted(sizes)
    pages = _pages(wire, version, names, 2)
    for page in pages:
        expect(len(page) <= 2, RULE, f"a page of {len(page)} partitions with limit 2: {pages}")
    flat = [tp for page in pages for tp in page]
    wanted = [(n, i) for n in names for i in range(sizes[n])]
    expect_equal(flat, wanted, RULE, "partitions across the pages, in (name, index) order, each once")


@pytest.mark.versions("describe_topic_partitions")
def test_cursor_names_the_first_partition_left_out(
    version: int, wire: WireClient, topic_factory: Callable[..., str]
) -> None:
    """KRaftMetadataCache: a page that ends inside a topic answers that topic's partitions that fit
    and a cursor naming it and its first partition left out."""
    name = topic_factory(partitions=3)
    answer = _describe(wire, version, [name], limit=2)
    (entry,) = answer.topics
    expect_equal([int(p.partition_index) for p in entry.partitions], [0, 1], RULE, "partitions of page 1")
    cursor = answer.next_cursor
    expect(cursor is not None, RULE, "no next cursor after a page that ended inside the topic")
    expect_equal((cursor.topic_name, int(cursor.partition_index)), (name, 2), RULE, "next cursor")
    rest = _describe(wire, version, [name], limit=2, cursor=(name, 2))
    expect_equal(
        [int(p.partition_index) for p in rest.topics[0].partitions], [2], RULE, "partitions of page 2"
    )
    expect(rest.next_cursor is None, RULE, f"a next cursor {rest.next_cursor} after the last page")


@pytest.mark.versions("describe_topic_partitions")
def test_unknown_topic(version: int, wire: WireClient, unique: Callable[[str], str]) -> None:
    """A named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, with no partitions."""
    name = unique("missing")
    (entry,) = _describe(wire, version, [name]).topics
    expect_equal(entry.name, name, RULE, "topic name")
    expect_code(entry.error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule=HANDLER)
    expect_equal(list(entry.partitions), [], RULE, "partitions of an unknown topic")


@pytest.mark.versions("describe_topic_partitions")
def test_cursor_topic_must_be_named(
    version: int, wire: WireClient, topic_factory: Callable[..., str], unique: Callable[[str], str]
) -> None:
    """The cursor's topic must be among the named topics: INVALID_REQUEST otherwise."""
    name = topic_factory()
    answer = _describe(wire, version, [name], cursor=(name[:-1], 0))
    codes = {code_name(t.error_code) for t in answer.topics}
    expect_equal(codes, {"INVALID_REQUEST"}, HANDLER, "topic error codes with a cursor outside the list")


@pytest.mark.versions("describe_topic_partitions")
def test_empty_list_describes_every_topic(
    version: int, wire: WireClient, topic_factory: Callable[..., str]
) -> None:
    """An empty topic list describes every topic (here: the test's two, following the cursor)."""
    names = {topic_factory(), topic_factory(partitions=2)}
    seen: set[str] = set()
    cursor: tuple[str, int] | None = None
    for _ in range(200):
        answer = _describe(wire, version, [], 500, cursor)
        seen |= {t.name for t in answer.topics if code_name(t.error_code) == "NONE"}
        if answer.next_cursor is None:
            break
        cursor = (answer.next_cursor.topic_name, int(answer.next_cursor.partition_index))
    expect(names <= seen, RULE, f"{sorted(names - seen)} not described by an empty topic list")
