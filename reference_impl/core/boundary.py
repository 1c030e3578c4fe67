"""Every type that crosses between the sans-IO broker and a shell (asyncio or simulator).

Inbound events are past tense (something happened); outbound effects are
imperative (do this). A :class:`Step` is what one call into the broker
returns: the effects to carry out, and when to call again at the latest.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_impl.log.api import FileRegion


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionOpened:
    connection_id: int
    client_host: str
    client_port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameReceived:
    """One whole request frame (size prefix removed)."""

    connection_id: int
    frame: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionClosed:
    connection_id: int


Event = ConnectionOpened | FrameReceived | ConnectionClosed


@dataclass(frozen=True, slots=True, kw_only=True)
class SendResponse:
    """Write these parts, in order, as one response frame (the size prefix is the first part)."""

    connection_id: int
    parts: tuple[bytes | FileRegion, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseConnection:
    connection_id: int
    reason: str


Effect = SendResponse | CloseConnection


@dataclass(frozen=True, slots=True)
class Step:
    effects: tuple[Effect, ...]
    next_wakeup_ms: int | None
    """Call :meth:`tick` at this time at the latest (None: only when an event arrives)."""
