"""Who a connection is: TLS client names and the SASL exchange before any other request.

One :class:`Authenticator` per node keeps a :class:`Session` per connection. On a SASL listener
the connection must authenticate before the broker handles anything but ApiVersions, as Kafka's
``SaslServerAuthenticator`` (``clients/src/main/java/org/apache/kafka/common/security/
authenticator/SaslServerAuthenticator.java``) does:

* until SaslHandshake, only ApiVersions (once: a second one closes the connection, Kafka's
  ``handleApiVersionsRequest`` state check) and SaslHandshake are taken; any other request
  (SaslAuthenticate included), or a frame that is not a Kafka request, closes the connection at
  once with no answer (Kafka: "Unexpected Kafka request of type X during SASL handshake");
* SaslHandshake naming a mechanism not enabled is answered UNSUPPORTED_SASL_MECHANISM with the
  enabled list, then the connection closes; v1 selects SaslAuthenticate framing (KIP-152), v0 raw
  tokens (each frame the bare token, each answer the bare challenge);
* during the exchange only SaslAuthenticate is taken: any other request is answered
  ILLEGAL_SASL_STATE (its own response type, as ``getErrorResponse`` builds it for every API:
  :mod:`reference_impl.protocol.error_response`; one that does not parse, or a Produce with
  acks=0, closes without an answer) and the connection closes; a failure is answered
  SASL_AUTHENTICATION_FAILED (with the mechanism's message or Kafka's generic one) and the
  connection closes after the answer; with raw tokens a failure closes without an answer;
* until authenticated no frame may exceed ``sasl.server.max.receive.size`` (Kafka fails the
  authentication: "invalid receive size").

Re-authentication (KIP-368; Kafka's ``KafkaChannel.maybeBeginServerReauthentication`` and
``SocketServer.processCompletedReceives``): a session has an expiry when
``connections.max.reauth.ms`` (listener- and mechanism-prefixed as Kafka's
``listener.name.L.M.connections.max.reauth.ms``) is positive or the credential expires
(OAUTHBEARER's token); the final SaslAuthenticate (v1+) tells the client the session's lifetime
(``session_lifetime_ms``, 0 when none). Once the session has expired, any request but SaslHandshake
closes the connection with no answer. A SaslHandshake on an authenticated connection whose session
has an expiry (and at least a second after the previous re-authentication began) starts a
re-authentication: the same exchange on the same connection, with the same mechanism (another one
fails it), ending in the same principal (another one is answered SASL_AUTHENTICATION_FAILED "Cannot
change principals during re-authentication from User.a: User.b" and the connection closes).
Otherwise SaslHandshake and SaslAuthenticate reach their handlers, which answer ILLEGAL_SASL_STATE
as ``KafkaApis`` does.

On an SSL listener the principal is the client certificate's name through
``ssl.principal.mapping.rules``; without a certificate it is ``User:ANONYMOUS``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reference_impl.protocol.apis import (
    API_VERSIONS_KEY,
    UnknownApiError,
    api_name,
    response_class,
    schema_versions,
)
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import (
    MalformedRequestError,
    decode_request_body,
    decode_request_header,
    encode_response,
    peek_header,
)
from reference_impl.protocol.error_response import error_response
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
from .oauthbearer import OAUTHBEARER, OAuthBearerServer, ValidatorOptions
from .principal import ANONYMOUS, PrincipalMappingError, user
from .settings import ListenerSecurity, listener_security

log = logging.getLogger("reference_impl.security")

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
HANDSHAKE_VERSIONS = range(0, 2)
AUTHENTICATE_VERSIONS = range(0, 3)

API_VERSIONS_SERVED = schema_versions(API_VERSIONS_KEY)

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


MIN_REAUTH_INTERVAL_MS = 1_000
"""Kafka's ``KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS``."""


