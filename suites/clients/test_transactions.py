"""Transactions through each client: a consume-transform-produce copy, read back read_committed."""

from __future__ import annotations

from collections.abc import Callable

from fixtures.clients import Client
from fixtures.wire import Capabilities, Router

from .scenario import by_partition, first_difference, offset_fetch, records

FEATURE = "Transactions"
PARTITIONS, PER_PARTITION = 2, 15


def test_transactional_copy(
    kafka_client: Client,
    topic_factory: Callable[..., str],
    unique: Callable[[str], str],
    router: Router,
    caps: Capabilities,
) -> None:
    """KIP-98 (transactions) and KIP-447: an aborted transaction and then a committed copy of a source topic
    with the consumed offsets in it; read_committed sees exactly the committed copy, read_uncommitted sees the
    aborted records too, and the group's committed offsets are the source's end."""
    kafka_client.require("transactions", "consume")
    src, dst = topic_factory(partitions=PARTITIONS), topic_factory(partitions=PARTITIONS)
    group = unique("g")
    kafka_client.produce(src, records("source", PARTITIONS, PER_PARTITION))
    source = kafka_client.consume(src, list(range(PARTITIONS)), PARTITIONS * PER_PARTITION)
    assert len(source) == PARTITIONS * PER_PARTITION, f"read {len(source)} source records"
    copy = [(g.partition, g.key, g.value) for g in source]
    aborted = [(p, None, f"aborted-{p}-{i}".encode()) for p in range(PARTITIONS) for i in range(5)]
    ends = {p: PER_PARTITION for p in range(PARTITIONS)}
    kafka_client.transactions(
        unique("txn"), dst, [(aborted, False), (copy, True)], offsets=(group, src, ends)
    )

    committed = kafka_client.consume(dst, list(range(PARTITIONS)), len(copy), read_committed=True)
    want, have = by_partition(copy), by_partition(committed)
    for p in range(PARTITIONS):
        assert have.get(p, []) == want[p], (
            f"read_committed, partition {p}: {first_difference(want[p], have.get(p, []))}"
        )
    everything = kafka_client.consume(dst, list(range(PARTITIONS)), len(copy) + len(aborted))
    assert sum(1 for g in everything if g.value.startswith(b"aborted-")) == len(aborted), (
        "read_uncommitted does not see the aborted transaction's records"
    )
    assert offset_fetch(router, caps, group, src, list(range(PARTITIONS))) == ends, (
        "offsets committed in the transaction"
    )
