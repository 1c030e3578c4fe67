"""SASL as Kafka's broker authenticates (KIP-43 handshake, KIP-152 SaslAuthenticate, PLAIN RFC 4616,
SCRAM RFC 5802/7677), on the listener the run's ``--command-config`` names; skipped without one.

Kafka's rules (``clients/src/main/java/org/apache/kafka/common/security/authenticator/
SaslServerAuthenticator.java``): before authentication only ApiVersions and SaslHandshake are
taken, anything else closes the connection; an unknown mechanism is answered
UNSUPPORTED_SASL_MECHANISM with the enabled list; a failed authentication is answered
SASL_AUTHENTICATION_FAILED and the connection closes; frames before authentication are bounded by
``sasl.server.max.receive.size`` (512 KiB by default); after authentication SaslHandshake is
ILLEGAL_SASL_STATE (``KafkaApis``). Every hostile case ends with a fresh connection that
authenticates: the broker lives.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import WireClient
from fixtures.wire.security import ClientSecurity
from reference_impl.protocol.sasl_client import ScramClient, plain_token

from .expect import expect, expect_code
from .security_common import SASL_RULE, closed_without_answer, run_security

FEATURE = "Security: SASL"
OVERSIZED_BYTES = 600_000
"""Above Kafka's default sasl.server.max.receive.size (524288)."""
KAFKA_SCRAM_NONCE_RULE = (
    "Kafka's ScramSaslServer: the client-final nonce must end with the server-first nonce "
    "(clients/src/main/java/org/apache/kafka/common/security/scram/internals/ScramSaslServer.java)"
)


@pytest.fixture
def sasl(wire_factory: Callable[..., WireClient]) -> tuple[ClientSecurity, Callable[[], WireClient]]:
    security = run_security("sasl")

    def unauthenticated() -> WireClient:
        wire = wire_factory(security=security, authenticate=False)
        wire.api_versions()
        return wire

    return security, unauthenticated


def _authenticate_version(wire: WireClient) -> int:
    return min(2, wire.api_versions().get(36, (0, 1))[1])


def _broker_lives(wire_factory: Callable[..., WireClient], security: ClientSecurity) -> None:
    wire = wire_factory(security=security)
    answer = wire.request("metadata", 1, topics=[])
    expect(bool(answer.brokers), SASL_RULE, "after the hostile exchange a fresh connection got no brokers")


def test_handshake_lists_the_enabled_mechanisms(sasl: Any) -> None:
    """SaslHandshake with the configured mechanism: NONE and the enabled list, which names it."""
    security, connect = sasl
    answer = connect().request("sasl_handshake", 1, mechanism=security.mechanism)
    expect_code(answer.error_code, "NONE", rule=SASL_RULE)
    expect(security.mechanism in list(answer.mechanisms), SASL_RULE, f"enabled: {list(answer.mechanisms)}")


def test_authenticated_connection_is_served_and_refuses_a_second_handshake(
    sasl: Any, wire_factory: Callable[..., WireClient]
) -> None:
    """After authentication requests are served; SaslHandshake again is ILLEGAL_SASL_STATE (KafkaApis)."""
    security, _connect = sasl
    wire = wire_factory(security=security)
    expect(bool(wire.request("metadata", 1, topics=[]).brokers), SASL_RULE, "Metadata not served")
    again = wire.request("sasl_handshake", 1, mechanism=security.mechanism)
    expect_code(again.error_code, "ILLEGAL_SASL_STATE", rule="KafkaApis.handleSaslHandshakeRequest")


def test_unsupported_mechanism_is_refused_and_closed(
    sasl: Any, wire_factory: Callable[..., WireClient]
) -> None:
    security, connect = sasl
    wire = connect()
    answer = wire.request("sasl_handshake", 1, mechanism="KH-NO-SUCH-MECHANISM")
    expect_code(answer.error_code, "UNSUPPORTED_SASL_MECHANISM", rule=SASL_RULE)
    expect(bool(list(answer.mechanisms)), SASL_RULE, "the refusal does not list the enabled mechanisms")
    expect(wire.is_closed_by_peer(), SASL_RULE, "the connection stayed open after the refusal")
    _broker_lives(wire_factory, security)