@dataclass(slots=True)
class Session:
    listener: ListenerSecurity
    principal: str = ANONYMOUS
    state: str = COMPLETE
    server: MechanismServer | None = None
    kafka_framing: bool = True
    """SaslHandshake v1+: tokens come in SaslAuthenticate requests; v0: as bare frames."""
    versions_seen: bool = False
    """ApiVersions answered during this handshake (a second one closes the connection)."""
    mechanism: str = ""
    expires_ms: int | None = None
    """When the authenticated session expires (KIP-368), on the monotonic clock; None: never."""
    reauth_started_ms: int | None = None
    """When the last re-authentication began, on the monotonic clock."""
    previous_principal: str | None = None
    """Set while re-authenticating: the principal the connection had."""
    bad_mechanism: str | None = None
    """Re-authentication asked for another mechanism: the next token fails with this message."""


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
        self._now_ms = 0
        self._mono_ms = 0

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

    def screen(
        self, connection_id: int, frame: bytes, now_ms: int = 0, mono_ms: int | None = None
    ) -> Screened | None:
        """Handle ``frame`` here if the connection has not authenticated (or re-authenticates, or its
        session expired); None: the broker handles it. ``now_ms`` is wall time (a credential's
        expiry is compared with it), ``mono_ms`` the monotonic clock (default: the wall time) the
        session's expiry and the re-authentication interval run on, as Kafka's
        ``sessionExpirationTimeNanos`` and ``lastReauthenticationStartNanos`` do
        (``clients/src/main/java/org/apache/kafka/common/security/authenticator/SaslServerAuthenticator.java``,
        ``clients/src/main/java/org/apache/kafka/common/network/KafkaChannel.java``)."""
        session = self._sessions.get(connection_id)
        if session is None:
            return None
        self._now_ms = now_ms
        self._mono_ms = now_ms if mono_ms is None else mono_ms
        if session.state == COMPLETE:
            return self._authenticated(session, frame, self._mono_ms)
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
        if api_key == API_VERSIONS_KEY and session.previous_principal is None:
            if session.versions_seen:  # Kafka: IllegalStateException, the connection closes
                return self._fail(
                    session, "Unexpected ApiVersions request received during SASL authentication"
                )
            if version in API_VERSIONS_SERVED:  # an unsupported version may be retried (UNSUPPORTED_VERSION)
                session.versions_seen = True
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
        if session.previous_principal is not None and mechanism != session.mechanism:
            session.bad_mechanism = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for re-authentication "
                f"of mechanism '{session.mechanism}'"
            )
        session.mechanism = mechanism
        session.server = self._server(session.listener, mechanism)
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
            return self._out_of_turn(session, frame, api_key, version, correlation_id)
        if version not in AUTHENTICATE_VERSIONS:
            return self._fail(session, f"Version {version} is not supported for apiKey SASL_AUTHENTICATE")
        body = self._decode(session, frame)
        if isinstance(body, Screened):
            return body
        server = session.server
        assert server is not None
        try:
            if session.bad_mechanism is not None:  # Kafka's REAUTH_BAD_MECHANISM: no answer
                return self._fail(session, session.bad_mechanism)
            challenge = server.evaluate(bytes(getattr(body, "auth_bytes", b"")))
            lifetime = self._maybe_complete(session, server)
        except SaslFailure as exc:
            doing = "re-authentication" if session.previous_principal is not None else "authentication"
            message = exc.client_message or (
                f"Authentication failed during {doing} due to invalid credentials with SASL mechanism "
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
        return Screened(
            self._answer(
                SASL_AUTHENTICATE_KEY,
                version,
                correlation_id,
                error_code=ErrorCode.none,
                error_message=None,
                auth_bytes=challenge,
                session_lifetime=lifetime,
            )
        )

    def _raw_token(self, session: Session, frame: bytes) -> Screened:
        server = session.server
        assert server is not None
        try:
            if session.bad_mechanism is not None:
                return self._fail(session, session.bad_mechanism)
            challenge = server.evaluate(frame)
            self._maybe_complete(session, server)
        except SaslFailure as exc:
            return self._fail(session, f"SASL/{server.mechanism} authentication failed: {exc}")
        return Screened(size_prefix(len(challenge)) + challenge)

    def _server(self, listener: ListenerSecurity, mechanism: str) -> MechanismServer:
        if mechanism == PLAIN:
            return PlainServer(listener.plain_users)
        if mechanism == OAUTHBEARER:
            return OAuthBearerServer(listener.oauth or ValidatorOptions(), self._now_ms)
        return ScramServer(mechanism, self.scram_lookup, lambda: random_nonce(self.nonce_bytes))

    def _maybe_complete(self, session: Session, server: MechanismServer) -> int:
        """Once the exchange is complete: the principal (unchanged by a re-authentication, else
        :class:`SaslFailure`), the session's expiry; returns the session lifetime to tell the client
        (Kafka's ``ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs``)."""
        if not server.complete:
            return 0
        principal = user(server.authorization_id)
        previous = session.previous_principal
        if previous is not None and previous != principal:
            raise SaslFailure(
                "principal changed during re-authentication",
                f"Cannot change principals during re-authentication from {previous.replace(':', '.', 1)}: "
                f"{principal.replace(':', '.', 1)}",
            )
        now = self._now_ms
        max_reauth = session.listener.max_reauth_ms.get(server.mechanism, 0)
        credential_expiry = getattr(server, "credential_expiry_ms", None)
        lifetime = 0
        session.expires_ms = None
        if credential_expiry is not None or max_reauth > 0:
            if credential_expiry is None:
                lifetime = max(0, max_reauth)
            elif max_reauth <= 0:
                lifetime = max(0, credential_expiry - now)
            else:
                lifetime = max(0, min(credential_expiry - now, max_reauth))
            session.expires_ms = self._mono_ms + lifetime
        session.principal = principal
        session.state = COMPLETE
        session.server = None
        session.previous_principal = None
        log.info(
            "%s %s with SASL/%s%s",
            "re-authenticated" if previous is not None else "authenticated",
            principal,
            server.mechanism,
            f", session lifetime {lifetime} ms" if session.expires_ms is not None else "",
        )
        return lifetime

    def _authenticated(self, session: Session, frame: bytes, now_ms: int) -> Screened | None:
        """An authenticated connection's frame: a SaslHandshake may begin a re-authentication, any
        other request after the session expired closes the connection (no answer). ``now_ms`` is
        the monotonic clock."""
        if session.expires_ms is None:
            return None
        try:
            api_key, _version, _correlation_id = peek_header(frame)
        except MalformedRequestError:
            return None  # the broker closes it as any malformed request
        if api_key == SASL_HANDSHAKE_KEY and (
            session.reauth_started_ms is None or now_ms - session.reauth_started_ms >= MIN_REAUTH_INTERVAL_MS
        ):
            session.reauth_started_ms = now_ms
            session.previous_principal = session.principal
            session.bad_mechanism = None
            session.state = HANDSHAKE
            return self._handshake(session, frame)
        if now_ms >= session.expires_ms:
            session.state = FAILED
            return Screened(None, f"session of {session.principal} expired (connections.max.reauth.ms)")
        return None

    @classmethod
    def _decode(cls, session: Session, frame: bytes) -> object:
        """The request's body, or the closing :class:`Screened` for one that does not parse."""
        try:
            header, offset = decode_request_header(frame)
            return decode_request_body(header, frame, offset)
        except (MalformedRequestError, UnknownApiError) as exc:
            return cls._fail(session, f"malformed SASL request: {exc}")

    @classmethod
    def _out_of_turn(
        cls, session: Session, frame: bytes, api_key: int, version: int, correlation_id: int
    ) -> Screened:
        """A request other than SaslAuthenticate during the exchange: its own response type saying
        ILLEGAL_SASL_STATE (Kafka's ``handleSaslToken``: ``getErrorResponse``, for every API), then
        the connection closes; one that does not parse closes it without an answer."""
        try:
            name = api_name(api_key).upper()
        except UnknownApiError:
            name = str(api_key)
        reason = f"Unexpected Kafka request of type {name} during SASL authentication."
        body = cls._decode(session, frame)
        if isinstance(body, Screened):
            return body
        session.state = FAILED
        answer = error_response(api_key, version, body, ErrorCode.illegal_sasl_state, reason)
        if answer is None:  # a Produce with acks=0: no answer
            return Screened(None, reason)
        return Screened(encode_response(api_key, version, correlation_id, answer), reason)

    @staticmethod
    def _fail(session: Session, reason: str) -> Screened:
        session.state = FAILED
        return Screened(None, reason)

    @staticmethod
    def _answer(api_key: int, version: int, correlation_id: int, **fields: object) -> bytes:
        body = build(response_class(api_key, version), {"throttle_time": 0, **fields})
        return encode_response(api_key, version, correlation_id, body)
