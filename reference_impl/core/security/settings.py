"""The security configs of a node (Kafka's names) and what they make of each listener.

Registered with the broker's other configs (:mod:`..configs`): ``sasl.enabled.mechanisms``,
``sasl.server.max.receive.size``, the ``ssl.*`` store and client-authentication configs, and
their listener-prefixed forms ``listener.name.NAME.CONFIG`` (Kafka's ``ListenerName.configPrefix``,
the name lower-cased) with the mechanism-prefixed ``listener.name.NAME.MECHANISM.sasl.jaas.config``
(``KafkaConfig`` / ``JaasContext.loadServerContext``; a broker has no unprefixed JAAS config).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..configs.model import ConfigDef, ConfigError, ConfigType
from ..listeners import effective_protocol_map, parse_names
from .jaas import JaasEntry, JaasError, parse_jaas
from .mechanisms import PLAIN, SCRAM_HASHES, SUPPORTED_MECHANISMS
from .oauthbearer import LOGIN_MODULE as OAUTHBEARER_LOGIN_MODULE
from .oauthbearer import OAUTHBEARER, ValidatorOptions
from .principal import PrincipalMappingError, SslPrincipalMapper

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
CLIENT_AUTH = ("none", "requested", "required")
_T = ConfigType

SECURITY_CONFIGS = (
    ConfigDef("sasl.enabled.mechanisms", _T.LIST, "GSSAPI", "SASL mechanisms a SASL listener offers."),
    ConfigDef(
        "sasl.mechanism.inter.broker.protocol", _T.STRING, "GSSAPI", "SASL mechanism peers authenticate with."
    ),
    ConfigDef(
        "sasl.mechanism.controller.protocol", _T.STRING, "GSSAPI", "SASL mechanism of controller links."
    ),
    ConfigDef(
        "sasl.server.max.receive.size",
        _T.INT,
        "524288",
        "Largest frame read before a connection has authenticated.",
        valid=lambda v: int(v) >= 1,
    ),
    ConfigDef("sasl.jaas.config", _T.PASSWORD, None, "JAAS login module (listener- and mechanism-prefixed)."),
    ConfigDef(
        "connections.max.reauth.ms",
        _T.LONG,
        "0",
        "Longest SASL session before re-authentication (KIP-368; 0: none); listener- and mechanism-prefixed.",
        valid=lambda v: int(v) >= 0,
    ),
    ConfigDef(
        "ssl.keystore.type", _T.STRING, "JKS", "Keystore format (the reference reads PEM).", read_only=True
    ),
    ConfigDef("ssl.keystore.location", _T.STRING, None, "Keystore: private key then certificate chain."),
    ConfigDef("ssl.keystore.password", _T.PASSWORD, None, "Keystore password (PEM: unused)."),
    ConfigDef("ssl.key.password", _T.PASSWORD, None, "Password of an encrypted private key."),
    ConfigDef("ssl.truststore.type", _T.STRING, "JKS", "Truststore format (the reference reads PEM)."),
    ConfigDef("ssl.truststore.location", _T.STRING, None, "Trusted CA certificates."),
    ConfigDef("ssl.truststore.password", _T.PASSWORD, None, "Truststore password (PEM: unused)."),
    ConfigDef(
        "ssl.client.auth",
        _T.STRING,
        "none",
        "Client certificates: none, requested, required.",
        choices=CLIENT_AUTH,
    ),
    ConfigDef(
        "ssl.enabled.protocols",
        _T.LIST,
        "TLSv1.2,TLSv1.3",
        "TLS versions served.",
        choices=("TLSv1.2", "TLSv1.3"),
    ),
    ConfigDef("ssl.protocol", _T.STRING, "TLSv1.3", "The SSLContext protocol (informational)."),
    ConfigDef("ssl.cipher.suites", _T.LIST, "", "Cipher suites (empty: the TLS library's defaults)."),
    ConfigDef("ssl.principal.mapping.rules", _T.STRING, "DEFAULT", "Certificate DN to principal name."),
    ConfigDef("ssl.endpoint.identification.algorithm", _T.STRING, "https", "Host name check of peers."),
    ConfigDef(
        "authorizer.class.name",
        _T.STRING,
        "",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACLs on (.acls).",
        valid=lambda v: v.strip() in ("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
        read_only=True,
    ),
    ConfigDef("super.users", _T.STRING, "", "Principals allowed everything (User:a;User:b).", read_only=True),
    ConfigDef(
        "allow.everyone.if.no.acl.found",
        _T.BOOLEAN,
        "false",
        "Allow a resource no ACL names.",
        read_only=True,
    ),
)
_BY_NAME = {d.name: d for d in SECURITY_CONFIGS}
_LISTENER_SCOPED = frozenset(
    n for n in _BY_NAME if n.startswith(("ssl.", "sasl.")) and n != "sasl.jaas.config"
)


def listener_prefixed(key: str) -> ConfigDef | None:
    """The definition of a ``listener.name.NAME.CONFIG`` (or ``...NAME.MECHANISM.sasl.jaas.config``) key."""
    if not key.startswith("listener.name."):
        return None
    name, _, rest = key[len("listener.name.") :].partition(".")
    if not name or not rest:
        return None
    if rest in _LISTENER_SCOPED:
        return _BY_NAME[rest]
    mechanism, _, tail = rest.partition(".")
    if tail in ("sasl.jaas.config", "connections.max.reauth.ms") and mechanism:
        return _BY_NAME[tail]
    return None


def listener_value(config: Mapping[str, str], listener: str, name: str) -> str | None:
    """A config as one listener sees it: its ``listener.name.`` form first, else the plain one, else
    the default."""
    prefixed = config.get(f"listener.name.{listener.lower()}.{name}")
    if prefixed is not None:
        return prefixed
    if name in config:
        return config[name]
    return _BY_NAME[name].default if name in _BY_NAME else None


class _Protocol:
    """``sasl`` and ``tls`` of a class with a security ``protocol``."""

    __slots__ = ()
    protocol: str

    @property
    def sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    @property
    def tls(self) -> bool:
        return self.protocol in TLS_PROTOCOLS


@dataclass(frozen=True, slots=True)
class ListenerSecurity(_Protocol):
    """What one listener asks of its connections."""

    name: str
    protocol: str
    mechanisms: tuple[str, ...] = ()
    plain_users: Mapping[str, str] = field(default_factory=dict)
    client_auth: str = "none"
    mapper: SslPrincipalMapper | None = None
    oauth: ValidatorOptions | None = None
    """OAUTHBEARER's unsecured validator options (its JAAS entry's ``unsecuredValidator*``)."""
    max_reauth_ms: Mapping[str, int] = field(default_factory=dict)
    """``connections.max.reauth.ms`` per enabled mechanism (0: sessions never expire)."""


def protocol_map(config: Mapping[str, str]) -> dict[str, str]:
    return effective_protocol_map(
        config.get("listener.security.protocol.map"),
        config.get("listeners", ""),
        parse_names(config.get("controller.listener.names", "")),
    )


def listener_security(config: Mapping[str, str], listener: str) -> ListenerSecurity:
    """A listener's security, checked as Kafka checks it at start-up (:class:`ConfigError` otherwise)."""
    protocol = protocol_map(config).get(listener, "PLAINTEXT")
    mechanisms: tuple[str, ...] = ()
    users: dict[str, str] = {}
    oauth: ValidatorOptions | None = None
    reauth: dict[str, int] = {}
    if protocol in SASL_PROTOCOLS:
        raw = listener_value(config, listener, "sasl.enabled.mechanisms") or ""
        mechanisms = tuple(m.strip() for m in raw.split(",") if m.strip())
        if not mechanisms:
            raise ConfigError(f"listener {listener}: sasl.enabled.mechanisms is empty")
        unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
        if unsupported:
            raise ConfigError(
                f"listener {listener}: SASL mechanism {', '.join(unsupported)} is not served by the "
                f"reference broker ({', '.join(SUPPORTED_MECHANISMS)}); set sasl.enabled.mechanisms"
            )
        if PLAIN in mechanisms:
            users = _jaas_entry(config, listener, "plain", PLAIN_LOGIN_MODULE).users()
        if OAUTHBEARER in mechanisms:
            entry = _jaas_entry(config, listener, "oauthbearer", OAUTHBEARER_LOGIN_MODULE)
            try:
                oauth = ValidatorOptions.from_jaas(entry.options)
            except ValueError as exc:
                raise ConfigError(f"listener {listener} OAUTHBEARER: {exc}") from None
        for mechanism in mechanisms:
            prefixed = config.get(
                f"listener.name.{listener.lower()}.{mechanism.lower()}.connections.max.reauth.ms"
            )
            value = (
                prefixed
                if prefixed is not None
                else listener_value(config, listener, "connections.max.reauth.ms")
            )
            try:
                reauth[mechanism] = int(value or 0)
            except ValueError:
                raise ConfigError(f"connections.max.reauth.ms={value!r} is not a number") from None
    client_auth = "none"
    mapper = None
    if protocol in TLS_PROTOCOLS:
        for store in ("ssl.keystore.type", "ssl.truststore.type"):
            kind = (listener_value(config, listener, store) or "").upper()
            if kind != "PEM" and (
                store == "ssl.keystore.type"
                or listener_value(config, listener, "ssl.truststore.location") is not None
            ):
                raise ConfigError(f"listener {listener}: {store}={kind}: the reference broker reads PEM only")
        if listener_value(config, listener, "ssl.keystore.location") is None:
            raise ConfigError(f"listener {listener} ({protocol}) needs ssl.keystore.location")
        client_auth = listener_value(config, listener, "ssl.client.auth") or "none"
        if client_auth not in CLIENT_AUTH:
            raise ConfigError(f"ssl.client.auth={client_auth}: one of {', '.join(CLIENT_AUTH)}")
        if client_auth != "none" and listener_value(config, listener, "ssl.truststore.location") is None:
            raise ConfigError(
                f"listener {listener}: ssl.client.auth={client_auth} needs ssl.truststore.location"
            )
        try:
            mapper = SslPrincipalMapper(listener_value(config, listener, "ssl.principal.mapping.rules") or "")
        except PrincipalMappingError as exc:
            raise ConfigError(f"ssl.principal.mapping.rules: {exc}") from None
    return ListenerSecurity(listener, protocol, mechanisms, users, client_auth, mapper, oauth, reauth)


