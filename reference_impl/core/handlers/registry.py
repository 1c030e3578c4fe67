"""The handler registry: which APIs and versions this broker implements.

Each handler module declares its API key and version range next to its code
with :func:`handles`; ApiVersions is derived from this table, so nothing is
advertised that has no handler, and a second registration of a key is an
error at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from kio.static.protocol import ResponsePayload

from reference_impl.log.api import FileRegion
from reference_impl.protocol.apis import api_name, schema_versions

if TYPE_CHECKING:
    from ..purgatory import DelayedOperation
    from ..request_context import RequestContext
    from .host import HandlerHost


Splices: TypeAlias = dict[bytes, tuple[tuple[FileRegion, ...], int]]


@dataclass(frozen=True, slots=True)
class Respond:
    body: ResponsePayload
    splices: Splices | None = None
    """Placeholder tokens in ``body`` to replace by file regions (the zero-copy fetch path)."""


@dataclass(frozen=True, slots=True)
class NoResponse:
    """acks=0 produce: the client expects nothing back."""


@dataclass(frozen=True, slots=True)
class Deferred:
    """The response comes later, when ``op`` completes (it calls ``ctx.respond``)."""

    op: DelayedOperation
    keys: tuple[object, ...]


Reply: TypeAlias = Respond | NoResponse | Deferred
HandlerFn: TypeAlias = Callable[["HandlerHost", "RequestContext", Any], Reply]


@dataclass(frozen=True, slots=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    fn: HandlerFn

    @property
    def name(self) -> str:
        return api_name(self.api_key)

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


HANDLERS: dict[int, Handler] = {}


def handles(api_key: int, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    """Register ``fn`` for ``api_key`` versions ``min_version..max_version`` (kio must know them all)."""
    known = schema_versions(api_key)
    if min_version < known.start or max_version >= known.stop:
        raise ValueError(
            f"{api_name(api_key)} v{min_version}-{max_version} is outside kio's "
            f"v{known.start}-{known.stop - 1}"
        )

    def register(fn: HandlerFn) -> HandlerFn:
        if api_key in HANDLERS:
            raise ValueError(f"{api_name(api_key)} registered twice")
        HANDLERS[api_key] = Handler(api_key, min_version, max_version, fn)
        return fn

    return register
