"""Listeners as Kafka names and checks them: which sockets a node opens, which it advertises, and
which of them carry the metadata quorum.

Kafka's configs (``server/src/main/java/org/apache/kafka/network/SocketServerConfigs.java``,
``core/src/main/scala/kafka/server/KafkaConfig.scala``):

* ``listeners=PLAINTEXT://host:9092,CONTROLLER://host:9093``: one socket per named listener
  (names unique, non-zero ports distinct, an empty host binds every interface);
* ``advertised.listeners``: what clients and peers are told, defaulting to ``listeners``;
* ``listener.security.protocol.map=NAME:PROTOCOL,...``: every listener name maps to one of
  PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (Kafka's default maps each protocol's own name to
  itself and, in KRaft, the controller listener names to PLAINTEXT when nothing secure is used);
* ``controller.listener.names``: the listeners of the KRaft controller. They alone serve the
  quorum and registration APIs (Kafka's ``ApiMessageType.ListenerType.CONTROLLER``); a
  controller (``process.roles`` with ``controller``) must listen on one, a broker-only node must
  not, and ``controller.quorum.voters`` names controller listener addresses;
* ``inter.broker.listener.name``: the broker listener peers replicate through (default PLAINTEXT).

Clients may use any of the four protocols (:mod:`.security`; TLS in ``server/tls.py``), and so
may the links between nodes: a node reaches its peers' inter-broker listener and the voters'
controller listener with that listener's protocol and its own credentials
(:func:`.security.settings.peer_link`; the connections are the shell's). Nothing here opens a
socket: the shell binds what :func:`listener_setup` returns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .configs.model import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SERVED_PROTOCOLS = frozenset(SECURITY_PROTOCOLS)
"""What the reference broker's client listeners speak."""
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
"""Kafka's ``LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT``: each protocol's name maps to itself."""
CLIENT_LISTENER = "PLAINTEXT"
"""The listener ``--listen`` names, and Kafka's default ``inter.broker.listener.name``."""
CONTROLLER_LISTENER = "CONTROLLER"
"""The name the launcher gives the controller listener (Kafka's documentation uses it too)."""

_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")
"""Kafka's ``EndPoint`` URI form: ``NAME://host:port``, an IPv6 host in brackets."""
_NAME = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener: its name, where it binds (or is reached), and its security protocol."""

    name: str
    host: str
    """Empty: every interface (binding) or the machine's own name (advertising)."""
    port: int
    protocol: str

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def parse_names(value: str) -> tuple[str, ...]:
    """A comma-separated list of listener names, upper-cased as Kafka's ``ListenerName.normalised``."""
    return tuple(item.strip().upper() for item in value.split(",") if item.strip())


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL,...`` with each name once."""
    out: dict[str, str] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not _NAME.match(name):
            raise ConfigError(f"listener.security.protocol.map entry {item.strip()!r} is not NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"Invalid security protocol `{protocol}` defined in listener.security.protocol.map"
            )
        if name in out:
            raise ConfigError(f"listener.security.protocol.map names {name} twice")
        out[name] = protocol
    return out


def parse_endpoints(
    value: str, protocols: Mapping[str, str], what: str = "listeners", distinct_ports: bool = True
) -> tuple[Endpoint, ...]:
    """The endpoints of a ``listeners`` (or ``advertised.listeners``) value, checked as Kafka's
    ``CoreUtils.listenerListToEndPoints``: each in the map, names unique, non-zero ports distinct."""
    endpoints: list[Endpoint] = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        match = _ENDPOINT.match(item)
        if match is None:
            raise ConfigError(f"{what}: {item!r} is not NAME://HOST:PORT")
        name, host, port_text = match.group(1).upper(), match.group(2), match.group(3)
        port = int(port_text)
        if not _NAME.match(name) or not 0 <= port <= 65535:
            raise ConfigError(f"{what}: {item!r} is not NAME://HOST:PORT with a port 0..65535")
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(f"{what}: no security protocol defined for listener {name}")
        endpoints.append(Endpoint(name, host, port, protocol))
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise ConfigError(f"Each listener must have a different name, {what}: {value}")
    ports = [e.port for e in endpoints if e.port != 0]
    if distinct_ports and len(set(ports)) != len(ports):
        raise ConfigError(f"Each listener must have a different port, {what}: {value}")
    return tuple(endpoints)


@dataclass(frozen=True, slots=True)
class ListenerSetup:
    """What a node binds and advertises, and which of its listeners are the controller's."""

    listeners: tuple[Endpoint, ...]
    """Every socket to open, broker and controller listeners alike."""
    advertised: tuple[Endpoint, ...]
    """The broker listeners as clients and peers are told them (no controller listener)."""
    controller_names: tuple[str, ...]
    inter_broker_name: str

    def is_controller(self, name: str) -> bool:
        return name in self.controller_names

    @property
    def inter_broker(self) -> Endpoint | None:
        """The advertised address peers replicate through and the controller registers."""
        return next((e for e in self.advertised if e.name == self.inter_broker_name), None)


