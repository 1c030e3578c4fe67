"""TLS listeners as Kafka's (``clients/src/main/java/org/apache/kafka/common/network/
SslTransportLayer.java``): the broker speaks only TLS there, presents a chain the run's truststore
verifies, and closes a connection whose handshake fails; the broker lives. Skipped when the run
reaches its target without TLS (``--security ssl|sasl_ssl`` or a ``--command-config`` naming it).
"""

from __future__ import annotations

import dataclasses
import socket
import ssl
import struct
from collections.abc import Callable

import pytest

from fixtures.targets import TargetSession
from fixtures.wire import WireClient, WireError

from .expect import expect
from .security_common import TLS_RULE, run_security

FEATURE = "Security: TLS"


def _address(session: TargetSession) -> tuple[str, int]:
    host, _, port = session.first_address.rpartition(":")
    return host, int(port)


def _served(wire_factory: Callable[..., WireClient], **kwargs: object) -> None:
    wire = wire_factory(**kwargs)
    expect(bool(wire.request("metadata", 1, topics=[]).brokers), TLS_RULE, "Metadata not served over TLS")


def test_configured_tls_is_served(
    target_session: TargetSession, wire_factory: Callable[..., WireClient]
) -> None:
    run_security("tls")
    _served(wire_factory)


@pytest.mark.parametrize("junk", ["plaintext-kafka-request", "http", "random"])
def test_non_tls_bytes_close_the_connection(
    target_session: TargetSession, wire_factory: Callable[..., WireClient], junk: str
) -> None:
    """Bytes that are not a TLS handshake: no Kafka answer, the connection closes, the broker lives."""
    run_security("tls")
    header = struct.pack(">hhih", 18, 0, 1, 2) + b"kh"
    payload = {
        "plaintext-kafka-request": struct.pack(">i", len(header)) + header,
        "http": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "random": bytes(range(256)) * 8,
    }[junk]
    with socket.create_connection(_address(target_session), timeout=10) as sock:
        sock.sendall(payload)
        sock.settimeout(10)
        try:
            got = sock.recv(4096)
            while got and not got.startswith(b"\x00\x00"):  # a TLS alert may come first; read to the end
                got = sock.recv(4096)
        except (TimeoutError, ConnectionError):
            got = b""
    expect(not got, TLS_RULE, f"the broker answered non-TLS bytes: {got[:32]!r}")
    _served(wire_factory)


def test_untrusting_client_is_refused(target_session: TargetSession) -> None:
    """A client that does not trust the broker's CA fails verification: the broker presents a
    certificate chain, not an anonymous cipher suite."""
    run_security("tls")
    context = ssl.create_default_context()  # the system store only: not the run's CA
    with socket.create_connection(_address(target_session), timeout=10) as sock, pytest.raises(ssl.SSLError):
        context.wrap_socket(sock, server_hostname=_address(target_session)[0]).close()


def test_without_a_client_certificate(
    target_session: TargetSession, wire_factory: Callable[..., WireClient]
) -> None:
    """ssl.client.auth decides: required refuses the handshake, none and requested serve the client
    (as ANONYMOUS on SSL). Either way nothing half-works: a connection that comes up is served."""
    security = run_security("tls")
    if not security.cert_location:
        pytest.skip("the run's client has no certificate: the run itself is the check without one")
    bare = dataclasses.replace(security, cert_location=None, key_location=None)
    try:
        _served(wire_factory, security=bare)
    except (ssl.SSLError, WireError, ConnectionError) as exc:
        print(f"refused without a client certificate (ssl.client.auth=required): {exc}")
