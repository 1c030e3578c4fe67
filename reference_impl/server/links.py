"""The security of this node's own links: to its peers' inter-broker listener and to the voters'
controller listener (issue 18: a whole cluster on SSL or SASL_SSL).

Each outbound connection the shell opens (``SendRequest``) is on a channel; the replica fetches'
and the transaction markers' go to the inter-broker listener (``inter.broker.listener.name``),
the quorum's, the registration and heartbeats' and the forwarded admin requests' to the
controller listener (the first of ``controller.listener.names``), as in Kafka, where the broker's
``BrokerToControllerChannelManager`` and ``RaftManager`` use the controller listener and the
``ReplicaFetcherThread`` the inter-broker one. What each link speaks, and as whom, is
:func:`reference_impl.core.security.settings.peer_link`; the TLS context is
:func:`.tls.client_context`; the SASL exchange is the one client side the harness uses too
(:func:`reference_impl.protocol.sasl_client.sasl_exchange`).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from reference_impl.core.boundary import CONTROLLER_CHANNEL, FORWARDING_CHANNEL
from reference_impl.core.listeners import ListenerSetup
from reference_impl.core.security.settings import (
    CONTROLLER_MECHANISM,
    INTER_BROKER_MECHANISM,
    PeerLink,
    peer_link,
)

from .tls import client_context

RAFT_CHANNEL = "raft"
CONTROLLER_CHANNELS = frozenset({RAFT_CHANNEL, CONTROLLER_CHANNEL, FORWARDING_CHANNEL})
"""The channels whose requests go to a controller listener."""


@dataclass(frozen=True, slots=True)
class LinkSecurity:
    link: PeerLink
    context: ssl.SSLContext | None
    """The TLS context (None: plain TCP)."""


PLAIN_LINK = LinkSecurity(PeerLink("PLAINTEXT", "PLAINTEXT"), None)


@dataclass(frozen=True, slots=True)
class Links:
    inter_broker: LinkSecurity = PLAIN_LINK
    controller: LinkSecurity = PLAIN_LINK

    def for_channel(self, channel: str) -> LinkSecurity:
        return self.controller if channel in CONTROLLER_CHANNELS else self.inter_broker


def _security(config: Mapping[str, str], listener: str, mechanism_config: str) -> LinkSecurity:
    link = peer_link(config, listener, mechanism_config)
    return LinkSecurity(link, client_context(config, listener) if link.tls else None)


def links_for(config: Mapping[str, str], setup: ListenerSetup) -> Links:
    """The node's links from its configs (``ConfigError`` for a link that could not connect)."""
    inter = _security(config, setup.inter_broker_name, INTER_BROKER_MECHANISM)
    controller = (
        _security(config, setup.controller_names[0], CONTROLLER_MECHANISM)
        if setup.controller_names
        else PLAIN_LINK
    )
    return Links(inter, controller)