def effective_protocol_map(
    explicit_map: str | None, listeners: str, controller_names: tuple[str, ...]
) -> dict[str, str]:
    """Kafka's ``effectiveListenerSecurityProtocolMap``: the configured map; when none is given and
    nothing uses SSL or SASL, each controller listener name maps to PLAINTEXT as well."""
    protocols = parse_protocol_map(DEFAULT_PROTOCOL_MAP if explicit_map is None else explicit_map)
    if explicit_map is not None:
        return protocols
    secure = set(SECURITY_PROTOCOLS) - {"PLAINTEXT"}
    used = {item.partition("://")[0].strip().upper() for item in listeners.split(",") if item.strip()}
    if not (set(controller_names) | used) & secure:
        for name in controller_names:
            protocols.setdefault(name, "PLAINTEXT")
    return protocols


def listener_setup(
    listeners: str,
    advertised: str | None,
    *,
    explicit_protocol_map: str | None = None,
    controller_names: str = "",
    inter_broker_name: str = "",
    is_broker: bool = True,
    is_controller: bool = False,
    kraft: bool = False,
    lone_voter: bool = False,
) -> ListenerSetup:
    """Parse and check a node's listener configs as ``KafkaConfig.validateValues`` does for its roles
    (a one-node broker, ``kraft=False``, may have a controller listener or none). ``lone_voter``: a
    combined broker+controller that is its quorum's only voter needs no controller listener (nobody
    sends it Vote or Fetch, and it answers its own controller requests in process); one it names is
    checked as any voter's."""
    controllers = parse_names(controller_names)
    protocols = effective_protocol_map(explicit_protocol_map, listeners, controllers)
    bound = parse_endpoints(listeners, protocols)
    if not bound:
        raise ConfigError("no listener: give --listen HOST:PORT or listeners=NAME://HOST:PORT,...")
    names = {e.name for e in bound}
    ours = [e for e in bound if e.name in controllers]
    optional = lone_voter and is_broker and not controllers
    if kraft and not controllers and not optional:
        raise ConfigError("controller.listener.names must contain at least one value when running KRaft")
    if is_controller and not optional:
        if not ours or not set(controllers) <= names:
            raise ConfigError(
                "controller.listener.names must only contain values appearing in the 'listeners' "
                "configuration when running the KRaft controller role"
            )
        if not is_broker and len(ours) != len(bound):
            raise ConfigError(
                "The listeners config must only contain KRaft controller listeners from "
                "controller.listener.names when process.roles=controller"
            )
    elif ours:
        raise ConfigError(
            "controller.listener.names must not contain a value appearing in the 'listeners' "
            "configuration when running KRaft with just the broker role"
        )
    for name in controllers:
        if name not in protocols:
            raise ConfigError(
                f"Controller listener with name {name} not found in listener.security.protocol.map"
            )
    refused = sorted({e.protocol for e in bound} - SERVED_PROTOCOLS)
    if refused:
        raise ConfigError(f"security protocol {', '.join(refused)} is not served")
    shown = parse_endpoints(advertised, protocols, "advertised.listeners", False) if advertised else bound
    broker_shown = tuple(e for e in shown if e.name not in controllers)
    inter = inter_broker_name.strip().upper() or CLIENT_LISTENER
    if is_broker:
        if not broker_shown:
            raise ConfigError(
                "There must be at least one broker advertised listener. "
                "Perhaps all listeners appear in controller.listener.names?"
            )
        if inter not in {e.name for e in broker_shown}:
            raise ConfigError(
                "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
                f"The valid options based on currently configured listeners are "
                f"{','.join(e.name for e in broker_shown)}"
            )
        if not {e.name for e in broker_shown} <= names:
            raise ConfigError(
                "advertised.listeners listener names must be equal to or a subset of the ones defined "
                f"in listeners. Found {','.join(e.name for e in broker_shown)}"
            )
    if any(e.host == "0.0.0.0" for e in shown):
        raise ConfigError(
            "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."
        )
    return ListenerSetup(bound, broker_shown if is_broker else (), controllers, inter)
