"""SASL mechanism servers: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677), sans-IO.

Each server takes the client's tokens one at a time (:meth:`MechanismServer.evaluate`) and
returns the challenge to send, raising :class:`SaslFailure` when authentication fails. As Kafka's
servers do, some failures carry a message meant for the client (Kafka's
``SaslAuthenticationException``) and the others a generic one, so that an unauthenticated client
learns nothing (``SaslException``: "Authentication failed during authentication due to invalid
credentials with SASL mechanism M").

Kafka's sources: ``clients/src/main/java/org/apache/kafka/common/security/plain/internals/
PlainSaslServer.java``, ``.../scram/internals/ScramSaslServer.java``, ``ScramMessages.java``,
``ScramFormatter.java``, ``ScramMechanism.java`` (iterations 4096 to 16384).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SCRAM_HASHES = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}
SUPPORTED_MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, "OAUTHBEARER")
"""What a SASL listener may enable (OAUTHBEARER: :mod:`.oauthbearer`, Kafka's unsecured validator)."""
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
MAX_TOKEN_CHARS = 4096
"""Longest PLAIN or SCRAM message taken apart (the frame is bounded by sasl.server.max.receive.size)."""

_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_BASE64 = r"[A-Za-z0-9+/]*={0,2}"
_EXTENSIONS = r"(?:,[A-Za-z]=[^,]*)*"
_CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)(?P<bare>n=(?P<name>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
    rf"(?P<ext>{_EXTENSIONS}))"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),p=(?P<proof>{_BASE64})"
)


class SaslFailure(Exception):
    """Authentication failed. ``client_message`` goes to the client; None: Kafka's generic text."""

    def __init__(self, reason: str, client_message: str | None = None) -> None:
        super().__init__(reason)
        self.client_message = client_message


class MechanismServer(Protocol):
    mechanism: str
    complete: bool
    authorization_id: str

    def evaluate(self, token: bytes) -> bytes: ...


class PlainServer:
    """PLAIN: one ``authzid NUL authcid NUL password`` token, checked against the JAAS users."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self.mechanism = PLAIN
        self.users = users
        self.complete = False
        self.authorization_id = ""

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("PLAIN exchange already complete")
        if len(token) > MAX_TOKEN_CHARS:
            raise SaslFailure(f"PLAIN token of {len(token)} bytes", "Invalid SASL/PLAIN response: too long")
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("PLAIN token is not UTF-8") from None
        parts = text.split("\x00")
        if len(parts) != 3:
            raise SaslFailure(
                "malformed PLAIN token", f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        authzid, username, password = parts
        if not username:
            raise SaslFailure("no username", "Authentication failed: username not specified")
        if not password:
            raise SaslFailure("no password", "Authentication failed: password not specified")
        expected = self.users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailure(
                f"PLAIN: bad password or unknown user {username!r}",
                "Authentication failed: Invalid username or password",
            )
        if authzid and authzid != username:
            raise SaslFailure(
                "authzid differs from the username",
                "Authentication failed: Client requested an authorization id that is different from username",
            )
        self.authorization_id = username
        self.complete = True
        return b""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker keeps of a SCRAM password (Kafka's ``ScramCredential``): never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(key: bytes, data: bytes, algorithm: str) -> bytes:
    return hmac.new(key, data, algorithm).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism], password.encode("utf-8"), salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    algorithm = SCRAM_HASHES[mechanism]
    client_key = _hmac(salted, b"Client Key", algorithm)
    return ScramCredential(
        salt,
        hashlib.new(algorithm, client_key).digest(),
        _hmac(salted, b"Server Key", algorithm),
        iterations,
    )


def make_credential(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A credential as ``kafka-storage format --add-scram`` and AlterUserScramCredentials make one."""
    if mechanism not in SCRAM_HASHES:
        raise ValueError(f"{mechanism} is not a SCRAM mechanism ({', '.join(SCRAM_HASHES)})")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"iterations {iterations} outside {MIN_ITERATIONS}..{MAX_ITERATIONS} for {mechanism}"
        )
    salt = secrets.token_bytes(32) if salt is None else salt
    return credential_from_salted(
        mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
    )


