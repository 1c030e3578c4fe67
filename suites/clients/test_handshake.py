"""Every client's first exchanges with the target: ApiVersions, then Metadata."""

from __future__ import annotations

from collections.abc import Callable

from fixtures.clients import Client

FEATURE = "Handshake"


def test_handshake(kafka_client: Client, topic_factory: Callable[..., str]) -> None:
    """KIP-35 / KIP-511 and the protocol guide (Metadata): a client completes ApiVersions, then reads the
    topic's metadata and sees every partition."""
    topic = topic_factory(partitions=3)
    assert kafka_client.topic_partitions(topic) == 3, (
        f"{kafka_client.name} does not see 3 partitions of {topic}"
    )
