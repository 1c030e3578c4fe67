"""JAAS configuration text as Kafka's ``sasl.jaas.config`` holds it.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

One login module: its class, a control flag, ``key=value`` options (values quoted or bare) and a
closing ``;`` (Kafka's ``JaasConfig``/``JaasContext`` parse it with ``StreamTokenizer``; it
allows exactly one module in ``sasl.jaas.config``). On a broker, PLAIN's users are the
``user_NAME="password"`` options (``PlainServerCallbackHandler``). The text comes from a config
and is bounded by :data:`MAX_JAAS_CHARS`; anything else is a :class:`JaasError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_JAAS_CHARS = 1 << 16
FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))', re.S)


class JaasError(ValueError):
    """Text that is not one JAAS login module entry."""


@dataclass(frozen=True, slots=True)
class JaasEntry:
    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    def users(self) -> dict[str, str]:
        """PLAIN's broker-side users: ``user_NAME="password"`` options."""
        return {k[len("user_") :]: v for k, v in self.options.items() if k.startswith("user_") and len(k) > 5}


def parse_jaas(text: str) -> JaasEntry:
    """The one login module of a ``sasl.jaas.config`` value."""
    if len(text) > MAX_JAAS_CHARS:
        raise JaasError(f"sasl.jaas.config is longer than {MAX_JAAS_CHARS} characters")
    tokens: list[tuple[str, str]] = []  # (kind, text): q quoted, w word, = and ;
    pos = 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise JaasError(f"sasl.jaas.config: unexpected text at character {pos}")
        quoted, word, equals, semi = match.groups()
        if quoted is not None:
            tokens.append(("q", re.sub(r"\\(.)", r"\1", quoted)))
        elif word is not None:
            tokens.append(("w", word))
        elif equals:
            tokens.append(("=", "="))
        elif semi:
            tokens.append((";", ";"))
        pos = match.end()
    if len(tokens) < 3 or tokens[0][0] != "w" or tokens[1][0] != "w" or tokens[-1][0] != ";":
        raise JaasError("sasl.jaas.config must be 'LoginModuleClass FLAG key=value ... ;'")
    flag = tokens[1][1].lower()
    if flag not in FLAGS:
        raise JaasError(f"sasl.jaas.config: invalid control flag {tokens[1][1]!r}")
    options: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3:
        raise JaasError("sasl.jaas.config: options must be key=value")
    for i in range(0, len(body), 3):
        key, eq, value = body[i : i + 3]
        if key[0] != "w" or eq[0] != "=" or value[0] not in "qw":
            raise JaasError(f"sasl.jaas.config: option near {key[1]!r} is not key=value")
        options[key[1]] = value[1]
    return JaasEntry(tokens[0][1], flag, options)