def random_nonce(nonce_bytes: Callable[[int], bytes] = secrets.token_bytes) -> str:
    """A server nonce: 160 random bits as printable characters (Kafka: 130 bits, base 36)."""
    return base64.b32encode(nonce_bytes(20)).decode().rstrip("=").lower()


def scram_username(saslname: str) -> str:
    """``ScramFormatter.username``: ``=2C`` is ``,`` and ``=3D`` is ``=``."""
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SaslFailure("bad base64 in SCRAM message") from None


class ScramServer:
    """One SCRAM exchange: client-first, server-first, client-final, server-final."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str, str], ScramCredential | None],
        server_nonce: Callable[[], str] | None = None,
    ) -> None:
        """``server_nonce`` makes this exchange's nonce (default: 160 random bits, base32)."""
        self.mechanism = mechanism
        self.lookup = lookup
        self.server_nonce = server_nonce or random_nonce
        self.complete = False
        self.authorization_id = ""
        self._state = "first"
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2 = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None

    def evaluate(self, token: bytes) -> bytes:
        if len(token) > MAX_TOKEN_CHARS:
            self._state = "failed"
            raise SaslFailure(f"SCRAM message of {len(token)} bytes")
        try:
            text = token.decode("ascii")
        except UnicodeDecodeError:
            self._state = "failed"
            raise SaslFailure("SCRAM message is not ASCII") from None
        try:
            if self._state == "first":
                return self._first(text)
            if self._state == "final":
                return self._final(text)
            raise SaslFailure(f"Unexpected challenge in Sasl server state {self._state}")
        except SaslFailure:
            self._state = "failed"
            self._credential = None
            raise

    def _first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslFailure("Invalid SCRAM client first message format")
        username = scram_username(match["name"])
        credential = self.lookup(self.mechanism, username)
        if credential is None:
            raise SaslFailure(f"Authentication failed: Invalid user credentials ({username!r})")
        authzid = match["authzid"]
        if authzid and scram_username(authzid) != username:
            raise SaslFailure(
                "authzid differs from the username",
                "Authentication failed: Client requested an authorization id that is different from username",
            )
        if credential.iterations < MIN_ITERATIONS:
            raise SaslFailure(f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS}")
        self._nonce = match["nonce"] + self.server_nonce()
        self._server_first = (
            f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},i={credential.iterations}"
        )
        self._client_first_bare = match["bare"]
        self._gs2 = match["gs2"]
        self._credential = credential
        self.authorization_id = username
        self._state = "final"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise SaslFailure("Invalid SCRAM client final message format")
        # Kafka's ScramSaslServer only requires the client-final nonce to *end with* the server-first
        # one (clients/src/main/java/org/apache/kafka/common/security/scram/internals/
        # ScramSaslServer.java, RECEIVE_CLIENT_FINAL_MESSAGE), not RFC 5802's equality; librdkafka
        # 2.0.2 sends its own nonce twice and logs in to Kafka that way. The proof below covers the
        # message as sent, so a prefix changes nothing an attacker could use.
        if not match["nonce"].endswith(self._nonce):
            raise SaslFailure("Invalid client nonce in the final client message.")
        if _b64decode(match["channel"]) != self._gs2.encode():
            raise SaslFailure("channel binding data does not match the GS2 header")
        credential = self._credential
        assert credential is not None
        algorithm = SCRAM_HASHES[self.mechanism]
        auth_message = f"{self._client_first_bare},{self._server_first},{match['without']}".encode()
        proof = _b64decode(match["proof"])
        signature = _hmac(credential.stored_key, auth_message, algorithm)
        if len(proof) != len(signature):
            raise SaslFailure("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(algorithm, client_key).digest(), credential.stored_key):
            raise SaslFailure("Invalid client credentials")
        server_signature = _hmac(credential.server_key, auth_message, algorithm)
        self._credential = None
        self._state = "complete"
        self.complete = True
        return f"v={base64.b64encode(server_signature).decode()}".encode()
