"""The broker's SASL and TLS-principal logic, sans-IO: PLAIN and SCRAM (against the RFC's vector and
the harness's independent client), the exchange's states and errors as Kafka's
SaslServerAuthenticator, bounded hostile input, JAAS and ``--add-scram`` parsing, principal rules."""

from __future__ import annotations

import base64
import struct

import pytest

from reference_impl.core.configs.model import ConfigError
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.controller.scram import bootstrap_records
from reference_impl.core.security.credentials import parse_add_scram
from reference_impl.core.security.jaas import JaasError, parse_jaas
from reference_impl.core.security.mechanisms import (
    PlainServer,
    SaslFailure,
    ScramServer,
    credential_from_salted,
    make_credential,
    salted_password,
)
from reference_impl.core.security.principal import (
    PrincipalMappingError,
    SslPrincipalMapper,
    distinguished_name,
)
from reference_impl.core.security.settings import listener_security
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.sasl_client import ScramClient, plain_token

from .harness import BrokerHarness, request

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)
SASL_CONFIGS = (
    "listeners=SASL_PLAINTEXT://127.0.0.1:9092",
    "inter.broker.listener.name=SASL_PLAINTEXT",
    "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
)


def test_scram_sha_256_matches_rfc_7677_vector() -> None:
    """RFC 7677 section 3: user "user", password "pencil"; the server's messages byte for byte."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = credential_from_salted(
        "SCRAM-SHA-256", salted_password("SCRAM-SHA-256", "pencil", salt, 4096), salt, 4096
    )
    server = ScramServer(
        "SCRAM-SHA-256",
        lambda m, u: credential if u == "user" else None,
        lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.authorization_id == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_with_the_harness_client(mechanism: str) -> None:
    credential = make_credential(mechanism, "s3cret, =with commas")
    server = ScramServer(mechanism, lambda m, u: credential if u == "a,b=c" else None)
    client = ScramClient(mechanism, "a,b=c", "s3cret, =with commas")
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.authorization_id == "a,b=c"


def test_scram_refuses_wrong_password_wrong_nonce_and_garbage() -> None:
    credential = make_credential("SCRAM-SHA-256", "right")
    lookup = {("SCRAM-SHA-256", "u"): credential}.get

    def server() -> ScramServer:
        return ScramServer("SCRAM-SHA-256", lambda m, u: lookup((m, u)))

    wrong = ScramClient("SCRAM-SHA-256", "u", "wrong")
    s = server()
    with pytest.raises(SaslFailure) as failed:
        s.evaluate(wrong.final(s.evaluate(wrong.first())))
    assert failed.value.client_message is None  # Kafka's generic text: nothing about the user leaks
    good = ScramClient("SCRAM-SHA-256", "u", "right")
    s = server()
    final = good.final(s.evaluate(good.first())).decode()
    nonce = final.split(",r=", 1)[1].split(",p=", 1)[0]
    tampered = final.replace(f",r={nonce},", f",r={nonce[:-1]},", 1)  # no longer ends with the server's
    with pytest.raises(SaslFailure, match="nonce"):
        s.evaluate(tampered.encode())
    with pytest.raises(SaslFailure, match="Invalid user credentials"):
        server().evaluate(ScramClient("SCRAM-SHA-256", "nobody", "x").first())
    for garbage in (b"", b"\xff\xfe", b"y,,n=u,r=abc", b"n,,n=u", b"n,,n=u,r=a" + b"x" * 5000):
        with pytest.raises(SaslFailure):
            server().evaluate(garbage)
    s = server()
    s.evaluate(good.first())
    with pytest.raises(SaslFailure):
        s.evaluate(b"c=biws,r=zzz,p=!!!")
    with pytest.raises(SaslFailure):  # a failed exchange takes nothing more
        s.evaluate(good.first())


def test_scram_accepts_a_final_nonce_that_ends_with_the_servers_as_kafka_does() -> None:
    """Kafka's ScramSaslServer checks ``endsWith`` (librdkafka 2.0.2 sends its own nonce twice and
    logs in); a prefix with a proof made over something else still fails on the proof."""
    credential = make_credential("SCRAM-SHA-512", "right")
    doubled = ScramClient("SCRAM-SHA-512", "u", "right")
    s = ScramServer("SCRAM-SHA-512", lambda m, u: credential)
    doubled.verify(s.evaluate(doubled.final(s.evaluate(doubled.first()), nonce_prefix=doubled.nonce)))
    assert s.complete and s.authorization_id == "u"
    plain = ScramClient("SCRAM-SHA-512", "u", "right")
    s = ScramServer("SCRAM-SHA-512", lambda m, u: credential)
    final = plain.final(s.evaluate(plain.first())).decode()
    with pytest.raises(SaslFailure, match="Invalid client credentials"):
        s.evaluate(final.replace(",r=", ",r=kh", 1).encode())


def test_plain_as_kafka_answers() -> None:
    server = PlainServer({"alice": "alice-secret"})
    assert server.evaluate(plain_token("alice", "alice-secret")) == b"" and server.complete
    cases = {
        plain_token("alice", "nope"): "Invalid username or password",
        plain_token("bob", "alice-secret"): "Invalid username or password",
        b"alice\x00alice-secret": "expected 3 tokens, got 2",
        plain_token("", "x"): "username not specified",
        plain_token("alice", ""): "password not specified",
        plain_token("alice", "alice-secret", authzid="admin"): "authorization id that is different",
    }
    for token, says in cases.items():
        with pytest.raises(SaslFailure) as failed:
            PlainServer({"alice": "alice-secret"}).evaluate(token)
        assert failed.value.client_message is not None and says in failed.value.client_message


def test_jaas_and_add_scram_parsing() -> None:
    entry = parse_jaas(JAAS)
    assert entry.users() == {"admin": "admin-secret", "alice": "alice-secret"}
    assert entry.options["username"] == "admin" and entry.flag == "required"
    for bad in ("", "Module required", 'Module bogus a="b";', "Module required a= ;", "x" * 70000):
        with pytest.raises(JaasError):
            parse_jaas(bad)
    mechanism, name, credential = parse_add_scram("SCRAM-SHA-512=[name=admin,password=admin-secret]")
    assert (mechanism, name, credential.iterations) == ("SCRAM-SHA-512", "admin", 4096)
    _m, _n, salted = parse_add_scram(
        'SCRAM-SHA-256=[name=alice,iterations=8192,salt="MWx4NHRzZmx2eTVvOXpsZTRuNndybm9ueWc=",password=p]'
    )
    assert salted.iterations == 8192 and salted.salt == b"1lx4tsflvy5o9zle4n6wrnonyg"
    for bad in (
        "SCRAM-SHA-1=[name=a,password=b]",
        "SCRAM-SHA-256=[password=b]",
        "SCRAM-SHA-256=[name=a]",
        "SCRAM-SHA-256=[name=a,password=b,iterations=10]",
        "SCRAM-SHA-256=[name=a,password=b,colour=red]",
        "SCRAM-SHA-256=[name=a,salt=!!,saltedpassword=x]",
    ):
        with pytest.raises(ConfigError):
            parse_add_scram(bad)


def test_principal_mapping_rules_as_kafka() -> None:
    subject = (
        (("organizationName", "org"),),
        (("organizationalUnitName", "unit"),),
        (("commonName", "c,1"),),
    )
    dn = distinguished_name(subject)
    assert dn == "CN=c\\,1,OU=unit,O=org"
    mapper = SslPrincipalMapper(
        r"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/U"
    )
    assert mapper.name("CN=svc,OU=ServiceUsers,O=x") == "svc"
    assert mapper.name("CN=bob,OU=eng,O=x") == "BOB@ENG"
    with pytest.raises(PrincipalMappingError):
        mapper.name("O=nobody")
    assert SslPrincipalMapper("DEFAULT").name(dn) == dn
    with pytest.raises(PrincipalMappingError):
        SslPrincipalMapper("RULE:broken")


def test_listener_security_checks_as_kafka_at_start() -> None:
    def setup(*pairs: str) -> None:
        listener_security(BrokerConfig.parse(1, pairs).static, "SASL_PLAINTEXT")

    setup(*SASL_CONFIGS)
    with pytest.raises(ConfigError, match="GSSAPI is not served"):
        setup("listeners=SASL_PLAINTEXT://h:1")
    with pytest.raises(ConfigError, match=r"plain\.sasl\.jaas\.config is not set"):
        setup("listeners=SASL_PLAINTEXT://h:1", "sasl.enabled.mechanisms=PLAIN")
    with pytest.raises(ConfigError, match="reads PEM only"):
        listener_security(BrokerConfig.parse(1, ["listeners=SSL://h:1"]).static, "SSL")


def _harness() -> tuple[BrokerHarness, int]:
    harness = BrokerHarness(*SASL_CONFIGS)
    records = bootstrap_records([("SCRAM-SHA-512", "admin", make_credential("SCRAM-SHA-512", "pw"))])
    harness.broker.controller.writer().commit(records, harness.now_ms)
    return harness, harness.connect("SASL_PLAINTEXT")


def _authenticate(harness: BrokerHarness, cid: int, token: bytes, version: int = 2) -> object:
    return harness.call(request(36, version, auth_bytes=token), cid)


def test_sasl_exchange_through_the_broker() -> None:
    """ApiVersions is served before authentication; the handshake lists the mechanisms; SCRAM runs in
    SaslAuthenticate; afterwards Metadata is served and a second handshake is ILLEGAL_SASL_STATE."""
    harness, cid = _harness()
    versions = harness.call(request(18, 3, client_software_name="t", client_software_version="1"), cid)
    keys = {int(k.api_key) for k in versions.api_keys}
    assert {17, 36} <= keys
    shake = harness.call(request(17, 1, mechanism="SCRAM-SHA-512"), cid)
    assert shake.error_code == ErrorCode.none
    assert list(shake.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    client = ScramClient("SCRAM-SHA-512", "admin", "pw")
    first = _authenticate(harness, cid, client.first())
    final = _authenticate(harness, cid, client.final(first.auth_bytes))  # type: ignore[attr-defined]
    assert final.error_code == ErrorCode.none  # type: ignore[attr-defined]
    client.verify(final.auth_bytes)  # type: ignore[attr-defined]
    assert harness.broker.authenticator.principal(cid) == "User:admin"
    assert (
        harness.call(
            request(
                3, 12, topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False
            ),
            cid,
        )
        .brokers[0]
        .port
        == 9092
    )
    again = harness.call(request(17, 1, mechanism="PLAIN"), cid)
    assert again.error_code == ErrorCode.illegal_sasl_state and cid not in harness.closed


def test_requests_before_authentication_close_the_connection() -> None:
    harness, cid = _harness()
    harness.send(
        cid,
        request(3, 12, topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False),
    )
    assert "during SASL handshake" in harness.closed[cid] and not harness.responses.get(cid)
    harness, cid = _harness()
    harness.call(request(17, 1, mechanism="PLAIN"), cid)
    harness.send(
        cid,
        request(3, 12, topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False),
    )
    assert "during SASL authentication" in harness.closed[cid]


def test_failures_answer_then_close() -> None:
    harness, cid = _harness()
    shake = harness.call(request(17, 1, mechanism="GSSAPI"), cid)
    assert shake.error_code == ErrorCode.unsupported_sasl_mechanism and "GSSAPI" in harness.closed[cid]
    harness, cid = _harness()
    harness.call(request(17, 1, mechanism="PLAIN"), cid)
    failed = _authenticate(harness, cid, plain_token("alice", "wrong"))
    assert failed.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
    assert "Invalid username or password" in str(failed.error_message)  # type: ignore[attr-defined]
    assert cid in harness.closed
    harness, cid = _harness()
    harness.call(request(17, 1, mechanism="SCRAM-SHA-512"), cid)
    failed = _authenticate(harness, cid, ScramClient("SCRAM-SHA-512", "ghost", "x").first(), version=0)
    assert failed.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(failed.error_message)  # type: ignore[attr-defined]


def test_handshake_v0_raw_tokens() -> None:
    harness, cid = _harness()
    harness.call(request(17, 0, mechanism="PLAIN"), cid)
    token = plain_token("alice", "alice-secret")
    harness.send_frame(cid, struct.pack(">i", len(token)) + token)
    assert harness.responses[cid].pop(0) == b""
    assert harness.broker.authenticator.principal(cid) == "User:alice"
    harness, cid = _harness()
    harness.call(request(17, 0, mechanism="PLAIN"), cid)
    token = plain_token("alice", "bad")
    harness.send_frame(cid, struct.pack(">i", len(token)) + token)
    assert cid in harness.closed and not harness.responses.get(cid)


def test_oversized_and_malformed_frames_before_authentication() -> None:
    harness, cid = _harness()
    assert harness.broker.frame_limit(cid, 100 << 20) == 524288
    big = b"\x00\x11\x00\x01" + b"\x00" * 600_000
    harness.send_frame(cid, struct.pack(">i", len(big)) + big)
    assert "invalid receive size" in harness.closed[cid]
    for junk in (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b"GET / HTTP/1.1\r\n\r\n", b"\x00"):
        harness, cid = _harness()
        harness.send_frame(cid, struct.pack(">i", len(junk)) + junk)
        assert cid in harness.closed and not harness.responses.get(cid)
    harness, cid = _harness()
    harness.call(request(17, 1, mechanism="SCRAM-SHA-512"), cid)
    failed = _authenticate(harness, cid, b"\xff" * 5000)
    assert failed.error_code == ErrorCode.sasl_authentication_failed and cid in harness.closed  # type: ignore[attr-defined]


def test_plaintext_listener_needs_no_authentication() -> None:
    harness = BrokerHarness(
        *SASL_CONFIGS, "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT"
    )
    cid = harness.connect("PLAINTEXT")
    assert harness.call(
        request(3, 12, topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False),
        cid,
    ).brokers
    assert harness.broker.authenticator.principal(cid) == "User:ANONYMOUS"
    assert harness.call(request(36, 2, auth_bytes=b"x"), cid).error_code == ErrorCode.illegal_sasl_state
