"""TLS for SSL and SASL_SSL listeners: Python's ``ssl`` from Kafka's configs (PEM stores).

``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` (the private key and the certificate
chain in one file, KIP-651; ``ssl.key.password`` for an encrypted key), ``ssl.truststore.type=PEM``
with ``ssl.truststore.location`` (CA certificates), ``ssl.client.auth`` none / requested /
required, ``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3) and ``ssl.cipher.suites`` (TLS 1.2 suites,
OpenSSL names), each also in its ``listener.name.NAME.`` form (Kafka's ``SslFactory`` /
``DefaultSslEngineFactory``). The handshake happens before the connection reaches the core;
the client's verified certificate subject travels with ``ConnectionOpened``.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

from reference_impl.core.configs.model import ConfigError
from reference_impl.core.security.principal import distinguished_name
from reference_impl.core.security.settings import listener_security, listener_value

HANDSHAKE_TIMEOUT_S = 10.0
"""A TLS handshake not done by then closes the connection (asyncio's default is 60 s)."""
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def _limit_versions(context: ssl.SSLContext, enabled_protocols: str, listener: str) -> None:
    enabled = [v.strip() for v in enabled_protocols.split(",") if v.strip()]
    versions = sorted(_VERSIONS[v] for v in enabled if v in _VERSIONS)
    if not versions:
        raise ConfigError(f"listener {listener}: ssl.enabled.protocols names neither TLSv1.2 nor TLSv1.3")
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


def server_context(config: Mapping[str, str], listener: str) -> ssl.SSLContext | None:
    """The listener's server-side TLS context; None for PLAINTEXT and SASL_PLAINTEXT.

    :class:`ConfigError` for what cannot be loaded (a missing file, a key that does not decrypt)."""
    security = listener_security(config, listener)
    if not security.tls:
        return None

    def value(name: str) -> str:
        return listener_value(config, listener, name) or ""

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _limit_versions(context, value("ssl.enabled.protocols"), listener)
    try:
        context.load_cert_chain(value("ssl.keystore.location"), password=value("ssl.key.password") or None)
        trust = value("ssl.truststore.location")
        if trust:
            context.load_verify_locations(cafile=trust)
        suites = value("ssl.cipher.suites")
        if suites:
            context.set_ciphers(":".join(s.strip() for s in suites.split(",") if s.strip()))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"listener {listener}: cannot load its TLS stores: {exc}") from None
    context.verify_mode = _VERIFY[security.client_auth]
    return context


def peer_dn(peercert: object) -> str | None:
    """The RFC 2253 subject of ``transport.get_extra_info("peercert")`` (None: no verified certificate)."""
    if not isinstance(peercert, dict) or not peercert.get("subject"):
        return None
    return distinguished_name(peercert["subject"])


def client_context(config: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """The TLS context this node's own links to ``listener`` use (Kafka's broker-side clients take
    the listener's ``ssl.*`` configs too): its truststore trusted, its keystore presented (a peer
    that asks for a client certificate gets the node's), the peer's host name checked against its
    certificate unless ``ssl.endpoint.identification.algorithm`` is empty.

    :class:`ConfigError` for what cannot be loaded."""

    def value(name: str) -> str:
        return listener_value(config, listener, name) or ""

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _limit_versions(context, value("ssl.enabled.protocols"), listener)
    try:
        trust = value("ssl.truststore.location")
        if trust:
            context.load_verify_locations(cafile=trust)
        else:
            context.load_default_certs()
        keystore = value("ssl.keystore.location")
        if keystore:
            context.load_cert_chain(keystore, password=value("ssl.key.password") or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"listener {listener}: cannot load its TLS stores for its links: {exc}") from None
    context.check_hostname = value("ssl.endpoint.identification.algorithm").strip().lower() == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    return context
