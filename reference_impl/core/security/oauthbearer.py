"""SASL/OAUTHBEARER (RFC 7628) with Kafka's unsecured JWS validator, sans-IO.

Kafka's sources, ``clients/src/main/java/org/apache/kafka/common/security/oauthbearer/internals/``:
``OAuthBearerSaslServer.java`` (the exchange), ``OAuthBearerClientInitialResponse.java`` (the
client's first message ``n,[a=authzid],\\x01auth=Bearer <token>\\x01[key=value\\x01]*\\x01``),
``unsecured/OAuthBearerUnsecuredJws.java`` (the token), ``unsecured/
OAuthBearerUnsecuredValidatorCallbackHandler.java`` and ``unsecured/OAuthBearerValidationUtils.java``
(its checks), as a broker runs them when no ``sasl.server.callback.handler.class`` is configured:

* the token is three dot-separated base64 parts (``java.util.Base64``'s basic decoder, padding
  optional) of which the header's ``alg`` is ``none`` and the signature is empty; the claims hold
  ``exp`` (seconds, required), a non-blank principal claim (``sub``, or the JAAS option
  ``unsecuredValidatorPrincipalClaimName``), optionally ``iat`` and a scope claim (``scope``, or
  ``unsecuredValidatorScopeClaimName``: a string or a list of strings);
* ``iat`` may not be after now plus ``unsecuredValidatorAllowableClockSkewMs``, now minus the skew
  must be before ``exp``, ``exp`` must be after ``iat``, and every scope of
  ``unsecuredValidatorRequiredScope`` (space-separated) must be in the token's scope;
* a token that fails is answered, not refused: the server's challenge is the JSON error
  ``{"status":"invalid_token"}`` (``{"status":"insufficient_scope", "scope":"[a, b]"}`` for a
  missing scope); the client then sends ``\\x01`` and the exchange fails with that JSON as the
  message (SASL_AUTHENTICATION_FAILED);
* a first message that does not parse fails with Kafka's generic message; an authorization id
  that is not the token's principal fails with Kafka's message naming both;
* a valid token completes the exchange with an empty challenge; the principal is ``User:<sub>``
  and the token's expiry bounds the session (``credential_expiry_ms``, KIP-368).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .mechanisms import SaslFailure

OAUTHBEARER = "OAUTHBEARER"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
MAX_TOKEN_BYTES = 65_536
"""Longest OAUTHBEARER client message taken apart (Kafka's bound is sasl.server.max.receive.size)."""
MAX_CLAIMS = 256

_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*"
_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")


class TokenError(Exception):
    """Kafka's ``OAuthBearerIllegalTokenException``: the token fails; ``scope`` set for a missing scope."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope


@dataclass(frozen=True, slots=True)
class ValidatorOptions:
    """The unsecured validator's JAAS options (``unsecuredValidator*``)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    @classmethod
    def from_jaas(cls, options: Mapping[str, str]) -> ValidatorOptions:
        """Raises ValueError for a clock skew that is not a non-negative number (Kafka's
        ``OAuthBearerConfigException``)."""
        skew_text = options.get("unsecuredValidatorAllowableClockSkewMs", "").strip()
        skew = int(skew_text) if skew_text else 0
        if skew < 0:
            raise ValueError(f"Allowable clock skew millis must not be negative: {skew_text}")
        return cls(
            principal_claim=options.get("unsecuredValidatorPrincipalClaimName", "").strip() or "sub",
            scope_claim=options.get("unsecuredValidatorScopeClaimName", "").strip() or "scope",
            required_scope=tuple(options.get("unsecuredValidatorRequiredScope", "").split()),
            allowable_clock_skew_ms=skew,
        )


@dataclass(frozen=True, slots=True)
class UnsecuredToken:
    principal: str
    expiry_ms: int
    issued_at_s: float | None
    scope: frozenset[str]


def _part(split: str) -> dict[str, Any]:
    try:
        padded = split + "=" * (-len(split) % 4)
        raw = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        raise TokenError("malformed Base64 URL encoded value") from None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise TokenError("malformed JSON") from None
    if not isinstance(value, dict) or len(value) > MAX_CLAIMS:
        raise TokenError("malformed JSON")
    return value


def _claim(claims: Mapping[str, Any], name: str, kind: type | tuple[type, ...], kind_name: str) -> Any:
    value = claims.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise TokenError(f"The '{name}' claim was not of type {kind_name}: {type(value).__name__}")
    return value


def parse_unsecured_jws(token: str, options: ValidatorOptions) -> UnsecuredToken:
    """``OAuthBearerUnsecuredJws``'s constructor: the token's parts, claims and principal."""
    if ".." in token:
        raise TokenError("Malformed compact serialization contains '..'")
    splits = token.split(".")
    if len(splits) != 3:
        raise TokenError(
            "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"
        )
    header, claims = _part(splits[0]), _part(splits[1])
    if header.get("alg") != "none":
        raise TokenError("Unsecured JWS must have 'none' for an algorithm")
    if splits[2]:
        raise TokenError("Unsecured JWS must not contain a digital signature")
    raw_scope = claims.get(options.scope_claim)
    scope: frozenset[str]
    if isinstance(raw_scope, str):
        scope = frozenset({raw_scope.strip()}) if raw_scope.strip() else frozenset()
    else:
        listed = _claim(claims, options.scope_claim, list, "List") or []
        scope = frozenset(s.strip() for s in listed if isinstance(s, str) and s.strip())
    exp = _claim(claims, "exp", (int, float), "Number")
    if exp is None:
        raise TokenError("No expiration time in JWT")
    principal = _claim(claims, options.principal_claim, str, "String")
    if principal is None or not principal.strip():
        raise TokenError(f"No principal name in JWT claim: {options.principal_claim}")
    iat = _claim(claims, "iat", (int, float), "Number")
    return UnsecuredToken(principal, round(float(exp) * 1000), None if iat is None else float(iat), scope)


def validate(token: str, options: ValidatorOptions, now_ms: int) -> UnsecuredToken:
    """``OAuthBearerUnsecuredValidatorCallbackHandler.handleCallback``'s checks, in its order."""
    jws = parse_unsecured_jws(token, options)
    skew = options.allowable_clock_skew_ms
    if jws.issued_at_s is not None and 1000 * jws.issued_at_s > now_ms + skew:
        raise TokenError(
            f"The Issued At value ({jws.issued_at_s:f} seconds) was after the indicated time ({now_ms} ms) "
            f"plus allowable clock skew ({skew} ms)"
        )
    if now_ms - skew >= jws.expiry_ms:
        raise TokenError(
            f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was on or after the "
            f"Expiration Time value ({jws.expiry_ms / 1000:f} seconds)"
        )
    if jws.issued_at_s is not None and jws.expiry_ms / 1000 <= jws.issued_at_s:
        raise TokenError("The Expiration Time time was not after the Issued At time")
    for required in options.required_scope:
        if required not in jws.scope:
            listed = "[" + ", ".join(options.required_scope) + "]"
            raise TokenError(f"The provided scope was missing a required scope ({required})", listed)
    return jws


def json_error(status: str, scope: str | None) -> str:
    """``OAuthBearerSaslServer.jsonErrorResponse`` (its spacing)."""
    text = f'{{"status":"{status}"'
    if scope is not None:
        text += f', "scope":"{scope}"'
    return text + "}"


def parse_client_first(message: bytes) -> tuple[str, str, dict[str, str]]:
    """(authorization id, token, extensions) of the client's first message; :class:`SaslFailure`
    with Kafka's generic message otherwise (``OAuthBearerClientInitialResponse``)."""
    if len(message) > MAX_TOKEN_BYTES:
        raise SaslFailure(f"OAUTHBEARER message of {len(message)} bytes")
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslFailure("Invalid OAUTHBEARER client first message") from None
    match = _CLIENT_FIRST.fullmatch(text)
    if match is None:
        raise SaslFailure("Invalid OAUTHBEARER client first message")
    pairs: dict[str, str] = {}
    for item in match["kvpairs"].split("\x01"):
        if item:
            key, _, value = item.partition("=")
            pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        raise SaslFailure("Invalid OAUTHBEARER client first message: 'auth' not specified")
    for key in pairs:
        if not _EXTENSION_KEY.fullmatch(key):
            raise SaslFailure(f"Extension name {key} is invalid")
    auth_match = _AUTH.fullmatch(auth)
    if auth_match is None:
        raise SaslFailure("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if auth_match["scheme"].lower() != "bearer":
        raise SaslFailure("Invalid scheme in OAUTHBEARER client first message")
    return match["authzid"] or "", auth_match["token"], pairs


class OAuthBearerServer:
    """One OAUTHBEARER exchange: the client's first message, and after a refused token its ``\\x01``."""

    def __init__(self, options: ValidatorOptions, now_ms: int) -> None:
        self.mechanism = OAUTHBEARER
        self.options = options
        self.now_ms = now_ms
        self.complete = False
        self.authorization_id = ""
        self.credential_expiry_ms: int | None = None
        self._error: str | None = None
        self.reason = ""
        """Why the last token was refused (for the log; the client sees only the JSON status)."""

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("OAUTHBEARER exchange already complete")
        if token == b"\x01" and self._error is not None:
            raise SaslFailure(f"token refused: {self._error}", self._error)
        self._error = None
        authzid, value, _extensions = parse_client_first(token)  # the unsecured handler takes any extension
        try:
            jws = validate(value, self.options, self.now_ms)
        except TokenError as exc:
            status = "insufficient_scope" if exc.scope is not None else "invalid_token"
            self._error = json_error(status, exc.scope)
            self.reason = str(exc)
            return self._error.encode()
        if authzid and authzid != jws.principal:
            raise SaslFailure(
                "authzid differs from the token's principal",
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different "
                f"from the token's principal name ({jws.principal})",
            )
        self.authorization_id = jws.principal
        self.credential_expiry_ms = jws.expiry_ms
        self.complete = True
        return b""


def unsecured_token(
    principal: str, *, issued_at_s: int, lifetime_s: int = 3600, scope: list[str] | None = None
) -> str:
    """An unsecured JWS such as Kafka's ``OAuthBearerUnsecuredLoginCallbackHandler`` makes (tests).

    Its parts are base64 of the basic alphabet without padding: Kafka's handler encodes with the
    URL alphabet but the validator decodes with the basic one, so a part holding ``-`` or ``_`` is
    refused by Kafka; these never hold one."""

    def part(value: Mapping[str, Any]) -> str:
        return base64.b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims: dict[str, Any] = {"sub": principal, "iat": issued_at_s, "exp": issued_at_s + lifetime_s}
    if scope is not None:
        claims["scope"] = scope
    return f"{part({'alg': 'none'})}.{part(claims)}."
