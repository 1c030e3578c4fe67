"""Who a connection is: TLS client names and the SASL exchange before any other request.

One :class:`Authenticator` per node keeps a :class:`Session` per connection. On a SASL listener
the connection must authenticate before the broker handles anything but ApiVersions, as Kafka's
``SaslServerAuthenticator`` (``clients/src/main/java/org/apache/kafka/common/security/
authenticator/SaslServerAuthenticator.java``) does:

* until SaslHandshake, only ApiVersions and SaslHandshake are taken; any other request, or a
  frame that is not a Kafka request, closes the connection at once (Kafka: "Unexpected Kafka
  request of type X during SASL handshake", no answer);
* SaslHandshake naming a mechanism not enabled is answered UNSUPPORTED_SASL_MECHANISM with the
  enabled list, then the connection closes; v1 selects SaslAuthenticate framing (KIP-152), v0 raw
  tokens (each frame the bare token, each answer the bare challenge);
* during the exchange only SaslAuthenticate is taken (anything else closes the connection, Kafka
  answers it ILLEGAL_SASL_STATE first); a failure is answered SASL_AUTHENTICATION_FAILED (with
  the mechanism's message or Kafka's generic one) and the connection closes after the answer;
  with raw tokens a failure closes the connection without an answer;
* until authenticated no frame may exceed ``sasl.server.max.receive.size`` (Kafka fails the
  authentication: "invalid receive size").

Once complete, SaslHandshake and SaslAuthenticate reach their handlers, which answer
ILLEGAL_SASL_STATE as ``KafkaApis`` does (re-authentication, KIP-368, is not served yet).
On an SSL listener the principal is the client certificate's name through
``ssl.principal.mapping.rules``; without a certificate it is ``User:ANONYMOUS``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reference_impl.protocol.apis import API_VERSIONS_KEY, UnknownApiError, response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import (
    MalformedRequestError,
    decode_request_body,
    decode_request_header,
    encode_response,
    peek_header,
)
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.frames import size_prefix

from ..configs.model import ConfigError
from .credentials import ScramCredentials
from .mechanisms import (
    PLAIN,
    MechanismServer,
    PlainServer,
    SaslFailure,
    ScramCredential,
    ScramServer,
    random_nonce,
)
from .principal import ANONYMOUS, PrincipalMappingError, user
from .settings import ListenerSecurity, listener_security

log = logging.getLogger("reference_impl.security")

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
HANDSHAKE_VERSIONS = range(0, 2)
AUTHENTICATE_VERSIONS = range(0, 3)

HANDSHAKE = "handshake"
AUTHENTICATE = "authenticate"
COMPLETE = "complete"
FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Screened:
    """What the authenticator did with a frame: an answer to send (a whole frame, size first), and
    whether the connection then closes (the reason)."""

    response: bytes | None
    close: str | None = None


@dataclass(slots=True)
class Session:
    listener: ListenerSecurity
    principal: str = ANONYMOUS
    state: str = COMPLETE
    server: MechanismServer | None = None
    kafka_framing: bool = True
    """SaslHandshake v1+: tokens come in SaslAuthenticate requests; v0: as bare frames."""


class Authenticator:
    """Every connection's security state on one node."""

    def __init__(
        self,
        config: Mapping[str, str],
        max_receive_bytes: int,
        nonce_bytes: Callable[[int], bytes] = secrets.token_bytes,
        scram: Callable[[str, str], ScramCredential | None] | None = None,
    ) -> None:
        """``scram`` looks a user's credential up (the broker's metadata image); by default an
        in-memory :class:`ScramCredentials` (tests)."""
        self._config = config
        self.max_receive_bytes = max_receive_bytes
        self.nonce_bytes = nonce_bytes
        self.scram = ScramCredentials()
        self.scram_lookup = scram or self.scram.lookup
        self._listeners: dict[str, ListenerSecurity] = {}
        self._sessions: dict[int, Session] = {}

    def listener(self, name: str) -> ListenerSecurity:
        known = self._listeners.get(name)
        if known is None:
            try:
                known = listener_security(self._config, name)
            except ConfigError as exc:  # checked at start-up; a listener made later (tests) fails closed
                log.error("listener %s: %s", name, exc)
                known = ListenerSecurity(name, "SASL_PLAINTEXT")
            self._listeners[name] = known
        return known

    def opened(self, connection_id: int, listener: str, peer_dn: str | None) -> str | None:
        """A connection came in; returns why it must close at once (a DN no rule maps), or None."""
        security = self.listener(listener)
        session = Session(security, state=HANDSHAKE if security.sasl else COMPLETE)
        if security.tls and not security.sasl and peer_dn is not None and security.mapper is not None:
            try:
                session.principal = user(security.mapper.name(peer_dn))
            except PrincipalMappingError as exc:
                return str(exc)
        self._sessions[connection_id] = session
        return None

    def closed(self, connection_id: int) -> None:
        self._sessions.pop(connection_id, None)

    def principal(self, connection_id: int) -> str:
        session = self._sessions.get(connection_id)
        return session.principal if session is not None else ANONYMOUS

    def authenticated(self, connection_id: int) -> bool:
        session = self._sessions.get(connection_id)
        return session is None or session.state == COMPLETE

    def frame_limit(self, connection_id: int, limit: int) -> int:
        """The largest frame the connection may send now (smaller until it has authenticated)."""
        return limit if self.authenticated(connection_id) else min(limit, self.max_receive_bytes)

    def screen(self, connection_id: int, frame: bytes) -> Screened | None:
        """Handle ``frame`` here if the connection has not authenticated; None: the broker handles it."""
        session = self._sessions.get(connection_id)
        if session is None or session.state == COMPLETE:
            return None
        if session.state == FAILED:
            return Screened(None, "authentication failed")
        if len(frame) > self.max_receive_bytes:
            session.state = FAILED
            return Screened(
                None, f"Failing SASL authentication due to invalid receive size ({len(frame)} bytes)"
            )
        if session.state == HANDSHAKE:
            return self._handshake(session, frame)
        if not session.kafka_framing:
            return self._raw_token(session, frame)
        return self._authenticate(session, frame)

    def _handshake(self, session: Session, frame: bytes) -> Screened | None:
        try:
            api_key, version, correlation_id = peek_header(frame)
        except MalformedRequestError:
            return self._fail(
                session,
                "Invalid request, potential reasons: kafka client configured with the "
                "wrong security protocol, it does not support KIP-43 or it is not a kafka client.",
            )
        if api_key == API_VERSIONS_KEY:
            return None
        if api_key != SASL_HANDSHAKE_KEY:
            return self._fail(session, f"Unexpected Kafka request of type {api_key} during SASL handshake.")
        if version not in HANDSHAKE_VERSIONS:
            return self._fail(session, f"SaslHandshake v{version} is not supported")
        body = self._decode(session, frame)
        if isinstance(body, Screened):
            return body
        mechanism = str(getattr(body, "mechanism", ""))
        enabled = session.listener.mechanisms
        if mechanism not in enabled:
            answer = self._answer(
                SASL_HANDSHAKE_KEY,
                version,
                correlation_id,
                error_code=ErrorCode.unsupported_sasl_mechanism,
                mechanisms=list(enabled),
            )
            session.state = FAILED
            return Screened(answer, f"SASL mechanism {mechanism[:64]!r} is not enabled")
        session.server = (
            PlainServer(session.listener.plain_users)
            if mechanism == PLAIN
            else ScramServer(mechanism, self.scram_lookup, lambda: random_nonce(self.nonce_bytes))
        )
        session.kafka_framing = version >= 1
        session.state = AUTHENTICATE
        return Screened(
            self._answer(
                SASL_HANDSHAKE_KEY,
                version,
                correlation_id,
                error_code=ErrorCode.none,
                mechanisms=list(enabled),
            )
        )

    def _authenticate(self, session: Session, frame: bytes) -> Screened:
        try:
            api_key, version, correlation_id = peek_header(frame)
        except MalformedRequestError as exc:
            return self._fail(session, f"malformed request during SASL authentication: {exc}")
        if api_key != SASL_AUTHENTICATE_KEY:
            return self._fail(
                session, f"Unexpected Kafka request of type {api_key} during SASL authentication."
            )
        if version not in AUTHENTICATE_VERSIONS:
            return self._fail(session, f"Version {version} is not supported for apiKey SASL_AUTHENTICATE")
        body = self._decode(session, frame)
        if isinstance(body, Screened):
            return body
        server = session.server
        assert server is not None
        try:
            challenge = server.evaluate(bytes(getattr(body, "auth_bytes", b"")))
        except SaslFailure as exc:
            message = exc.client_message or (
                "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{server.mechanism}"
            )
            answer = self._answer(
                SASL_AUTHENTICATE_KEY,
                version,
                correlation_id,
                error_code=ErrorCode.sasl_authentication_failed,
                error_message=message,
                auth_bytes=b"",
            )
            session.state = FAILED
            return Screened(answer, f"SASL/{server.mechanism} authentication failed: {exc}")
        self._maybe_complete(session, server)
        return Screened(
            self._answer(
                SASL_AUTHENTICATE_KEY,
                version,
                correlation_id,
                error_code=ErrorCode.none,
                error_message=None,
                auth_bytes=challenge,
                session_lifetime=0,
            )
        )

    def _raw_token(self, session: Session, frame: bytes) -> Screened:
        server = session.server
        assert server is not None
        try:
            challenge = server.evaluate(frame)
        except SaslFailure as exc:
            return self._fail(session, f"SASL/{server.mechanism} authentication failed: {exc}")
        self._maybe_complete(session, server)
        return Screened(size_prefix(len(challenge)) + challenge)

    @staticmethod
    def _maybe_complete(session: Session, server: MechanismServer) -> None:
        if server.complete:
            session.principal = user(server.authorization_id)
            session.state = COMPLETE
            session.server = None
            log.info("authenticated %s with SASL/%s", session.principal, server.mechanism)

    @classmethod
    def _decode(cls, session: Session, frame: bytes) -> object:
        """The request's body, or the closing :class:`Screened` for one that does not parse."""
        try:
            header, offset = decode_request_header(frame)
            return decode_request_body(header, frame, offset)
        except (MalformedRequestError, UnknownApiError) as exc:
            return cls._fail(session, f"malformed SASL request: {exc}")

    @staticmethod
    def _fail(session: Session, reason: str) -> Screened:
        session.state = FAILED
        return Screened(None, reason)

    @staticmethod
    def _answer(api_key: int, version: int, correlation_id: int, **fields: object) -> bytes:
        body = build(response_class(api_key, version), {"throttle_time": 0, **fields})
        return encode_response(api_key, version, correlation_id, body)
