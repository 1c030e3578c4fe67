"""Principals as Kafka names them, and ``ssl.principal.mapping.rules``.

A principal is ``User:NAME`` (``KafkaPrincipal``); a connection that has not authenticated (a
PLAINTEXT listener, TLS without a client certificate) is ``User:ANONYMOUS``. A TLS client's name
is its certificate's distinguished name in RFC 2253 form (Java's ``X500Principal.getName()``:
most specific attribute first, ``CN=client,OU=unit,O=org``), mapped by the rules
(``clients/src/main/java/org/apache/kafka/common/security/ssl/SslPrincipalMapper.java``)::

    RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L,DEFAULT

Each rule is a regular expression the whole name must match, a replacement with ``$n`` groups,
and an optional ``/L`` or ``/U`` case fold; the first that matches names the principal;
``DEFAULT`` is the name itself. No rule matching is an error (Kafka fails the connection).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANONYMOUS = "User:ANONYMOUS"
MAX_RULES = 64
_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")
_X500_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


class PrincipalMappingError(ValueError):
    """Rules that do not parse, or a name no rule maps."""


def user(name: str) -> str:
    return f"User:{name}"


def _escape_rfc2253(value: str) -> str:
    out = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def distinguished_name(subject: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """RFC 2253 text of a subject as Python's ``SSLSocket.getpeercert()`` gives it (least specific
    RDN first there, most specific first here, as Java's ``X500Principal.getName()``)."""
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_X500_KEYWORDS.get(k, k)}={_escape_rfc2253(v)}" for k, v in rdn))
    return ",".join(rdns)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str
    case: str

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        match = self.pattern.fullmatch(name)
        if match is None:
            return None
        out = re.sub(r"\$(\d)", lambda m: match.group(int(m.group(1))) or "", self.replacement)
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules``, parsed once."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        text = rules.strip() or "DEFAULT"
        pos = 0
        while pos < len(text):
            match = _RULE.match(text, pos)
            if match is None or match.end() == pos:
                raise PrincipalMappingError(f"Invalid rule: {text[pos:]}")
            if len(self.rules) >= MAX_RULES:
                raise PrincipalMappingError(f"more than {MAX_RULES} ssl.principal.mapping.rules")
            if match.group(1) == "DEFAULT":
                self.rules.append(_Rule(None, "", ""))
            else:
                try:
                    pattern = re.compile(match.group(2).replace("\\/", "/"))
                except re.error as exc:
                    raise PrincipalMappingError(f"Invalid rule {match.group(1)}: {exc}") from None
                self.rules.append(_Rule(pattern, match.group(3).replace("\\/", "/"), match.group(4)))
            pos = match.end()

    def name(self, distinguished: str) -> str:
        for rule in self.rules:
            mapped = rule.apply(distinguished)
            if mapped is not None:
                return mapped
        raise PrincipalMappingError(
            f"No rules apply to {distinguished}, rules {[r.replacement for r in self.rules]}"
        )
