"""OAUTHBEARER with Kafka's unsecured validator, re-authentication (KIP-368) and requests out of
turn, through the sans-IO broker, as Kafka's SaslServerAuthenticator, KafkaChannel and
OAuthBearerSaslServer behave."""

from __future__ import annotations

import base64
import json

from reference_impl.core.security.oauthbearer import unsecured_token
from reference_impl.protocol.build import millis
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.sasl_client import plain_token

from .harness import START_MS, BrokerHarness, request
from .test_security import JAAS

OAUTH_JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredValidatorRequiredScope="kafka";'
)
CONFIGS = (
    "listeners=SASL_PLAINTEXT://127.0.0.1:9092",
    "inter.broker.listener.name=SASL_PLAINTEXT",
    "sasl.enabled.mechanisms=PLAIN,OAUTHBEARER",
    f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
    f"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config={OAUTH_JAAS}",
)
NOW_S = START_MS // 1000
LIST_GROUPS = request(16, 4, states_filter=[])


def _first(token: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01\x01".encode()


def _login(
    harness: BrokerHarness, mechanism: str, token: bytes, cid: int | None = None
) -> tuple[int, object]:
    cid = cid or harness.connect("SASL_PLAINTEXT")
    shake = harness.call(request(17, 1, mechanism=mechanism), cid)
    assert shake.error_code == ErrorCode.none
    return cid, harness.call(request(36, 2, auth_bytes=token), cid)


def test_oauthbearer_unsecured_token_and_session_lifetime() -> None:
    harness = BrokerHarness(*CONFIGS)
    token = unsecured_token("alice", issued_at_s=NOW_S, lifetime_s=600, scope=["kafka", "other"])
    cid, done = _login(harness, "OAUTHBEARER", _first(token))
    assert done.error_code == ErrorCode.none and done.auth_bytes == b""  # type: ignore[attr-defined]
    assert millis(done.session_lifetime) == 600_000  # type: ignore[attr-defined]  # the token's expiry
    assert harness.broker.authenticator.principal(cid) == "User:alice"
    assert harness.call(LIST_GROUPS, cid).error_code == ErrorCode.none


def test_oauthbearer_refusals_as_kafka() -> None:
    harness = BrokerHarness(*CONFIGS)
    cases = {
        "expired": unsecured_token("a", issued_at_s=NOW_S - 100, lifetime_s=50, scope=["kafka"]),
        "scope": unsecured_token("a", issued_at_s=NOW_S, scope=["other"]),
        "future iat": unsecured_token("a", issued_at_s=NOW_S + 100, scope=["kafka"]),
    }
    for name, token in cases.items():
        cid, challenge = _login(harness, "OAUTHBEARER", _first(token))
        assert challenge.error_code == ErrorCode.none, name  # type: ignore[attr-defined]
        expected = (
            '{"status":"insufficient_scope", "scope":"[kafka]"}'
            if name == "scope"
            else '{"status":"invalid_token"}'
        )
        assert challenge.auth_bytes == expected.encode(), name  # type: ignore[attr-defined]
        failed = harness.call(request(36, 2, auth_bytes=b"\x01"), cid)
        assert failed.error_code == ErrorCode.sasl_authentication_failed and failed.error_message == expected
        assert cid in harness.closed
    signed = "eyJhbGciOiJIUzI1NiJ9." + base64.b64encode(
        json.dumps({"sub": "a", "exp": NOW_S + 60}).encode()
    ).decode().rstrip("=")
    cid, challenge = _login(harness, "OAUTHBEARER", _first(signed + ".c2ln"))
    assert challenge.auth_bytes == b'{"status":"invalid_token"}'  # type: ignore[attr-defined]
    for junk in (b"garbage", b"n,,\x01auth=Basic abc\x01\x01", b"\xff" * 100_000):
        cid, failed = _login(harness, "OAUTHBEARER", junk)
        assert failed.error_code == ErrorCode.sasl_authentication_failed and cid in harness.closed  # type: ignore[attr-defined]
    good = unsecured_token("alice", issued_at_s=NOW_S, scope=["kafka"])
    cid, failed = _login(harness, "OAUTHBEARER", _first(good, authzid="bob"))
    assert failed.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
    assert "(bob) that is different from the token's principal name (alice)" in str(failed.error_message)  # type: ignore[attr-defined]


def test_session_expiry_closes_and_reauthentication_renews() -> None:
    harness = BrokerHarness(*CONFIGS, "connections.max.reauth.ms=5000")
    cid, done = _login(harness, "PLAIN", plain_token("alice", "alice-secret"))
    assert millis(done.session_lifetime) == 5000  # type: ignore[attr-defined]
    harness.advance(4000)
    again = harness.call(request(17, 1, mechanism="PLAIN"), cid)  # re-authentication begins
    assert again.error_code == ErrorCode.none
    renewed = harness.call(request(36, 2, auth_bytes=plain_token("alice", "alice-secret")), cid)
    assert renewed.error_code == ErrorCode.none and millis(renewed.session_lifetime) == 5000
    harness.advance(4000)  # 8 s after the first login, 4 s after the renewal
    assert harness.call(LIST_GROUPS, cid).error_code == ErrorCode.none
    harness.advance(1500)
    harness.send(cid, LIST_GROUPS)
    assert "expired" in harness.closed[cid] and not harness.responses.get(cid)


def test_reauthentication_may_not_change_principal_or_mechanism() -> None:
    harness = BrokerHarness(*CONFIGS, "connections.max.reauth.ms=60000")
    cid, _done = _login(harness, "PLAIN", plain_token("alice", "alice-secret"))
    harness.advance(1000)
    harness.call(request(17, 1, mechanism="PLAIN"), cid)
    failed = harness.call(request(36, 2, auth_bytes=plain_token("admin", "admin-secret")), cid)
    assert failed.error_code == ErrorCode.sasl_authentication_failed
    assert (
        failed.error_message
        == "Cannot change principals during re-authentication from User.alice: User.admin"
    )
    assert cid in harness.closed
    cid, _done = _login(harness, "PLAIN", plain_token("alice", "alice-secret"))
    harness.advance(1000)
    assert harness.call(request(17, 1, mechanism="OAUTHBEARER"), cid).error_code == ErrorCode.none
    harness.send(
        cid, request(36, 2, auth_bytes=_first(unsecured_token("alice", issued_at_s=NOW_S, scope=["kafka"])))
    )
    assert "not supported for re-authentication" in harness.closed[cid] and not harness.responses.get(cid)


def test_without_expiry_a_second_handshake_is_illegal_state() -> None:
    harness = BrokerHarness(*CONFIGS)
    cid, done = _login(harness, "PLAIN", plain_token("alice", "alice-secret"))
    assert millis(done.session_lifetime) == 0  # type: ignore[attr-defined]
    assert harness.call(request(17, 1, mechanism="PLAIN"), cid).error_code == ErrorCode.illegal_sasl_state


def test_requests_out_of_turn() -> None:
    harness = BrokerHarness(*CONFIGS)
    versions = request(18, 3, client_software_name="t", client_software_version="1")
    cid = harness.connect("SASL_PLAINTEXT")
    assert harness.call(versions, cid).error_code == ErrorCode.none
    harness.send(cid, versions)  # a second ApiVersions before the handshake: Kafka closes
    assert cid in harness.closed and not harness.responses.get(cid)
    cid = harness.connect("SASL_PLAINTEXT")
    harness.send(cid, request(36, 2, auth_bytes=plain_token("alice", "alice-secret")))  # no handshake first
    assert "during SASL handshake" in harness.closed[cid] and not harness.responses.get(cid)
    cid = harness.connect("SASL_PLAINTEXT")
    harness.call(request(17, 1, mechanism="PLAIN"), cid)
    answer = harness.call(LIST_GROUPS, cid)  # during the exchange: answered ILLEGAL_SASL_STATE, then closed
    assert (
        answer.error_code == ErrorCode.illegal_sasl_state
        and "during SASL authentication" in harness.closed[cid]
    )
