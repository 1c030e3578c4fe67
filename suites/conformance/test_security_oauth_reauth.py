"""OAUTHBEARER with unsecured tokens (RFC 7628, Kafka's unsecured validator), re-authentication
(KIP-368) and requests out of turn, on the SASL listener the run's ``--command-config`` names;
skipped without one, and the OAUTHBEARER cases where the listener does not enable it.

Kafka's rules: ``clients/src/main/java/org/apache/kafka/common/security/oauthbearer/internals/
OAuthBearerSaslServer.java`` and ``unsecured/OAuthBearerUnsecuredValidatorCallbackHandler.java`` (a
refused token is answered with the JSON error ``{"status":"invalid_token"}`` as the challenge, the
client's ``\\x01`` then fails the exchange with that message; a valid one completes it and its expiry
bounds the session); ``authenticator/SaslServerAuthenticator.java`` and ``network/KafkaChannel.java``
with ``core/src/main/scala/kafka/network/SocketServer.scala`` (SaslAuthenticate v1+ gives the
session lifetime; once it has passed any request but SaslHandshake closes the connection; a
SaslHandshake on a connection whose session expires begins a re-authentication with the same
mechanism that must end in the same principal; before SaslHandshake, SaslAuthenticate closes the
connection without an answer; during the exchange another request is answered ILLEGAL_SASL_STATE).

The tokens carry the scope :data:`fixtures.targets.secured.OAUTH_SCOPE` (the run's own, when it
authenticates with OAUTHBEARER): the scope the reference's secured listener requires.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.targets.secured import OAUTH_SCOPE
from fixtures.wire import WireClient, WireError
from reference_impl.protocol.sasl_client import oauthbearer_first, unsecured_jws

from .expect import expect, expect_code
from .security_common import SASL_RULE, closed_without_answer, run_security

FEATURE = "Security: SASL"
OAUTH_RULE = "OAuthBearerSaslServer.java"
REAUTH_RULE = "KIP-368 (SaslServerAuthenticator.java, SocketServer.scala)"
SHORT_LIFETIME_S = 3


@pytest.fixture
def connect(wire_factory: Callable[..., WireClient]) -> Callable[[], WireClient]:
    security = run_security("sasl")

    def unauthenticated() -> WireClient:
        wire = wire_factory(security=security, authenticate=False)
        wire.api_versions()
        return wire

    return unauthenticated


def _scope() -> list[str]:
    run = run_security("sasl")
    return list(run.oauth_scope) if run.mechanism == "OAUTHBEARER" and run.oauth_scope else [OAUTH_SCOPE]


def _oauth(wire: WireClient) -> int:
    """SaslHandshake OAUTHBEARER; skips when the listener does not enable it. The SaslAuthenticate version."""
    shake = wire.request("sasl_handshake", 1, mechanism="OAUTHBEARER")
    if int(shake.error_code) != 0:
        pytest.skip(f"the listener does not enable OAUTHBEARER (it offers {list(shake.mechanisms)})")
    return min(2, wire.api_versions().get(36, (0, 1))[1])


def _login(wire: WireClient, principal: str = "kh-oauth", lifetime_s: float = 600) -> Any:
    version = _oauth(wire)
    token = unsecured_jws(principal, lifetime_s=lifetime_s, scope=_scope(), issued_at_s=time.time() - 1)
    return wire.request("sasl_authenticate", version, auth_bytes=oauthbearer_first(token))


def test_oauthbearer_valid_token_and_session_lifetime(connect: Callable[[], WireClient]) -> None:
    wire = connect()
    done = _login(wire, lifetime_s=600)
    expect_code(done.error_code, "NONE", rule=OAUTH_RULE)
    expect(bytes(done.auth_bytes) == b"", OAUTH_RULE, f"server final message {bytes(done.auth_bytes)!r}")
    lifetime = getattr(done, "session_lifetime", None)
    if lifetime is not None:  # v1+: the token's expiry bounds the session
        ms = lifetime.total_seconds() * 1000 if hasattr(lifetime, "total_seconds") else int(lifetime)
        expect(0 < ms <= 600_000, REAUTH_RULE, f"session_lifetime_ms {ms} for a token of 600 s")
    expect(bool(wire.request("metadata", 1, topics=[]).brokers), OAUTH_RULE, "Metadata not served")


@pytest.mark.parametrize("case", ["expired", "alg-hs256", "no-sub", "not-json"])
def test_oauthbearer_refused_token_json_then_failure(connect: Callable[[], WireClient], case: str) -> None:
    wire = connect()
    version = _oauth(wire)
    now = time.time()
    token = {
        "expired": unsecured_jws("kh", issued_at_s=now - 120, lifetime_s=60, scope=_scope()),
        "alg-hs256": unsecured_jws("kh", issued_at_s=now - 1, scope=_scope(), alg="HS256"),
        "no-sub": unsecured_jws("", issued_at_s=now - 1, scope=_scope()),
        "not-json": "bm90IGpzb24.bm90IGpzb24.",
    }[case]
    challenge = wire.request("sasl_authenticate", version, auth_bytes=oauthbearer_first(token))
    expect_code(
        challenge.error_code, "NONE", rule=OAUTH_RULE, where="a refused token is answered, not failed"
    )
    expect(
        bytes(challenge.auth_bytes) == b'{"status":"invalid_token"}',
        OAUTH_RULE,
        f"the challenge is {bytes(challenge.auth_bytes)[:120]!r}",
    )
    failed = wire.request("sasl_authenticate", version, auth_bytes=b"\x01")
    expect_code(failed.error_code, "SASL_AUTHENTICATION_FAILED", rule=OAUTH_RULE)
    expect(
        failed.error_message == '{"status":"invalid_token"}', OAUTH_RULE, f"message {failed.error_message!r}"
    )
    expect(wire.is_closed_by_peer(), OAUTH_RULE, "the connection stayed open after the failure")


def test_oauthbearer_missing_scope(connect: Callable[[], WireClient]) -> None:
    wire = connect()
    version = _oauth(wire)
    token = unsecured_jws("kh", issued_at_s=time.time() - 1, scope=["kh-not-a-required-scope"])
    challenge = wire.request("sasl_authenticate", version, auth_bytes=oauthbearer_first(token))
    if bytes(challenge.auth_bytes) == b"":
        pytest.skip("the listener requires no scope (unsecuredValidatorRequiredScope unset)")
    text = bytes(challenge.auth_bytes).decode("utf-8", "replace")
    expect(text.startswith('{"status":"insufficient_scope", "scope":"['), OAUTH_RULE, f"challenge {text!r}")


def test_oauthbearer_malformed_first_message_fails(connect: Callable[[], WireClient]) -> None:
    wire = connect()
    version = _oauth(wire)
    answer = wire.request("sasl_authenticate", version, auth_bytes=b"n,,\x01auth=Basic dXNlcjpwYXNz\x01\x01")
    expect_code(answer.error_code, "SASL_AUTHENTICATION_FAILED", rule=OAUTH_RULE)
    expect(wire.is_closed_by_peer(), OAUTH_RULE, "the connection stayed open after a malformed message")


def test_expired_session_closes_on_the_next_request(connect: Callable[[], WireClient]) -> None:
    """A token living a few seconds: the session ends with it; the next request closes the connection."""
    wire = connect()
    done = _login(wire, lifetime_s=SHORT_LIFETIME_S)
    expect_code(done.error_code, "NONE", rule=OAUTH_RULE)
    time.sleep(SHORT_LIFETIME_S + 1.5)
    closed = closed_without_answer(wire, lambda: wire.request("metadata", 1, topics=[]))
    expect(closed, REAUTH_RULE, "a request after the session expired was answered")


def test_reauthentication_renews_the_session(connect: Callable[[], WireClient]) -> None:
    wire = connect()
    expect_code(_login(wire, "kh-reauth").error_code, "NONE", rule=OAUTH_RULE)
    again = _login(wire, "kh-reauth")  # SaslHandshake on an authenticated connection: re-authentication
    expect_code(again.error_code, "NONE", rule=REAUTH_RULE)
    expect(
        bool(wire.request("metadata", 1, topics=[]).brokers),
        REAUTH_RULE,
        "not served after re-authenticating",
    )


def test_reauthentication_may_not_change_the_principal(connect: Callable[[], WireClient]) -> None:
    wire = connect()
    expect_code(_login(wire, "kh-first").error_code, "NONE", rule=OAUTH_RULE)
    changed = _login(wire, "kh-second")
    expect_code(changed.error_code, "SASL_AUTHENTICATION_FAILED", rule=REAUTH_RULE)
    expect(
        "Cannot change principals during re-authentication" in str(changed.error_message),
        REAUTH_RULE,
        f"message {changed.error_message!r}",
    )
    expect(wire.is_closed_by_peer(), REAUTH_RULE, "the connection stayed open")


def test_sasl_authenticate_before_the_handshake_closes(connect: Callable[[], WireClient]) -> None:
    wire = connect()
    closed = closed_without_answer(
        wire, lambda: wire.request("sasl_authenticate", 1, auth_bytes=b"\x00u\x00p")
    )
    expect(closed, SASL_RULE, "SaslAuthenticate before SaslHandshake was answered")


def test_another_request_during_the_exchange_is_illegal_sasl_state(connect: Callable[[], WireClient]) -> None:
    """Kafka answers it with its own response type carrying ILLEGAL_SASL_STATE, then closes."""
    run = run_security("sasl")
    wire = connect()
    shake = wire.request("sasl_handshake", 1, mechanism=run.mechanism)
    expect_code(shake.error_code, "NONE", rule=SASL_RULE)
    try:
        answer = wire.request("list_groups", 3)
    except WireError:
        answer = None
    expect(answer is not None, SASL_RULE, "ListGroups during the exchange was not answered")
    if answer is not None:
        expect_code(answer.error_code, "ILLEGAL_SASL_STATE", rule=SASL_RULE)
    expect(wire.is_closed_by_peer(), SASL_RULE, "the connection stayed open")
