"""A node's own links on secured listeners (issue 18): what each link speaks and as whom, from Kafka's
configs, and the shell's peer connection authenticating over TLS before its requests go out.

The exchange is driven against a real secured reference broker (SASL_SSL, SCRAM-SHA-512 users from
``fixtures.targets.secured``): with the right password the request that waited is answered; with a
wrong one it fails with the broker's refusal and the connection closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reference_impl.core.boundary import (
    CONTROLLER_CHANNEL,
    DATA_CHANNEL,
    FORWARDING_CHANNEL,
    TXN_MARKER_CHANNEL,
    RequestFailed,
    ResponseReceived,
)
from reference_impl.core.configs.model import ConfigError
from reference_impl.core.listeners import listener_setup
from reference_impl.core.security.settings import PeerLink, peer_link
from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import encode_request
from reference_impl.server.links import LinkSecurity, links_for
from reference_impl.server.shell import _PeerConnection
from reference_impl.server.tls import client_context

SCRAM_JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s3";'
)
CLUSTER = {
    "listeners": "SASL_SSL://h:1,CONTROLLER://h:2",
    "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "SASL_SSL",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config": (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="ctl" password="p" '
        'user_ctl="p";'
    ),
}


def test_each_link_speaks_its_listeners_protocol_as_the_nodes_own_user() -> None:
    assert peer_link(CLUSTER, "SASL_SSL", "sasl.mechanism.inter.broker.protocol") == PeerLink(
        "SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", "admin", "s3"
    )
    assert peer_link(CLUSTER, "CONTROLLER", "sasl.mechanism.controller.protocol") == PeerLink(
        "CONTROLLER", "SASL_PLAINTEXT", "PLAIN", "ctl", "p"
    )


@pytest.mark.parametrize(
    ("drop", "says"),
    [
        ("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", "is not set"),
        ("sasl.mechanism.inter.broker.protocol", "sasl.mechanism.inter.broker.protocol=GSSAPI"),
    ],
)
def test_a_link_that_could_not_authenticate_is_refused_at_start(drop: str, says: str) -> None:
    config = {k: v for k, v in CLUSTER.items() if k != drop}
    with pytest.raises(ConfigError, match=says):
        peer_link(config, "SASL_SSL", "sasl.mechanism.inter.broker.protocol")
    anonymous = {**CLUSTER, "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS.replace(
        'username="admin" ', "")}
    with pytest.raises(ConfigError, match="username and password"):
        peer_link(anonymous, "SASL_SSL", "sasl.mechanism.inter.broker.protocol")


def test_quorum_controller_and_forwarded_traffic_take_the_controller_link() -> None:
    config = {k: v for k, v in CLUSTER.items() if not k.startswith("listener.name.sasl_ssl")}
    config["listener.security.protocol.map"] = "SASL_SSL:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    setup = listener_setup(
        "SASL_SSL://h:1,CONTROLLER://h:2",
        None,
        explicit_protocol_map=config["listener.security.protocol.map"],
        controller_names="CONTROLLER",
        inter_broker_name="SASL_SSL",
        kraft=True,
        is_controller=True,
    )
    links = links_for(config, setup)
    for channel in ("raft", CONTROLLER_CHANNEL, FORWARDING_CHANNEL):
        assert links.for_channel(channel).link.listener == "CONTROLLER"
    for channel in (DATA_CHANNEL, TXN_MARKER_CHANNEL):
        assert links.for_channel(channel).link.protocol == "PLAINTEXT"


class _Shell:
    """What a peer connection asks of its shell: events fed back, the node id, the frame bound."""

    max_frame_bytes = 1 << 20

    class broker:
        node_id = 9

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.done = asyncio.Event()

    def feed(self, event: Any) -> None:
        self.events.append(event)
        self.done.set()

    def forget_peer(self, peer: Any) -> None:
        pass


@pytest.fixture(scope="module")
def secured_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    pytest.importorskip("cryptography", reason="secured targets need the cryptography package")
    from fixtures.targets import launch

    with launch("reference", security="sasl_ssl", workdir=tmp_path_factory.mktemp("links")) as target:
        assert target.secured is not None
        yield target.bootstrap_servers, Path(target.secured.client.ca_location or "")


async def _ask(address: str, ca: Path, password: str) -> list[Any]:
    shell = _Shell()
    context = client_context(
        {"ssl.truststore.location": str(ca), "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
         "ssl.endpoint.identification.algorithm": "https"}, "SASL_SSL"
    )
    link = PeerLink("SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", "admin", password)
    peer = _PeerConnection(shell, 1, LinkSecurity(link, context))  # type: ignore[arg-type]
    host, _, port = address.rpartition(":")
    peer.address = address
    body = build(request_class(18, 3), {"client_software_name": "kh", "client_software_version": "1"})
    peer.send(7, 18, 3, encode_request(body, 7, "broker-9"))  # waits for the exchange
    loop = asyncio.get_running_loop()
    await loop.create_connection(lambda: peer, host, int(port), ssl=context, server_hostname=host)
    await asyncio.wait_for(shell.done.wait(), 15)
    peer.close()
    return shell.events


def test_the_peer_connection_authenticates_before_its_requests(secured_broker: tuple[str, Path]) -> None:
    events = asyncio.run(_ask(*secured_broker, "admin-secret"))
    assert len(events) == 1 and isinstance(events[0], ResponseReceived) and events[0].request_id == 7
    answer: Any = events[0].body
    assert int(answer.error_code) == 0


def test_a_refused_link_fails_its_requests(secured_broker: tuple[str, Path]) -> None:
    events = asyncio.run(_ask(*secured_broker, "wrong"))
    assert len(events) == 1 and isinstance(events[0], RequestFailed) and events[0].request_id == 7
    assert "SASL_AUTHENTICATION_FAILED" in events[0].reason.upper()
