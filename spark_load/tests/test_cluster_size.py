"""``kafka-harness load --brokers``: the launched reference cluster's size and the topic's
replication factor follow from each other (:func:`spark_load.cli.resolve_cluster_size`)."""

from __future__ import annotations

import pytest

from spark_load.cli import build_parser, resolve_cluster_size


def _sized(*argv: str) -> tuple[int, int] | None:
    args = build_parser().parse_args(["--target", "reference", *argv])
    return (args.brokers, args.replication_factor) if resolve_cluster_size(args) else None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), (1, 1)),
        (("--brokers", "3"), (3, 3)),
        (("--brokers", "5"), (5, 3)),
        (("--replication-factor", "3"), (3, 3)),
        (("--brokers", "3", "--replication-factor", "1"), (3, 1)),
    ],
)
def test_brokers_and_replication_factor_follow_from_each_other(
    argv: tuple[str, ...], expected: tuple[int, int]
) -> None:
    assert _sized(*argv) == expected


@pytest.mark.parametrize("argv", [("--brokers", "0"), ("--brokers", "2", "--replication-factor", "3")])
def test_a_cluster_too_small_for_its_topic_cannot_run(argv: tuple[str, ...]) -> None:
    assert _sized(*argv) is None


def test_an_external_target_keeps_the_replication_factor_it_is_given() -> None:
    args = build_parser().parse_args(["--target", "bootstrap:127.0.0.1:9092", "--replication-factor", "3"])
    assert resolve_cluster_size(args)
    assert args.replication_factor == 3
