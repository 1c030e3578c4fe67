"""Every client's first exchanges with the target: ApiVersions, then Metadata."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from fixtures.clients import CLIENTS, Client, ClientUnavailableError, make_client
from fixtures.targets.secured import ADMIN, OAUTH_SCOPE
from fixtures.wire import WireClient
from fixtures.wire.security import ClientSecurity, default_security

FEATURE = "Handshake"


def test_handshake(kafka_client: Client, topic_factory: Callable[..., str]) -> None:
    """KIP-35 / KIP-511 and the protocol guide (Metadata): a client completes ApiVersions, then reads the
    topic's metadata and sees every partition."""
    topic = topic_factory(partitions=3)
    assert kafka_client.topic_partitions(topic) == 3, (
        f"{kafka_client.name} does not see 3 partitions of {topic}"
    )


@pytest.mark.parametrize("name", CLIENTS)
def test_handshake_with_oauthbearer(
    name: str, topic_factory: Callable[..., str], bootstrap_servers: str
) -> None:
    """RFC 7628 / KIP-255 with unsecured tokens (Kafka's OAuthBearerUnsecuredJws): the client
    authenticates with OAUTHBEARER through its own token machinery (librdkafka's unsecure JWT for
    confluent-kafka and kcat, kafka-python's and aiokafka's token providers, kafkajs's
    oauthBearerProvider) and reads the topic's metadata. Skipped when the run is not SASL, the
    listener does not enable OAUTHBEARER, or the client is not installed."""
    run = default_security() or ClientSecurity()
    if not run.sasl:
        pytest.skip(f"the target is reached over {run.protocol}: no SASL listener")
    with WireClient(bootstrap_servers.split(",")[0], security=run, authenticate=False) as wire:
        wire.api_versions()
        offered = wire.request("sasl_handshake", 1, mechanism="OAUTHBEARER")
    if int(offered.error_code) != 0:
        pytest.skip(f"the listener does not enable OAUTHBEARER (it offers {list(offered.mechanisms)})")
    try:
        client = make_client(name, bootstrap_servers)
    except ClientUnavailableError as exc:
        pytest.skip(f"client unavailable: {name}: {exc}")
    client.security = dataclasses.replace(
        run, mechanism="OAUTHBEARER", username=ADMIN, password=None, oauth_scope=(OAUTH_SCOPE,), source=None
    )
    topic = topic_factory(partitions=3)
    try:
        assert client.topic_partitions(topic) == 3, (
            f"{name} over OAUTHBEARER does not see 3 partitions of {topic}"
        )
    finally:
        client.close()