@pytest.mark.parametrize("who", ["wrong-password", "unknown-user"])
def test_bad_credentials_fail_and_close(sasl: Any, wire_factory: Callable[..., WireClient], who: str) -> None:
    """SASL_AUTHENTICATION_FAILED, then the connection closes (after the answer, KIP-152)."""
    security, connect = sasl
    username = security.username if who == "wrong-password" else "kh-no-such-user"
    password = (security.password or "") + "-wrong"
    wire = connect()
    wire.request("sasl_handshake", 1, mechanism=security.mechanism)
    version = _authenticate_version(wire)
    if security.mechanism == "PLAIN":
        answer = wire.request("sasl_authenticate", version, auth_bytes=plain_token(username or "", password))
    else:
        client = ScramClient(security.mechanism or "", username or "", password)
        answer = wire.request("sasl_authenticate", version, auth_bytes=client.first())
        if int(answer.error_code) == 0:  # a known user: the proof is what fails
            answer = wire.request(
                "sasl_authenticate", version, auth_bytes=client.final(bytes(answer.auth_bytes))
            )
    expect_code(answer.error_code, "SASL_AUTHENTICATION_FAILED", rule=SASL_RULE)
    expect(wire.is_closed_by_peer(), SASL_RULE, "the connection stayed open after a failed authentication")
    _broker_lives(wire_factory, security)


def test_requests_before_authentication_close_the_connection(
    sasl: Any, wire_factory: Callable[..., WireClient]
) -> None:
    """Metadata before SaslHandshake, and instead of SaslAuthenticate, is not served."""
    security, connect = sasl
    wire = connect()
    closed = closed_without_answer(wire, lambda: wire.request("metadata", 1, topics=[]))
    expect(closed, SASL_RULE, "Metadata was answered before SaslHandshake")
    wire = connect()
    wire.request("sasl_handshake", 1, mechanism=security.mechanism)
    try:
        answer = wire.request("metadata", 1, topics=[])
    except Exception:
        answer = None
    expect(answer is None or not answer.brokers, SASL_RULE, "Metadata served during SASL authentication")
    expect(wire.is_closed_by_peer(), SASL_RULE, "the connection stayed open after a request out of turn")
    _broker_lives(wire_factory, security)


def test_requests_during_authentication_are_answered_illegal_sasl_state(
    sasl: Any, wire_factory: Callable[..., WireClient]
) -> None:
    """A request other than SaslAuthenticate during the exchange is answered in its own response type
    with ILLEGAL_SASL_STATE on every resource it names (``SaslServerAuthenticator.handleSaslToken``
    answers ``AbstractRequest.getErrorResponse``: MetadataRequest's names each topic, ProduceRequest's
    each partition, neither has a top-level error code), then the connection closes."""
    security, connect = sasl
    rule = "SaslServerAuthenticator.java: handleSaslToken"
    wire = connect()
    wire.request("sasl_handshake", 1, mechanism=security.mechanism)
    answer = wire.request("metadata", 1, topics=[{"name": "kh-sasl-a"}, {"name": "kh-sasl-b"}])
    expect(not answer.brokers, rule, "Metadata served brokers during SASL authentication")
    expect(
        [(t.name, t.error_code.name.upper()) for t in answer.topics]
        == [("kh-sasl-a", "ILLEGAL_SASL_STATE"), ("kh-sasl-b", "ILLEGAL_SASL_STATE")],
        rule,
        f"Metadata during SASL authentication answered {[(t.name, t.error_code) for t in answer.topics]}",
    )
    expect(wire.is_closed_by_peer(), rule, "the connection stayed open after a request out of turn")
    wire = connect()
    wire.request("sasl_handshake", 1, mechanism=security.mechanism)
    partitions = [{"index": 0, "records": None}, {"index": 1, "records": None}]
    produced = wire.request(
        "produce", 3, transactional_id=None, acks=1, timeout=1000,
        topic_data=[{"name": "kh-sasl-a", "partition_data": partitions}],
    )  # fmt: skip
    codes = [(p.index, p.error_code.name.upper()) for t in produced.responses for p in t.partition_responses]
    expect(codes == [(0, "ILLEGAL_SASL_STATE"), (1, "ILLEGAL_SASL_STATE")], rule, f"Produce answered {codes}")
    expect(wire.is_closed_by_peer(), rule, "the connection stayed open after a request out of turn")
    _broker_lives(wire_factory, security)


