"""A secured one-broker reference for the command tests of a module, skipped when it cannot start."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.targets import Target, TargetUnavailableError, launch


def secured_reference(security: str) -> Iterator[Target]:
    """Yield a reference launched with ``--security security``; closed afterwards."""
    try:
        target = launch("reference", security=security)
    except TargetUnavailableError as exc:
        pytest.skip(f"secured reference unavailable: {exc}")
    try:
        yield target
    finally:
        target.close()