def _jaas_entry(config: Mapping[str, str], listener: str, mechanism: str, module: str) -> JaasEntry:
    """The listener's mechanism-prefixed JAAS entry (Kafka's ``JaasContext.loadServerContext``)."""
    key = f"listener.name.{listener.lower()}.{mechanism}.sasl.jaas.config"
    text = config.get(key)
    if text is None:
        raise ConfigError(f"listener {listener} enables {mechanism.upper()} but {key} is not set")
    try:
        entry = parse_jaas(text)
    except JaasError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    if entry.module != module:
        raise ConfigError(f"{key}: login module {entry.module} is not {module}")
    return entry


def is_scram(mechanism: str) -> bool:
    return mechanism in SCRAM_HASHES


@dataclass(frozen=True, slots=True)
class PeerLink(_Protocol):
    """How this node connects, as a client, to its peers' listener ``listener``: the inter-broker
    listener (replica fetches, transaction markers) or the controller listener (the quorum,
    registration and heartbeats, forwarded admin requests).

    As Kafka's broker-side clients (``ChannelBuilders.clientChannelBuilder`` with
    ``JaasContext.Type.SERVER``, ``core/src/main/scala/kafka/server/KafkaConfig.scala``): the listener's
    protocol from ``listener.security.protocol.map``; its mechanism from
    ``sasl.mechanism.inter.broker.protocol`` or ``sasl.mechanism.controller.protocol``; the node's
    own credentials from the ``username``/``password`` options of the same JAAS entry its server
    side reads (``listener.name.NAME.MECHANISM.sasl.jaas.config``, else ``sasl.jaas.config``); TLS
    from the listener's ``ssl.*`` configs (its keystore presented, its truststore trusted, the
    peer's host name checked unless ``ssl.endpoint.identification.algorithm`` is empty)."""

    listener: str
    protocol: str
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None