@pytest.mark.parametrize("token", ["garbage", "empty", "nul-only"])
def test_malformed_tokens_fail_and_close(
    sasl: Any, wire_factory: Callable[..., WireClient], token: str
) -> None:
    security, connect = sasl
    payload = {"garbage": b"\xff\xfe\x00garbage,,=", "empty": b"", "nul-only": b"\x00\x00\x00\x00"}[token]
    wire = connect()
    wire.request("sasl_handshake", 1, mechanism=security.mechanism)
    answer = wire.request("sasl_authenticate", _authenticate_version(wire), auth_bytes=payload)
    expect_code(answer.error_code, "SASL_AUTHENTICATION_FAILED", rule=SASL_RULE)
    expect(wire.is_closed_by_peer(), SASL_RULE, "the connection stayed open after a malformed token")
    _broker_lives(wire_factory, security)


def test_oversized_token_closes_the_connection(sasl: Any, wire_factory: Callable[..., WireClient]) -> None:
    """A SaslAuthenticate frame over sasl.server.max.receive.size: the connection closes, nothing is
    allocated for it (Kafka: "Failing SASL authentication due to invalid receive size")."""
    security, connect = sasl
    wire = connect()
    wire.request("sasl_handshake", 1, mechanism=security.mechanism)
    header = struct.pack(">hhih", 36, 1, wire.next_correlation_id(), 2) + b"kh"
    body = struct.pack(">i", OVERSIZED_BYTES) + b"x" * OVERSIZED_BYTES
    frame = struct.pack(">i", len(header) + len(body)) + header + body
    answer = wire.send_raw(frame, timeout_s=10)
    expect(answer is None, SASL_RULE, "an oversized SaslAuthenticate was answered")
    _broker_lives(wire_factory, security)


def _scram_halfway(sasl: Any) -> tuple[WireClient, int, ScramClient, bytes]:
    """A SCRAM exchange up to the server-first message (skips when the run does not use SCRAM):
    the connection, the SaslAuthenticate version, the client and the server-first bytes."""
    security, connect = sasl
    if not (security.mechanism or "").startswith("SCRAM-"):
        pytest.skip(f"the run authenticates with {security.mechanism}, not SCRAM")
    wire = connect()
    wire.request("sasl_handshake", 1, mechanism=security.mechanism)
    version = _authenticate_version(wire)
    client = ScramClient(security.mechanism or "", security.username or "", security.password or "")
    first = wire.request("sasl_authenticate", version, auth_bytes=client.first())
    expect_code(first.error_code, "NONE", rule=SASL_RULE)
    return wire, version, client, bytes(first.auth_bytes)


def test_scram_final_message_with_a_wrong_nonce_fails(
    sasl: Any, wire_factory: Callable[..., WireClient]
) -> None:
    """A client-final nonce that does not end with the server-first one is refused (Kafka's
    ScramSaslServer checks ``endsWith``, RFC 5802 section 5.1 equality)."""
    wire, version, client, server_first = _scram_halfway(sasl)
    final = client.final(server_first).decode()
    nonce = final.split(",r=", 1)[1].split(",p=", 1)[0]
    tampered = final.replace(f",r={nonce},", f",r={nonce[:-1]},", 1).encode()
    answer = wire.request("sasl_authenticate", version, auth_bytes=tampered)
    expect_code(answer.error_code, "SASL_AUTHENTICATION_FAILED", rule="RFC 5802 section 5.1")
    expect(wire.is_closed_by_peer(), SASL_RULE, "the connection stayed open after a wrong nonce")
    _broker_lives(wire_factory, sasl[0])


def test_scram_final_nonce_with_a_prefix_logs_in_as_on_kafka(sasl: Any) -> None:
    """librdkafka 2.0.2 (Debian's kcat) sends its own nonce twice in the client-final message, with a
    proof over what it sent; Kafka's ScramSaslServer accepts a nonce that ends with the server-first
    one (``endsWith``), so such clients log in to Kafka and must log in here."""
    wire, version, client, server_first = _scram_halfway(sasl)
    final = client.final(server_first, nonce_prefix=client.nonce)
    answer = wire.request("sasl_authenticate", version, auth_bytes=final)
    expect_code(answer.error_code, "NONE", rule=KAFKA_SCRAM_NONCE_RULE)
    client.verify(bytes(answer.auth_bytes))
    logged_in = wire.request("metadata", 1, topics=[])
    expect(bool(logged_in.brokers), SASL_RULE, "Metadata after logging in listed no brokers")
