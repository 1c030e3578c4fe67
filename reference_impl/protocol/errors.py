"""Kafka error codes, from kio's generated enum (Kafka's ``Errors`` table).

Every failure a client can see is one of these; handlers never invent codes.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "KafkaError"]


class KafkaError(Exception):
    """An error that maps onto a Kafka error code, raised inside the cores and
    turned into that code in a response by the handler that catches it."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message or None
