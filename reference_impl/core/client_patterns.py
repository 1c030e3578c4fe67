"""Regular expressions that clients send: compiled with RE2, so matching is linear in the input.

Kafka compiles the patterns a client may send (ListTransactions' ``transactional_id_pattern``,
KIP-1152; ConsumerGroupHeartbeat's ``subscribed_topic_regex``, KIP-848) with RE2/J, whose syntax
has no backreferences or lookaround and whose matcher cannot backtrack. Python's ``re`` accepts a
different language and backtracks: ``(a+)+$`` against a long id pins a core for minutes. So a
pattern from the wire goes through Google's RE2 (the ``google-re2`` wheel), the same family of
engine Kafka uses, with its program memory bounded. A pattern RE2 refuses is the caller's
INVALID_REGULAR_EXPRESSION.
"""

from __future__ import annotations

from typing import Protocol, cast

import re2  # type: ignore[import-untyped]

# Longer patterns are refused before compiling: the text comes from the wire.
MAX_PATTERN_CHARS = 4096
# RE2's budget for one compiled program (its default is 8 MiB).
_MAX_PROGRAM_BYTES = 1 << 20


class InvalidPattern(ValueError):
    """The pattern is empty of meaning to RE2, too long, or uses syntax RE2 does not have."""


class ClientPattern(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


def _options() -> object:
    options = re2.Options()
    options.max_mem = _MAX_PROGRAM_BYTES
    options.log_errors = False
    return cast(object, options)


def compile_client_pattern(text: str) -> ClientPattern:
    """Compile ``text`` as RE2 syntax; raise InvalidPattern when RE2 would not accept it."""
    if len(text) > MAX_PATTERN_CHARS:
        raise InvalidPattern(f"pattern of {len(text)} characters (at most {MAX_PATTERN_CHARS})")
    try:
        return cast(ClientPattern, re2.compile(text, options=_options()))
    except re2.error as exc:
        message = exc.args[0] if exc.args else exc
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        raise InvalidPattern(str(message)) from None