LINK_MECHANISMS = (PLAIN, *SCRAM_HASHES)
"""What a node's own links authenticate with (the client side in ``protocol/sasl_client.py``)."""
INTER_BROKER_MECHANISM = "sasl.mechanism.inter.broker.protocol"
CONTROLLER_MECHANISM = "sasl.mechanism.controller.protocol"


def peer_link(config: Mapping[str, str], listener: str, mechanism_config: str) -> PeerLink:
    """The client side of links to ``listener`` (:class:`ConfigError` for what cannot authenticate)."""
    protocol = protocol_map(config).get(listener, "PLAINTEXT")
    if protocol not in SASL_PROTOCOLS:
        return PeerLink(listener, protocol)
    mechanism = (config.get(mechanism_config) or _BY_NAME[mechanism_config].default or "").strip()
    if mechanism not in LINK_MECHANISMS:
        raise ConfigError(
            f"{mechanism_config}={mechanism}: listener {listener} ({protocol}) links need one of "
            f"{', '.join(LINK_MECHANISMS)}"
        )
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = config.get(key) or config.get("sasl.jaas.config")
    if not text:
        raise ConfigError(f"listener {listener} links authenticate with {mechanism}: {key} is not set")
    try:
        options = parse_jaas(text).options
    except JaasError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    username, password = options.get("username"), options.get("password")
    if not username or password is None:
        raise ConfigError(
            f"{key}: the node's own username and password options are needed for its {mechanism} links"
        )
    return PeerLink(listener, protocol, mechanism, username, password)
