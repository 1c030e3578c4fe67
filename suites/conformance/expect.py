"""Assertions that name the Kafka rule they check, so a failure reads as a deviation report.

``expect_code(answer.error_code, "OFFSET_OUT_OF_RANGE", rule="KIP-...: ...")`` fails
with ``[rule] expected OFFSET_OUT_OF_RANGE, got NONE``; the power check
(``test_power_check.py``) relies on the rule appearing in the message.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode


def code_name(code: Any) -> str:
    if isinstance(code, ErrorCode):
        return code.name.upper()
    if isinstance(code, int):
        return ErrorCode(code).name.upper()
    return str(code).upper()


def expect_code(actual: Any, *expected: str | ErrorCode, rule: str, where: str = "") -> None:
    """``actual`` is one of ``expected`` (Kafka error names like ``"NONE"``,
    ``"UNKNOWN_TOPIC_OR_PARTITION"``)."""
    wanted = [code_name(e) for e in expected]
    got = code_name(actual)
    assert got in wanted, f"[{rule}] {where + ': ' if where else ''}expected {' or '.join(wanted)}, got {got}"


def expect(condition: bool, rule: str, detail: str) -> None:
    assert condition, f"[{rule}] {detail}"


def expect_equal(actual: Any, expected: Any, rule: str, what: str) -> None:
    assert actual == expected, f"[{rule}] {what}: expected {expected!r}, got {actual!r}"
