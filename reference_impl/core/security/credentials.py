"""SCRAM credentials the broker knows, and ``--add-scram`` in ``kafka-storage format``'s syntax.

    SCRAM-SHA-256=[name=admin,password=admin-secret]
    SCRAM-SHA-512=[name=alice,iterations=8192,salt="c2FsdA==",saltedpassword="..."]

(``core/src/main/scala/kafka/tools/StorageTool.scala``, ``getUserScramCredentialRecord``: a
``name``, and a ``password`` or a base64 ``salt`` with a base64 ``saltedpassword``;
``iterations`` defaults to 4096, the mechanism's minimum.)
"""

from __future__ import annotations

import base64
import binascii
import re

from ..configs.model import ConfigError
from .mechanisms import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_HASHES,
    ScramCredential,
    credential_from_salted,
    make_credential,
)

MAX_USERS = 10_000
MAX_NAME_CHARS = 256
_ADD_SCRAM = re.compile(r"^\s*(SCRAM-SHA-(?:256|512))\s*=\s*\[(.*)\]\s*$", re.S)
_PAIR = re.compile(r'\s*([a-z]+)\s*=\s*("((?:[^"\\]|\\.)*)"|[^,"]*)\s*(?:,|$)')


class ScramCredentials:
    """(mechanism, user) → credential; bounded in count."""

    def __init__(self) -> None:
        self._credentials: dict[tuple[str, str], ScramCredential] = {}

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._credentials.get((mechanism, user))

    def put(self, mechanism: str, user: str, credential: ScramCredential) -> None:
        if (mechanism, user) not in self._credentials and len(self._credentials) >= MAX_USERS:
            raise ConfigError(f"more than {MAX_USERS} SCRAM credentials")
        self._credentials[(mechanism, user)] = credential

    def delete(self, mechanism: str, user: str) -> bool:
        return self._credentials.pop((mechanism, user), None) is not None

    def users(self) -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = {}
        for (mechanism, user), credential in sorted(self._credentials.items()):
            out.setdefault(user, []).append((mechanism, credential.iterations))
        return out


def parse_add_scram(value: str) -> tuple[str, str, ScramCredential]:
    """(mechanism, user, credential) of one ``--add-scram`` value; :class:`ConfigError` otherwise."""
    match = _ADD_SCRAM.match(value)
    if match is None:
        raise ConfigError(f"--add-scram {value!r} is not SCRAM-SHA-256=[name=...,password=...]")
    mechanism, body = match.group(1), match.group(2)
    fields: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        pair = _PAIR.match(body, pos)
        if pair is None or pair.end() == pos:
            raise ConfigError(f"--add-scram {mechanism}: cannot parse {body[pos:]!r}")
        key = pair.group(1)
        if key in fields or len(fields) >= 5:
            raise ConfigError(f"--add-scram {mechanism}: {key} given twice or too many fields")
        quoted = pair.group(3)
        fields[key] = quoted if quoted is not None else pair.group(2).strip()
        pos = pair.end()
    unknown = set(fields) - {"name", "password", "iterations", "salt", "saltedpassword"}
    if unknown:
        raise ConfigError(f"--add-scram {mechanism}: unknown field(s) {', '.join(sorted(unknown))}")
    name = fields.get("name", "")
    if not name or len(name) > MAX_NAME_CHARS:
        raise ConfigError(f"--add-scram {mechanism}: a name of 1 to {MAX_NAME_CHARS} characters is required")
    try:
        iterations = int(fields.get("iterations", str(MIN_ITERATIONS)))
    except ValueError:
        raise ConfigError(f"--add-scram {mechanism}: iterations must be a number") from None
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ConfigError(
            f"--add-scram {mechanism}: iterations {iterations} outside {MIN_ITERATIONS}..{MAX_ITERATIONS}"
        )
    try:
        salt = base64.b64decode(fields["salt"], validate=True) if "salt" in fields else None
        if "saltedpassword" in fields:
            if salt is None or "password" in fields:
                raise ConfigError(f"--add-scram {mechanism}: saltedpassword needs a salt and no password")
            salted = base64.b64decode(fields["saltedpassword"], validate=True)
            return mechanism, name, credential_from_salted(mechanism, salted, salt, iterations)
    except (binascii.Error, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"--add-scram {mechanism}: salt and saltedpassword must be base64") from None
    if "password" not in fields:
        raise ConfigError(f"--add-scram {mechanism}: give a password (or salt and saltedpassword)")
    assert mechanism in SCRAM_HASHES
    return mechanism, name, make_credential(mechanism, fields["password"], iterations, salt)
